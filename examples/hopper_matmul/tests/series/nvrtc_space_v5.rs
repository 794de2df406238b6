//! The v5 search space through the whole compiler, NVRTC included (no GPU needed): all 24
//! configurations (every block tile, rings of three and four stages, registers moved or not,
//! tiles row by row and in groups of eight rows) compile without spills or a stack frame, with
//! at most 255 registers, within the shared memory a block has and with WGMMA in the PTX the
//! cubin came from; none is rejected.

use hopper_matmul::v5::MatmulCooperative;
use tilus::tune::Tunable;

#[test]
fn every_config_of_the_v5_space_compiles_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let space: Vec<MatmulCooperative> = <MatmulCooperative as Tunable>::space()
        .bindings()
        .iter()
        .map(|b| MatmulCooperative::from_binding(b).unwrap())
        .collect();
    assert_eq!(space.len(), 24);
    for config in space {
        // none is rejected: each warp group's half of every tile fits the register file
        let c = tilus::build(&config, &[4096, 4096]).unwrap_or_else(|e| panic!("{config:?}: {e}"));
        assert_eq!(c.report.spill_stores, 0, "{config:?}: {:?}", c.report);
        assert_eq!(c.report.stack_frame, 0, "{config:?}: {:?}", c.report);
        assert!(
            c.report.registers > 0 && c.report.registers <= 255,
            "{config:?}: {:?}",
            c.report
        );
        assert!(c.plan.smem_bytes <= 227 * 1024, "{config:?}");
        assert!(
            c.source.contains("wgmma.mma_async.sync.aligned.m64n"),
            "{config:?}"
        );
    }
}
