//! Warp-group products (`wgmma`): exact with A from shared memory or registers and with an
//! f16 accumulator; asynchronous operands and accumulators used before their waits are
//! faults.

use crate::common::inputs::matmul_inputs;
use crate::common::interp::{assert_noted, expect_fault, fault, plan_unverified, run, run_planned};
use crate::common::scripts::copy_in;
use crate::common::scripts::windows::WgmmaWindows;
use crate::common::staged::StagedMatmul;
use crate::common::{line_of, mark};
use tilus::interp::{Fault, InterpValue};
use tilus::prelude::*;
use tilus::Error;

/// What a [`WgmmaTile`] run plants.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
struct WgmmaBugs {
    /// Skip the mbarrier wait before the wgmma.
    no_tma_wait: bool,
    /// Wait for the wgmma only after the K loop.
    wait_after_loop: bool,
}

/// `c[64, 64] = a[64, 64] @ b[64, 64]ᵀ` (f16 in, f32 out) with wgmma, two K steps of 32
/// (64-byte rows: the 64B swizzle), A from shared memory or from registers. Marked calls:
/// `tma_a`, `mma`, `store`.
#[derive(Clone, Debug, Hash)]
struct WgmmaTile {
    reg_a: bool,
    bugs: WgmmaBugs,
}

impl Script for WgmmaTile {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 32]);
        let sb = k.shared_tensor::<f16>([64, 32]);
        let bar = k.mbarrier().alloc([1]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        let phase = k.var_u32(0u32);
        k.for_range(0, 64, 32, |k, ok| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                #[rustfmt::skip]
                mark("tma_a", line!(), k.tma().global_to_shared(&ga, &sa, [Val::constant(0), ok], bar[0]));
                k.tma()
                    .global_to_shared(&gb, &sb, [Val::constant(0), ok], bar[0]);
            });
            if !self.bugs.no_tma_wait {
                k.mbarrier().wait(bar[0], phase);
            }
            k.wgmma().fence();
            if self.reg_a {
                let ra = k.load_shared(&sa);
                #[rustfmt::skip]
                mark("mma", line!(), k.wgmma().mma(&ra, &sb.transpose(), &acc));
            } else {
                #[rustfmt::skip]
                mark("mma", line!(), k.wgmma().mma(&sa, &sb.transpose(), &acc));
            }
            k.wgmma().commit_group();
            if !self.bugs.wait_after_loop {
                k.wgmma().wait_group(0);
            }
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        if self.bugs.wait_after_loop {
            k.wgmma().wait_group(0);
        }
        let gc = k.global_view(c, [64, 64]);
        #[rustfmt::skip]
        mark("store", line!(), k.store_global(&gc, &acc, [0, 0]));
    }
}

fn wgmma_inputs() -> (Vec<f16>, Vec<f16>) {
    matmul_inputs(64, 64, 64)
}

/// Runs a planned program that skipped the verifier on `(a, b)` into `c_len` f32 outputs.
fn run_unverified(
    (program, plan): &(tilus::ir::Program, tilus::ir::LaunchPlan),
    (a, b): (&[f16], &[f16]),
    c_len: usize,
) -> tilus::Result<tilus::interp::Report> {
    let mut c = vec![f32::NAN; c_len];
    let mut args = vec![
        InterpValue::buffer(a),
        InterpValue::buffer(b),
        InterpValue::buffer_mut(&mut c),
    ];
    run_planned(program, plan, &mut args)
}

fn run_wgmma(script: &WgmmaTile) -> tilus::Result<Vec<f32>> {
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    let report = run(script, (&a[..], &b[..], &mut c[..]))?;
    // one 64 x 64 x 64 product: four m64n64k16 instructions, as the report counts them
    assert_eq!(report.mma_instructions, 4, "{script:?}");
    Ok(c)
}

