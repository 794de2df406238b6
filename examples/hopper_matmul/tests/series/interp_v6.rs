//! v6 (a persistent grid) on the CPU interpreter against the f64 CPU reference. The
//! interpreter models a device of four multiprocessors, so each block walks several tiles and
//! the ring runs on across them (wrapping mid-tile where the steps per tile are not a
//! multiple of the stages); one block per tile as the ablation; ragged shapes.

use hopper_matmul::v6::MatmulPersistent;
use tilus_bench::checks::on_interpreter as check;
use tilus_kernels::gemm::operand::Bf16;

/// v6 with 128 × 128 tiles and three stages: persistent in groups of two tile rows with the
/// TMA-store epilogue, persistent in row order storing from registers, one block per tile
/// with the TMA-store epilogue, pairs sharing B (multicast), persistent and not, and tiles in
/// Hilbert order (squares of two tiles), alone and in pairs; then ping-pong (the warp groups
/// taking tiles in turn, 128-row tiles and 64-row ones): persistent with either epilogue,
/// one block per tile, in pairs; last, stores deferred to the next tile's main loop:
/// persistent with either epilogue, one block per tile (the only tile's result stored after
/// the loop), in pairs.
pub fn forms() -> Vec<MatmulPersistent> {
    [
        (1, 2, 1, 1, 0, 0, 0),
        (1, 1, 0, 1, 0, 0, 0),
        (0, 1, 1, 1, 0, 0, 0),
        (1, 2, 1, 2, 0, 0, 0),
        (0, 1, 0, 2, 0, 0, 0),
        (1, 2, 1, 1, 1, 0, 0),
        (1, 2, 0, 2, 1, 0, 0),
        (1, 2, 1, 1, 0, 1, 0),
        (1, 1, 0, 1, 0, 1, 0),
        (0, 1, 1, 1, 0, 1, 0),
        (1, 2, 1, 2, 0, 1, 0),
        (1, 2, 1, 1, 0, 0, 1),
        (1, 1, 0, 1, 0, 0, 1),
        (0, 1, 1, 1, 0, 0, 1),
        (1, 2, 1, 2, 0, 0, 1),
    ]
    .into_iter()
    .map(
        |(persistent, group_m, tma_store, cluster_m, hilbert, ping_pong, defer_stores)| {
            MatmulPersistent {
                block_m: 128,
                block_n: 128,
                block_k: 64,
                stages: 3,
                group_m,
                persistent,
                tma_store,
                cluster_m,
                hilbert,
                ping_pong,
                defer_stores,
            }
        },
    )
    .chain([MatmulPersistent {
        block_m: 64,
        block_n: 128,
        block_k: 64,
        stages: 4,
        group_m: 2,
        persistent: 1,
        tma_store: 1,
        cluster_m: 1,
        hilbert: 0,
        ping_pong: 1,
        defer_stores: 0,
    }])
    .collect()
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        // 3 × 3 tiles on the interpreter's four multiprocessors: three blocks of three tiles
        // alone (in ping-pong two for one warp group, one for the other), two pairs of three
        // units in pairs; 4 steps each
        check(config, (384, 384, 256), 60 + i as u64);
        // ragged in every dimension (stored from registers: rows of 600 bytes), 2 × 3 tiles,
        // 3 steps per tile
        check(config, (200, 300, 136), 70 + i as u64);
        // ragged, with rows a TMA store can take: the last tile's chunks are clipped
        check(config, (200, 296, 136), 80 + i as u64);
    }
}

#[test]
fn bf16_operands_are_exact_in_a_pair_and_alone() {
    tilus_bench::test_cache!();
    // the same body on bf16: a persistent block alone with the TMA-store epilogue, and a
    // pair sharing B, ragged in every dimension but K's alignment
    for (i, config) in [forms()[0].clone(), forms()[3].clone()]
        .into_iter()
        .enumerate()
    {
        check(&Bf16(config), (200, 296, 136), 90 + i as u64);
    }
}
