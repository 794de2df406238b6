//! v6 (a persistent grid) on the CPU interpreter against the f64 CPU reference. The
//! interpreter models a device of four multiprocessors, so each block walks several tiles and
//! the ring runs on across them (wrapping mid-tile where the steps per tile are not a
//! multiple of the stages); one block per tile as the ablation, with K long enough that each
//! stage's barriers flip their phase twice within the one tile; ragged shapes. The forms cover
//! every block tile of the space (cooperative and ping-pong), both ring depths, both epilogues,
//! blocks alone and in pairs, grouped and Hilbert order, stores deferred or not.

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
/// the loop), in pairs. Then rings of four stages and the space's other tiles: ping-pong on
/// 64 × 128 tiles; 128 × 256 tiles as the default (groups of eight tile rows); 256 × 128
/// tiles in pairs (the TMA-store epilogue's 32-column chunks) and one block per tile storing
/// from registers; ping-pong on 64 × 256 tiles, alone with TMA stores and in pairs storing
/// from registers; last the small tiles' rings of eight stages: 128 × 64 alone, ping-pong on
/// 64 × 128 in pairs; ping-pong on 64 × 64 with twelve stages (one chunk per tile); and
/// 128 × 192 (three chunks a tile, two staging buffers) alone and in pairs.
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
        |(persistent, group_m, tma_store, cluster_m, hilbert, ping_pong, defer)| {
            // 128 x 128 tiles, three stages
            let (p, g, t) = (persistent, group_m, tma_store);
            shaped((128, 128, 3, g, p, t, cluster_m, hilbert, ping_pong, defer))
        },
    )
    .chain(
        [
            (64, 128, 4, 2, 1, 1, 1, 0, 1, 0),
            (128, 256, 4, 8, 1, 1, 1, 0, 0, 1),
            (256, 128, 3, 1, 1, 1, 2, 0, 0, 1),
            (256, 128, 4, 8, 0, 0, 1, 0, 0, 0),
            (64, 256, 4, 8, 1, 1, 1, 0, 1, 1),
            (64, 256, 3, 1, 1, 0, 2, 0, 1, 1),
            (128, 64, 8, 8, 1, 1, 1, 0, 0, 1),
            (64, 128, 8, 8, 1, 1, 2, 0, 1, 1),
            (64, 64, 12, 8, 1, 1, 1, 0, 1, 1),
            (128, 192, 4, 8, 1, 1, 1, 0, 0, 1),
            (128, 192, 4, 1, 1, 1, 2, 0, 0, 1),
        ]
        .into_iter()
        .map(shaped),
    )
    .collect()
}

/// A form of v6 from `(block_m, block_n, stages, group_m, persistent, tma_store, cluster_m,
/// hilbert, ping_pong, defer_stores)`, blocks alone along N.
fn shaped(
    (
        block_m,
        block_n,
        stages,
        group_m,
        persistent,
        tma_store,
        cluster_m,
        hilbert,
        ping_pong,
        defer_stores,
    ): (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32),
) -> MatmulPersistent {
    MatmulPersistent {
        block_m,
        block_n,
        block_k: 64,
        stages,
        group_m,
        persistent,
        tma_store,
        cluster_m,
        cluster_n: 1,
        hilbert,
        ping_pong,
        defer_stores,
    }
}

/// Pairs of blocks on neighbouring tile columns sharing their A tile (`cluster_n = 2`):
/// 128 × 128 tiles with three stages, persistent (groups of two tile rows, TMA stores) and one
/// block per tile (stores from registers); six stages with stores deferred (the form cuBLAS
/// runs at 512 × 4096²); Hilbert order; ping-pong on 64 × 128 tiles (A staged whole, its
/// halves multicast); 128 × 256 tiles, four stages, deferred stores.
pub fn pairs_along_n() -> Vec<MatmulPersistent> {
    [
        (128, 128, 3, 2, 1, 1, 1, 0, 0, 0),
        (128, 128, 3, 1, 0, 0, 1, 0, 0, 0),
        (128, 128, 6, 8, 1, 1, 1, 0, 0, 1),
        (128, 128, 3, 2, 1, 1, 1, 1, 0, 0),
        (64, 128, 4, 2, 1, 1, 1, 0, 1, 0),
        (128, 256, 4, 8, 1, 1, 1, 0, 0, 1),
    ]
    .into_iter()
    .map(|form| MatmulPersistent {
        cluster_n: 2,
        ..shaped(form)
    })
    .collect()
}

/// A form against the reference at multiples of its tile and at ragged shapes (seeds from
/// `seed`).
fn check_form(config: &MatmulPersistent, seed: u64) {
    let (bm, bn, bk) = (
        config.block_m as usize,
        config.block_n as usize,
        config.block_k as usize,
    );
    // 3 × 3 tiles on the interpreter's four multiprocessors: three blocks of three tiles
    // alone (in ping-pong two for one warp group, one for the other), two pairs of three
    // units in pairs (the last unit's second tile outside C); 4 steps each
    check(config, (3 * bm, 3 * bn, 4 * bk), 60 + seed);
    // ragged in every dimension (stored from registers: rows of 600 bytes at 128-column
    // tiles), 2 × 3 tiles, 3 steps per tile
    check(config, (bm + 72, 2 * bn + 44, 2 * bk + 8), 70 + seed);
    // ragged, with rows a TMA store can take: the last tile's chunks are clipped
    check(config, (bm + 72, 2 * bn + 40, 2 * bk + 8), 80 + seed);
    if config.persistent == 0 {
        // one tile per block: K long enough for every stage to be filled three times
        // (phases 0, 1, 0), ragged
        let steps = crate::k_steps(config.stages);
        check(config, (bm + 72, bn + 8, steps * bk + 8), 100 + seed);
    }
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        check_form(config, i as u64);
    }
}

#[test]
fn pairs_along_n_are_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in pairs_along_n().iter().enumerate() {
        check_form(config, 200 + i as u64);
    }
}

#[test]
fn pairs_along_both_axes_at_once_are_refused() {
    let config = MatmulPersistent {
        cluster_m: 2,
        cluster_n: 2,
        ..MatmulPersistent::default()
    };
    let e = tilus::build(&config, &[4096, 4096])
        .unwrap_err()
        .to_string();
    assert!(e.contains("pairs along one axis"), "{e}");
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