#[test]
fn wgmma_products_are_exact_with_a_from_shared_memory_or_registers() {
    let (a, b) = wgmma_inputs();
    for reg_a in [false, true] {
        let c = run_wgmma(&WgmmaTile {
            reg_a,
            bugs: WgmmaBugs::default(),
        })
        .unwrap();
        for i in 0..64 {
            for j in 0..64 {
                let want: f32 = (0..64)
                    .map(|x| a[i * 64 + x].to_f32() * b[j * 64 + x].to_f32())
                    .sum();
                assert_eq!(c[i * 64 + j], want, "reg_a={reg_a} ({i}, {j})");
            }
        }
    }
}

/// `c[64, 64] = a[64, 64] @ b[64, 64]ᵀ` with an f16 accumulator, widened to f32 to store.
#[derive(Clone, Debug, Hash)]
struct WgmmaF16Acc;

impl Script for WgmmaF16Acc {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let acc = k.register_tensor::<f16>([64, 64], 0.0);
        copy_in(k, &[(&ga, &sa), (&gb, &sb)]);
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let wide = k.cast::<f32>(&acc);
        let gc = k.global_view(c, [64, 64]);
        k.store_global(&gc, &wide, [0, 0]);
    }
}

#[test]
fn an_f16_accumulator_is_exact_on_small_integers_and_widens_exactly() {
    // partial sums stay below 8 in steps of 1/256: exact in f16
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    run(&WgmmaF16Acc, (&a[..], &b[..], &mut c[..])).unwrap();
    for i in 0..64 {
        for j in 0..64 {
            let want: f32 = (0..64)
                .map(|x| a[i * 64 + x].to_f32() * b[j * 64 + x].to_f32())
                .sum();
            assert_eq!(c[i * 64 + j], want, "({i}, {j})");
        }
    }
}

// ------------------------------------------------------------------------------------------
// Asynchronous operands and accumulators.
// ------------------------------------------------------------------------------------------

#[test]
fn a_wgmma_on_a_tile_whose_copy_is_in_flight_is_a_read_before_wait() {
    let bugs = WgmmaBugs {
        no_tma_wait: true,
        ..WgmmaBugs::default()
    };
    for reg_a in [false, true] {
        let r = run_wgmma(&WgmmaTile { reg_a, bugs }).map(|_| ());
        let key = "mma";
        let (f, d) = fault(r);
        assert_eq!(f, Fault::ReadBeforeWait, "{d:#?}");
        // with A in registers, load_shared is the first to read the tile
        assert!(d[0].message.contains("still in flight"), "{}", d[0]);
        if !reg_a {
            assert_eq!(d[0].loc.line, line_of(key), "{}", d[0]);
            assert!(d[0].message.starts_with("wgmma.mma reads"), "{}", d[0]);
        }
    }
}

