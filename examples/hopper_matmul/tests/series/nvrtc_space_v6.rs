//! v6 through the whole compiler, NVRTC included (no GPU needed): every configuration of its
//! search space, and the pair forms beside it, compiles without spills or is rejected for the
//! shared memory it would need, in f16; in bf16 a covering sample of the space does (every
//! seventh of its 112 configurations: every value of every hyperparameter); the TMA-store
//! epilogue writes the accumulator to shared memory with `stmatrix`, four 8x8 matrices per
//! instruction, not one element at a time.

use hopper_matmul::v6::MatmulPersistent;
use tilus::tune::Tunable;
use tilus::Error;
use tilus_kernels::gemm::operand::Bf16;

/// The pair forms beside the space (in it with other tile shapes): along M, and along N
/// (`cluster_n`, not in the space) with the ring depths of the 128 × 128 and 128 × 256 forms.
fn pairs() -> [MatmulPersistent; 5] {
    [
        (128, 256, 3, 2, 1),
        (128, 128, 4, 2, 1),
        (128, 128, 6, 1, 2),
        (128, 128, 4, 1, 2),
        (128, 256, 4, 1, 2),
    ]
    .map(
        |(block_m, block_n, stages, cluster_m, cluster_n)| MatmulPersistent {
            block_m,
            block_n,
            stages,
            cluster_m,
            cluster_n,
            ..MatmulPersistent::default()
        },
    )
}

/// Builds every configuration at 4096 × 4096: each compiles without spills within the shared
/// memory a block has, or is rejected for the shared memory it would need. How many compiled.
fn compiled_without_spills<S: tilus::Script>(configs: impl Iterator<Item = S>) -> usize {
    let mut compiled = 0;
    for config in configs {
        match tilus::build(&config, &[4096, 4096]) {
            Ok(c) => {
                assert_eq!(c.report.spill_stores, 0, "{config:?}: {:?}", c.report);
                assert_eq!(c.report.stack_frame, 0, "{config:?}: {:?}", c.report);
                assert!(c.report.registers <= 255, "{config:?}: {:?}", c.report);
                assert!(c.plan.smem_bytes <= 227 * 1024, "{config:?}");
                compiled += 1;
            }
            Err(Error::Script(d)) => {
                let msg = &d[0].message;
                assert!(msg.contains("bytes of shared memory"), "{config:?}: {msg}");
            }
            Err(e) => panic!("{config:?}: {e}"),
        }
    }
    compiled
}

#[test]
fn every_config_of_the_v6_space_compiles_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let space = tilus_bench::spaces::configs::<MatmulPersistent>();
    let compiled = compiled_without_spills(space.into_iter().chain(pairs()));
    assert!(compiled >= 20, "only {compiled} configurations compiled");
}

/// Every seventh configuration of the space (16 of 112; the sample takes every value of every
/// hyperparameter: checked), and the pair forms, in bf16:
/// each compiles without spills.
#[test]
fn a_covering_sample_of_the_v6_space_compiles_in_bf16_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let sample = tilus_bench::spaces::covering_sample::<MatmulPersistent>(7);
    let configs = sample
        .iter()
        .map(|b| Bf16(MatmulPersistent::from_binding(b).unwrap()))
        .chain(pairs().map(Bf16));
    // none of the sample is rejected
    assert_eq!(
        compiled_without_spills(configs),
        sample.len() + pairs().len()
    );
}

#[test]
fn the_tma_store_epilogue_stores_the_accumulator_with_stmatrix() {
    let staged = tilus::emit(&MatmulPersistent::default(), &[4096, 4096]).unwrap();
    assert!(
        staged.contains("stmatrix.sync.aligned.m8n8.x4.shared.b16"),
        "the staging buffers are written with stmatrix"
    );
    assert!(
        staged.contains("tilus_stmatrix_x4(&"),
        "the helper is called from the epilogue"
    );
    assert!(
        !staged.contains("tilus_st_shared_u16("),
        "no element-by-element shared store is left"
    );
    let direct = MatmulPersistent {
        tma_store: 0,
        ..MatmulPersistent::default()
    };
    let src = tilus::emit(&direct, &[4096, 4096]).unwrap();
    assert!(
        !src.contains("tilus_stmatrix_x4(&"),
        "stores from registers go straight to global memory"
    );
}

#[test]
fn v6_on_bf16_compiles_to_bf16_products_without_spills() {
    tilus_bench::test_cache!();
    use tilus_kernels::gemm::operand::Bf16;
    let pair = MatmulPersistent {
        cluster_m: 2,
        ..MatmulPersistent::default()
    };
    for config in [MatmulPersistent::default(), pair] {
        let script = Bf16(config);
        let src = tilus::emit(&script, &[4096, 4096]).unwrap();
        assert!(src.contains(".bf16.bf16"), "bf16 WGMMA: {script:?}");
        assert!(
            !src.contains(".f16.f16"),
            "no f16 WGMMA is left: {script:?}"
        );
        assert!(
            src.contains("matmul_persistent_bf16"),
            "named apart from f16"
        );
        if script.0.cluster_m == 2 {
            assert!(
                src.contains("tilus_mbarrier_arrive_remote_after_reads("),
                "a pair frees its partner's stages without a cluster-scope release"
            );
            assert!(
                src.contains("(u32)(stage) * 32768u) + 16384u)"),
                "the second producer's half of B lands 128 rows (16 KiB) into the stage"
            );
        }
        let c = tilus::build(&script, &[4096, 4096]).unwrap();
        assert_eq!(c.report.spill_stores, 0, "{script:?}: {:?}", c.report);
    }
}

/// The searched space holds the stores deferred to the next tile's main loop (the held
/// result beside the accumulator compiles without spills: the test above); every cooperative
/// configuration and the pair forms also compile without spills storing each tile in its own
/// epilogue (`defer_stores = 0`, the ablation), and only the deferred form holds its result.
#[test]
fn stores_in_each_tiles_own_epilogue_compile_without_spills_too() {
    tilus_bench::test_cache!();
    let space: Vec<MatmulPersistent> = tilus_bench::spaces::configs::<MatmulPersistent>()
        .into_iter()
        .filter(|c| c.ping_pong == 0)
        .collect();
    assert!(space.iter().all(|c| c.defer_stores == 1));
    let undeferred = space
        .into_iter()
        .chain(pairs())
        .map(|config| MatmulPersistent {
            defer_stores: 0,
            ..config
        });
    let compiled = compiled_without_spills(undeferred);
    assert!(compiled >= 10, "only {compiled} configurations compiled");
    let emit = |defer_stores| {
        let config = MatmulPersistent {
            defer_stores,
            ..MatmulPersistent::default()
        };
        tilus::emit(&config, &[4096, 4096]).unwrap()
    };
    assert!(
        emit(1).contains("held <- assign_tile"),
        "the tile's result is held"
    );
    assert!(!emit(0).contains("held"), "nothing is held");
}
