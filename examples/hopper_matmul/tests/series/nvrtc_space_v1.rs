//! The v1 search space through the whole compiler, NVRTC included (no GPU needed): the nine
//! configurations whose accumulator fits compile without spills and with WGMMA in the PTX the
//! cubin came from; 128x256 is rejected by the verifier with the register budget as the reason.

use hopper_matmul::v1::MatmulWgmma;
use tilus::Error;

#[test]
fn every_config_of_the_v1_space_compiles_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let mut compiled = vec![];
    for config in MatmulWgmma::configs() {
        match tilus::build(&config, &[4096, 4096]) {
            Ok(c) => {
                assert_eq!(c.report.spill_stores, 0, "{config:?}: {:?}", c.report);
                assert!(
                    c.report.registers <= 255 && c.report.stack_frame == 0,
                    "{config:?}: {:?}",
                    c.report
                );
                assert!(
                    c.source.contains("wgmma.mma_async.sync.aligned.m64n"),
                    "{config:?}"
                );
                assert!(
                    !c.source.contains("mma.sync.aligned.m16n8k16"),
                    "{config:?}: no mma.sync left"
                );
                compiled.push((config.block_m, config.block_n, config.block_k));
            }
            Err(Error::Script(d)) => {
                assert!(
                    d[0].message.contains("registers per thread"),
                    "{config:?}: {}",
                    d[0].message
                );
                assert_eq!((config.block_m, config.block_n), (128, 256));
            }
            Err(e) => panic!("{config:?}: {e}"),
        }
    }
    assert_eq!(compiled.len(), 9, "{compiled:?}");
}

#[test]
fn generated_v1_uses_descriptors_and_no_register_staging() {
    tilus_bench::test_cache!();
    let s = tilus::emit(&MatmulWgmma::default(), &[4096, 4096]).unwrap();
    for needle in [
        "wgmma.fence.sync.aligned",
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned",
        "tilus_wgmma_desc(sa, 0x4000004000010000ull)", // SBO 1024 B, 128B swizzle
        "tilus_wgmma_desc(sb, 0x4000004000010000ull)",
        "cp.async.bulk.tensor.2d",
    ] {
        assert!(s.contains(needle), "missing `{needle}`");
    }
    assert!(
        !s.contains("ldmatrix"),
        "v1 does not stage operands through registers"
    );
}
