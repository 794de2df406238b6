//! The fused epilogue through the whole compiler, NVRTC included (no GPU needed): every
//! configuration of its search space whose D is staged in shared memory (`tma_store = 1`; one
//! tile order, which changes no buffer) compiles without spills and within the shared memory a
//! block has (its buffers take only the room the ring leaves), and where the ring leaves room (three stages of 128 × 256 tiles) each
//! warp group's buffers hold its whole share of a tile's D.

use tilus::tune::Tunable;
use tilus::Error;
use tilus_kernels::gemm::epilogue::{GeluTanh, MatmulEpilogue};
use tilus_kernels::gemm::persistent::MatmulPersistent;

#[test]
fn every_staged_config_of_the_gelu_epilogue_space_compiles_without_spills() {
    tilus_bench::test_cache!();
    let mut compiled = 0;
    for b in <MatmulEpilogue<GeluTanh> as Tunable>::space().bindings() {
        let config = MatmulEpilogue::<GeluTanh>::from_binding(&b).unwrap();
        if config.tile.tma_store == 0 || config.tile.group_m != 8 {
            continue;
        }
        match tilus::build(&config, &[4096, 4096]) {
            Ok(c) => {
                assert_eq!(c.report.spill_stores, 0, "{config:?}: {:?}", c.report);
                assert_eq!(c.report.stack_frame, 0, "{config:?}: {:?}", c.report);
                assert!(c.plan.smem_bytes <= 227 * 1024, "{config:?}");
                compiled += 1;
            }
            // the buffers take only the room the ring leaves: none is too large
            Err(Error::Script(d)) => panic!("{config:?}: {}", d[0].message),
            Err(e) => panic!("{config:?}: {e}"),
        }
    }
    assert!(compiled >= 15, "only {compiled} configurations compiled");
}

#[test]
fn three_stages_leave_room_for_a_whole_tile_of_d() {
    tilus_bench::test_cache!();
    let smem = |stages| {
        let config = MatmulEpilogue::<GeluTanh>::new(MatmulPersistent {
            stages,
            ..MatmulPersistent::default()
        });
        tilus::build(&config, &[4096, 4096])
            .unwrap()
            .plan
            .smem_bytes
    };
    // 128 x 256 tiles: a stage of A and B takes 48 KiB; a warp group's share of D 32 KiB
    let (stage, share) = (48 * 1024, 32 * 1024);
    let four = smem(4);
    assert!(
        four >= 4 * stage + 2 * 16 * 1024,
        "four stages: {four} bytes"
    );
    let three = smem(3);
    assert!(
        three >= 3 * stage + 2 * share,
        "three stages: {three} bytes"
    );
}
