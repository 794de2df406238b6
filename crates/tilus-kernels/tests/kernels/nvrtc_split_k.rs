//! Split-K through the whole compiler, NVRTC included (no GPU needed): the partial products'
//! whole search space (every tile width and ring depth, every split count), each also with the
//! sum left to the second kernel (`serial = 0`, a fixed choice outside the space), and the sum
//! for every split count of the space, compile without spills or a stack frame, with at most
//! 255 registers and within the shared memory a block has: in f16, and in bf16 (the whole
//! space; the two-kernel form on a covering sample, each tile width and split count once).

use tilus::Script;
use tilus_bench::spaces::{assert_clean, configs};
use tilus_kernels::gemm::operand::Bf16;
use tilus_kernels::gemm::split_k::{MatmulSplitK, SplitKReduce};

/// Builds `script` with constants `consts`: no spills, no stack frame, registers and shared
/// memory within a block's.
fn compiles_without_spills<S: Script>(script: &S, consts: &[i64]) {
    let c = tilus::build(script, consts).unwrap_or_else(|e| panic!("{script:?}: {e}"));
    assert_clean(script, &c);
}

/// The partials' space: 16 configurations, each summing in the same kernel.
fn space() -> Vec<MatmulSplitK> {
    let configs = configs::<MatmulSplitK>();
    assert_eq!(configs.len(), 16);
    assert!(
        configs.iter().all(|c| c.serial == 1),
        "the space sums in one kernel"
    );
    configs
}

/// `config` with the sum left to the second kernel.
fn unsummed(config: &MatmulSplitK) -> MatmulSplitK {
    MatmulSplitK {
        serial: 0,
        ..config.clone()
    }
}

#[test]
fn every_config_of_the_split_k_space_compiles_without_spills() {
    tilus_bench::test_cache!();
    let configs = space();
    for config in configs
        .iter()
        .chain(&configs.iter().map(unsummed).collect::<Vec<_>>())
    {
        compiles_without_spills(config, &[4096, 4096]);
    }
    for splits in [2, 4, 8, 16] {
        compiles_without_spills(&SplitKReduce, &[4096, splits]);
    }
}

#[test]
fn every_config_of_the_split_k_space_compiles_without_spills_in_bf16() {
    tilus_bench::test_cache!();
    let configs = space();
    for config in &configs {
        compiles_without_spills(&Bf16(config.clone()), &[4096, 4096]);
    }
    // the two-kernel form: each (block_n, stages) with a split count of its own, which
    // takes each split count once
    let sample: Vec<MatmulSplitK> = configs
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 5 == 0)
        .map(|(_, c)| unsummed(c))
        .collect();
    for config in &sample {
        compiles_without_spills(&Bf16(config.clone()), &[4096, 4096]);
    }
    for splits in [2, 4, 8, 16] {
        compiles_without_spills(&Bf16(SplitKReduce), &[4096, splits]);
    }
}

/// The second kernel of the two-kernel form reads what the first just wrote: it waits for
/// the grid before it as its first statement, and says so to the launch (which may then
/// launch it as that grid's programmatic dependent); the partials' kernel, launched after
/// whatever came before, does not wait (it lets the sum be scheduled early instead).
#[test]
fn the_sum_of_the_partials_waits_for_the_partials_kernel_first() {
    tilus_bench::test_cache!();
    for c in [
        tilus::build(&SplitKReduce, &[4096, 4]).unwrap(),
        tilus::build(&Bf16(SplitKReduce), &[4096, 4]).unwrap(),
    ] {
        assert!(c.plan.waits_for_prior_grid);
        let first = tilus_bench::testing::first_statement(&c.source);
        assert_eq!(
            first,
            Some(r#"asm volatile("griddepcontrol.wait;" ::: "memory");"#),
            "{}",
            c.source
        );
    }
    let partials = tilus::build(&space()[0], &[4096, 4096]).unwrap();
    assert!(!partials.plan.waits_for_prior_grid);
    assert!(!partials.source.contains("griddepcontrol.wait"));
    // and lets the sum be scheduled from its blocks' start
    assert_eq!(
        tilus_bench::testing::first_statement(&partials.source),
        Some(r#"asm volatile("griddepcontrol.launch_dependents;" ::: "memory");"#)
    );
}
