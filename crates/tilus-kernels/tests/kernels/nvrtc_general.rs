//! The general GEMM through the whole compiler, NVRTC included (no GPU needed): every form
//! (orders, scaling, operands copied by TMA or loaded by the producer's threads, C stored by
//! TMA or from registers) of every configuration of its search space compiles without
//! spilling, or is rejected for the shared memory it would need, in f16; in bf16 a covering
//! sample of the configurations and of the forms does, and the staging copy compiles in both.

use tilus::tune::Tunable;
use tilus::Error;
use tilus_kernels::gemm::general::{Form, MatmulGeneral};
use tilus_kernels::gemm::operand::Bf16;
use tilus_kernels::gemm::persistent::MatmulPersistent;

/// The forms compiled: every order with everything aligned and unaligned, and mixes.
fn forms() -> Vec<Form> {
    let mut out = vec![];
    for (a_col_major, b_col_major) in [(false, true), (false, false), (true, true), (true, false)] {
        for aligned in [true, false] {
            out.push(Form {
                a_col_major,
                b_col_major,
                scaled: !aligned,
                c_tma: aligned,
                a_tma: aligned,
                b_tma: aligned,
            });
        }
    }
    out.push(Form {
        a_tma: true,
        c_tma: true,
        ..Form::default()
    });
    out.push(Form {
        b_tma: true,
        scaled: true,
        ..Form::default()
    });
    out
}

/// Aligned forms: no configuration spills (as v6). Forms whose producer loads an operand
/// (its threads need 104 registers, the consumers keep 200): the cooperative 128 × 128
/// configurations compile without spills, so the autotuner (which skips configurations that
/// spill) always has candidates; wider tiles and ping-pong may spill and are skipped.
#[test]
fn every_form_of_every_config_compiles_without_spills() {
    tilus_bench::test_cache!();
    let mut compiled = 0;
    let mut spilled = vec![];
    let space = <MatmulGeneral as Tunable>::space().bindings();
    for (i, form) in forms().into_iter().enumerate() {
        let loaded = !(form.a_tma && form.b_tma);
        // every configuration for the first form; a spread of them for the others, and
        // the cooperative 128 × 128 ones (group_m 8, TMA stores) where an operand is loaded
        let square = |b: &tilus::tune::Binding| {
            [("block_m", 128), ("block_n", 128), ("ping_pong", 0)]
                .iter()
                .all(|&(n, v)| b.get(n) == Some(v))
        };
        let picked = space.iter().enumerate().filter(|(j, b)| {
            let tuned = b.get("group_m") == Some(8) && b.get("tma_store") == Some(1);
            i == 0 || j % 13 == i % 13 || (loaded && square(b) && tuned)
        });
        for (_, b) in picked {
            let config = MatmulGeneral::from_binding(b).unwrap();
            let square = square(b);
            match tilus::build(&config, &[4096, 4095, form.bits() as i64]) {
                Ok(c) => {
                    let spills = c.report.spill_stores > 0 || c.report.stack_frame > 0;
                    if spills && (!loaded || square) {
                        spilled.push(format!("{b} {form:?}: {:?}", c.report));
                    }
                    compiled += 1;
                }
                Err(Error::Script(d)) => {
                    let msg = &d[0].message;
                    assert!(msg.contains("bytes of shared memory"), "{config:?}: {msg}");
                }
                Err(e) => panic!("{config:?} {form:?}: {e}"),
            }
        }
    }
    assert!(spilled.is_empty(), "spills: {spilled:#?}");
    assert!(compiled >= 50, "only {compiled} configurations compiled");
}

/// In bf16, a covering sample: every seventh configuration of the space (6 of 40, every
/// value of every hyperparameter: checked) in the first form (A row-major, B K-major, both
/// copied by TMA, C stored by TMA), and each order with its operands loaded by the producer's
/// threads, scaled and stored from registers, on the cooperative 128 × 128 tile: each compiles
/// without spills or a stack frame, with at most 255 registers (none is rejected).
#[test]
fn a_covering_sample_of_the_forms_and_configs_compiles_without_spills_in_bf16() {
    tilus_bench::test_cache!();
    let sample = tilus_bench::spaces::covering_sample::<MatmulGeneral>(7);
    let forms = forms();
    let square = MatmulGeneral {
        tile: MatmulPersistent {
            block_m: 128,
            block_n: 128,
            ..MatmulPersistent::default()
        },
    };
    let mut builds: Vec<(MatmulGeneral, Form)> = sample
        .iter()
        .map(|b| (MatmulGeneral::from_binding(b).unwrap(), forms[0]))
        .collect();
    builds.extend(
        forms
            .iter()
            .filter(|f| !(f.a_tma && f.b_tma))
            .take(4)
            .map(|&f| (square.clone(), f)),
    );
    // none is rejected: every tile of the space fits with its shared memory
    for (config, form) in builds {
        let script = Bf16(config);
        let c = tilus::build(&script, &[4096, 4095, form.bits() as i64])
            .unwrap_or_else(|e| panic!("{script:?} {form:?}: {e}"));
        let what = format!("{script:?} {form:?}: {:?}", c.report);
        assert_eq!(c.report.spill_stores, 0, "{what}");
        assert_eq!(c.report.serialized_wgmma, None, "{what}");
        assert_eq!(c.report.stack_frame, 0, "{what}");
        assert!(c.report.registers <= 255, "{what}");
    }
}

/// The staging copy compiles once for every shape (no compile-time constant) and stores 16
/// bytes at a time (its rows are a multiple of 8 elements, which the code can see), in f16 and
/// in bf16.
#[test]
fn the_staging_copy_stores_whole_vectors() {
    tilus_bench::test_cache!();
    use tilus_kernels::gemm::general::StageCopy;
    let f16 = tilus::build(&StageCopy, &[]).unwrap();
    let bf16 = tilus::build(&Bf16(StageCopy), &[]).unwrap();
    for c in [f16, bf16] {
        assert_eq!(c.report.spill_stores, 0, "{:?}", c.report);
        assert_eq!(c.report.serialized_wgmma, None, "{:?}", c.report);
        assert_eq!(c.report.stack_frame, 0, "{:?}", c.report);
        let stores: Vec<&str> = c
            .source
            .lines()
            .filter(|l| l.contains("tilus_vec<"))
            .collect();
        assert!(!stores.is_empty(), "{}", c.source);
    }
}