#[test]
fn a_copy_into_a_tile_an_unfinished_wgmma_reads_is_an_overwrite_before_wait() {
    let bugs = WgmmaBugs {
        wait_after_loop: true,
        ..WgmmaBugs::default()
    };
    let script = WgmmaTile { reg_a: false, bugs };
    // the verifier sees it statically ...
    match run_wgmma(&script) {
        Err(Error::Script(d)) => assert!(
            d.iter()
                .any(|d| d.message.contains("is written while the wgmma at")
                    && d.loc.line == line_of("tma_a")),
            "{d:#?}"
        ),
        other => panic!("expected the verifier to reject the script, got {other:?}"),
    }
    // ... and the interpreter at run time
    let (program, plan) = plan_unverified(&script);
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    let mut args = vec![
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    let r = run_planned(&program, &plan, &mut args);
    let d = expect_fault(
        r,
        Fault::OverwriteBeforeWait,
        "tma_a",
        &[
            "overwrites shared tensor `s0`",
            "wgmma that reads it is unfinished",
        ],
    );
    assert_noted(&d, "mma");
}

#[test]
fn using_the_accumulator_before_wait_group_is_a_read_before_wait() {
    // the verifier rejects this statically; the test removes the wait from the planned program
    let script = WgmmaTile {
        reg_a: false,
        bugs: WgmmaBugs {
            wait_after_loop: true,
            ..WgmmaBugs::default()
        },
    };
    // one K step only, so that no copy overwrites an operand first
    let (mut program, plan) = plan_unverified(&script);
    program.body.retain(|s| {
        !matches!(
            s.kind,
            tilus::ir::StmtKind::Inst(tilus::ir::Inst::Wgmma(tilus::ir::WgmmaInst::Wait(_)))
        )
    });
    for s in program.body.iter_mut() {
        if let tilus::ir::StmtKind::For { end, .. } = &mut s.kind {
            *end = tilus::ir::Expr::i32(32);
        }
    }
    let (a, b) = wgmma_inputs();
    let r = run_unverified(&(program, plan), (&a, &b), 64 * 64);
    let d = expect_fault(
        r,
        Fault::ReadBeforeWait,
        "store",
        &["store_global uses accumulator `r0`", "wgmma.wait_group"],
    );
    assert_noted(&d, "mma");
}

// ------------------------------------------------------------------------------------------
// Staged operands (`sa.at(s)`): a double-buffered pipeline whose copies fill one stage while
// the wgmma in flight reads the other; refilling the stage it reads is an overwrite.
// ------------------------------------------------------------------------------------------

#[test]
fn a_double_buffered_wgmma_pipeline_is_exact() {
    let seed = crate::common::inputs::fresh_seed();
    for k_tiles in [1, 2, 5] {
        let (a, b) = StagedMatmul::inputs(k_tiles, seed + k_tiles as u64);
        let mut c = vec![f32::NAN; 64 * 64];
        let script = StagedMatmul {
            k_tiles,
            refill_busy_stage: false,
        };
        let rep = run(&script, (&a[..], &b[..], &mut c[..]))
            .unwrap_or_else(|e| panic!("{k_tiles} K steps: {e}"));
        assert_eq!(
            c,
            StagedMatmul::expected(&a, &b, k_tiles),
            "{k_tiles} K steps"
        );
        assert_eq!(rep.tma_copies, 2 * k_tiles as u64);
    }
}

#[test]
fn refilling_the_stage_a_wgmma_reads_is_an_overwrite_before_wait() {
    let script = StagedMatmul {
        k_tiles: 3,
        refill_busy_stage: true,
    };
    let (a, b) = StagedMatmul::inputs(3, 11);
    let mut c = vec![f32::NAN; 64 * 64];
    // the verifier sees it too (the same stage variable); planned without it here
    let (program, plan) = plan_unverified(&script);
    let mut args = vec![
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    let d = expect_fault(
        run_planned(&program, &plan, &mut args),
        Fault::OverwriteBeforeWait,
        "refill",
        &["overwrites shared tensor `s0[0]` while a wgmma that reads it is unfinished"],
    );
    assert_noted(&d, "mma");
}

// ------------------------------------------------------------------------------------------
// Warp specialization: a producer thread refills the stages the consumer warp group frees.
// Freeing a stage before the wgmma that reads it completes is caught whatever the consumers
// do next: the arrival that completes the phase lets the producer run before they go on, so
// its copy meets the product still in flight, even when their very next call would retire it.
// ------------------------------------------------------------------------------------------

/// [`StagedMatmul`]'s product, warp-specialized: thread 128 (warp 4) copies step `t` into stage
/// `t % 2` once the stage is empty; warp group 0 multiplies it once it is full, waits for the
/// product, then frees the stage (128 arrivals). With `second_group`, the roles swap places:
/// warp 0 copies and warp group 1 (warps 4 to 7) multiplies. Marked calls: `refill`, `mma`,
/// `release`.
#[derive(Clone, Debug, Hash)]
struct SpecializedMatmul {
    k_tiles: i32,
    /// Planted bug: free the stage between `commit_group` and `wait_group(0)`.
    release_before_wait: bool,
    second_group: bool,
}

impl Script for SpecializedMatmul {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        let (mn, bk, tiles) = (StagedMatmul::MN, StagedMatmul::BK, self.k_tiles);
        let (producer, consumer) = if self.second_group { (0, 4) } else { (4, 0) };
        k.blocks([1]);
        k.warps(if self.second_group { 8 } else { 5 });
        let ga = k.global_view::<f16>(a, [mn, bk * tiles]);
        let gb = k.global_view::<f16>(b, [mn, bk * tiles]);
        let sa = k.shared_tensor::<f16>([2, mn, bk]);
        let sb = k.shared_tensor::<f16>([2, mn, bk]);
        let full = k.mbarrier().alloc([1, 1]);
        let empty = k.mbarrier().alloc([128, 128]);
        k.single_warp(producer, |k| {
            k.single_thread(|k| {
                k.for_range(0, tiles, 1, |k, t| {
                    let s = k.name_next("stage").let_i32(t % 2);
                    k.mbarrier().wait(empty.at(s), (t / 2 + 1) % 2);
                    let (sa, sb, bar) = (sa.at(s), sb.at(s), full.at(s));
                    k.mbarrier()
                        .arrive_and_expect_tx(bar, sa.nbytes() + sb.nbytes());
                    let off = k.let_i32(t * bk);
                    #[rustfmt::skip]
                    mark("refill", line!(), k.tma().global_to_shared(&ga, &sa, [Val::constant(0), off], bar));
                    k.tma()
                        .global_to_shared(&gb, &sb, [Val::constant(0), off], bar);
                });
            });
        });
        k.warp_group(consumer, |k| {
            let acc = k.register_tensor::<f32>([mn, mn], 0.0);
            k.for_range(0, tiles, 1, |k, t| {
                let s = k.name_next("stage").let_i32(t % 2);
                k.mbarrier().wait(full.at(s), t / 2 % 2);
                k.wgmma().fence();
                #[rustfmt::skip]
                mark("mma", line!(), k.wgmma().mma(&sa.at(s), &sb.at(s).transpose(), &acc));
                k.wgmma().commit_group();
                if self.release_before_wait {
                    #[rustfmt::skip]
                    mark("release", line!(), k.mbarrier().arrive(empty.at(s)));
                    k.wgmma().wait_group(0);
                } else {
                    k.wgmma().wait_group(0);
                    k.mbarrier().arrive(empty.at(s));
                }
            });
            let gc = k.global_view::<f32>(c, [mn, mn]);
            k.store_global(&gc, &acc, [0, 0]);
        });
    }
}

#[test]
fn a_warp_specialized_wgmma_pipeline_is_exact() {
    let seed = crate::common::inputs::fresh_seed();
    for k_tiles in [1, 2, 5] {
        let (a, b) = StagedMatmul::inputs(k_tiles, seed + k_tiles as u64);
        let mut c = vec![f32::NAN; 64 * 64];
        let script = SpecializedMatmul {
            k_tiles,
            release_before_wait: false,
            second_group: k_tiles == 2,
        };
        run(&script, (&a[..], &b[..], &mut c[..]))
            .unwrap_or_else(|e| panic!("{k_tiles} K steps: {e}"));
        let want = StagedMatmul::expected(&a, &b, k_tiles);
        assert_eq!(c, want, "{k_tiles} K steps");
    }
}

/// The same bug in warp group 1: the fault names its threads.
#[test]
fn freeing_a_stage_early_in_the_second_warp_group_names_its_threads() {
    let (a, b) = StagedMatmul::inputs(4, 13);
    let mut c = vec![f32::NAN; 64 * 64];
    let script = SpecializedMatmul {
        k_tiles: 4,
        release_before_wait: true,
        second_group: true,
    };
    expect_fault(
        run(&script, (&a[..], &b[..], &mut c[..])),
        Fault::OverwriteBeforeWait,
        "refill",
        &["threads 128-255 issued it and must wgmma.wait_group"],
    );
}

#[test]
fn freeing_a_stage_before_its_wgmma_completes_lets_the_producer_overwrite_it() {
    let (a, b) = StagedMatmul::inputs(4, 12);
    let mut c = vec![f32::NAN; 64 * 64];
    let script = SpecializedMatmul {
        k_tiles: 4,
        release_before_wait: true,
        second_group: false,
    };
    let d = expect_fault(
        run(&script, (&a[..], &b[..], &mut c[..])),
        Fault::OverwriteBeforeWait,
        "refill",
        &[
            "tma.global_to_shared overwrites shared tensor `s0[0]` while a wgmma that reads it \
             is unfinished",
            "threads 0-127 issued it and must wgmma.wait_group",
        ],
    );
    assert_noted(&d, "mma");
    assert_noted(&d, "release");
    assert!(
        d.iter().any(|x| x
            .message
            .contains("arrived on barrier `bar1[0]` here while the wgmma was unfinished")),
        "{d:#?}"
    );
}

// ------------------------------------------------------------------------------------------
// Windows of the accumulator.

#[test]
fn windows_of_the_accumulator_overwrite_or_add_to_their_columns_only() {
    let (a, b) = matmul_inputs(64, 128, 64);
    for swapped in [false, true] {
        let s = WgmmaWindows {
            early: false,
            swapped,
        };
        let mut c = vec![f32::NAN; 64 * 128];
        run(&s, (&a[..], &b[..], &mut c[..])).unwrap();
        // small multiples of 1/16: every sum is exact in f32
        for (i, (got, want)) in c.iter().zip(s.expect(&a, &b)).enumerate() {
            assert_eq!(*got as f64, want, "{s:?}: element {i}");
        }
    }
}

#[test]
fn reading_a_window_in_flight_is_a_read_before_wait() {
    // the verifier rejects this statically; the planned program runs unverified
    let (program, plan) = plan_unverified(&WgmmaWindows {
        early: true,
        swapped: false,
    });
    let (a, b) = matmul_inputs(64, 128, 64);
    let r = run_unverified(&(program, plan), (&a, &b), 64 * 128);
    let d = expect_fault(
        r,
        Fault::ReadBeforeWait,
        "read",
        &["slice uses accumulator `", "wgmma.wait_group"],
    );
    assert_noted(&d, "mma");
}

// ------------------------------------------------------------------------------------------
// operand orders: MN-major A and B (the transpose bits, tiles in column blocks) from batched
// strided views whose TMA boxes leave the batch out, exact against an f64 product.
// ------------------------------------------------------------------------------------------

use crate::common::inputs::random_f16;
use crate::common::scripts::orders::{OperandOrders, BATCH, M, N};

fn run_orders(script: &OperandOrders, seed: u64) -> (Vec<f32>, Vec<f64>) {
    let a = random_f16(OperandOrders::len(), seed);
    let b = random_f16(OperandOrders::len(), seed + 1);
    let mut c = vec![f32::NAN; BATCH * M * N];
    run(script, (&a[..], &b[..], &mut c[..])).unwrap();
    (c, script.reference(&a, &b))
}

#[test]
fn products_take_either_operand_order_as_stored() {
    for (i, (mn_a, mn_b)) in [(false, false), (true, false), (false, true), (true, true)]
        .into_iter()
        .enumerate()
    {
        let script = OperandOrders { mn_a, mn_b };
        let (got, want) = run_orders(&script, 40 + i as u64);
        let mut worst = 0.0f64;
        for (g, w) in got.iter().zip(&want) {
            assert!(g.is_finite(), "{script:?}: {g}");
            worst = worst.max((*g as f64 - w).abs());
        }
        // f16 products of values below 1/8 are exact in f32; K = 128 f32 sums of them
        assert!(worst < 1e-5, "{script:?}: off by {worst}");
    }
}

#[test]
fn mn_major_tiles_are_stored_in_column_blocks() {
    let script = OperandOrders {
        mn_a: true,
        mn_b: true,
    };
    let (program, _) = crate::common::interp::plan_unverified(&script);
    let blocks: Vec<_> = program
        .shareds
        .iter()
        .filter_map(|s| s.layout.as_ref().map(|l| (s.shape.clone(), l.col_block)))
        .collect();
    // A [64, 128] and B [64, 128] as stored, each two blocks of 64 columns
    assert_eq!(
        blocks.iter().filter(|(_, cb)| *cb == Some(64)).count(),
        2,
        "{blocks:?}"
    );
}
