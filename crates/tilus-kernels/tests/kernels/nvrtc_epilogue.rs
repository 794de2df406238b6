//! The fused epilogue (f16 only) through the whole compiler, NVRTC included (no GPU needed):
//! every configuration of its search space whose D is staged in shared memory (`tma_store = 1`;
//! one tile order, which changes no buffer) compiles without spills and within the shared
//! memory a block has (its buffers take only the room the ring leaves); a covering sample of
//! the whole space (D stored from registers too) does for the GELU, two configurations for the
//! identity and ReLU; and where the ring leaves room (three stages of 128 × 256 tiles) each
//! warp group's buffers hold its whole share of a tile's D.

use tilus::tune::{Binding, Tunable};
use tilus::Error;
use tilus_kernels::gemm::epilogue::{Activation, GeluTanh, Identity, MatmulEpilogue, Relu};
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
                assert_eq!(
                    c.report.serialized_wgmma, None,
                    "{config:?}: {:?}",
                    c.report
                );
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

/// `MatmulEpilogue<A>` built from each of `bindings` at 4096 × 4096: without spills or a
/// stack frame, at most 255 registers, within the shared memory a block has (none rejected).
fn compiles_without_spills<A: Activation>(bindings: &[Binding]) {
    for b in bindings {
        let config = MatmulEpilogue::<A>::from_binding(b).unwrap();
        let c = tilus::build(&config, &[4096, 4096]).unwrap_or_else(|e| panic!("{config:?}: {e}"));
        assert_eq!(c.report.spill_stores, 0, "{config:?}: {:?}", c.report);
        assert_eq!(
            c.report.serialized_wgmma, None,
            "{config:?}: {:?}",
            c.report
        );
        assert_eq!(c.report.stack_frame, 0, "{config:?}: {:?}", c.report);
        assert!(c.report.registers <= 255, "{config:?}: {:?}", c.report);
        assert!(c.plan.smem_bytes <= 227 * 1024, "{config:?}");
    }
}

/// The rest of the space, on a covering sample: every seventh configuration (14 of 96: both
/// epilogues, D staged and stored from registers, every tile, ring depth, order and cluster
/// shape: checked) with the GELU, and the identity and ReLU on two (cooperative with D staged,
/// ping-pong storing from registers).
#[test]
fn a_covering_sample_of_the_space_compiles_without_spills_for_every_activation() {
    tilus_bench::test_cache!();
    let space = <MatmulEpilogue<GeluTanh> as Tunable>::space().bindings();
    let sample = tilus_bench::spaces::covering_sample::<MatmulEpilogue<GeluTanh>>(7);
    compiles_without_spills::<GeluTanh>(&sample);
    // the first cooperative configuration with D staged, the first ping-pong one storing
    // from registers
    let pick = |ping_pong, tma_store| {
        space
            .iter()
            .find(|b| {
                b.get("ping_pong") == Some(ping_pong) && b.get("tma_store") == Some(tma_store)
            })
            .cloned()
            .unwrap()
    };
    let both = [pick(0, 1), pick(1, 0)];
    compiles_without_spills::<Identity>(&both);
    compiles_without_spills::<Relu>(&both);
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
