//! v5 (two consumer warp groups) on the CPU interpreter against the f64 CPU reference: every
//! block tile of its space, rings of three and four stages, with and without registers moved
//! to the consumers, tiles in row order and in groups, at shapes that are multiples of the tile
//! and shapes that are not (ragged in M, N and K), with K long enough that the ring wraps and
//! every stage's barriers flip their phase at least twice. (v5 launches one block per tile;
//! the persistent grid, where a block takes several tiles, is v6's, `interp_v6`.)

use hopper_matmul::v5::MatmulCooperative;
use tilus_bench::checks::on_interpreter as check;

/// 128 × 128 tiles and three stages, both register splits, tiles row by row and in groups of
/// two tile rows; then the space's wider and taller tiles (128 × 256, 256 × 128) on four-stage
/// rings, one in the space's groups of eight tile rows.
pub fn forms() -> Vec<MatmulCooperative> {
    [
        (128, 128, 3, 0, 2),
        (128, 128, 3, 1, 1),
        (128, 256, 4, 1, 8),
        (256, 128, 4, 0, 2),
    ]
    .into_iter()
    .map(
        |(block_m, block_n, stages, register_split, group_m)| MatmulCooperative {
            block_m,
            block_n,
            block_k: 64,
            stages,
            register_split,
            group_m,
        },
    )
    .collect()
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        let (bm, bn, bk) = (
            config.block_m as usize,
            config.block_n as usize,
            config.block_k as usize,
        );
        // each stage is filled three times or more: phases 0, 1, 0 on both barriers
        let steps = crate::k_steps(config.stages);
        check(config, (bm, bn, steps * bk), 30 + i as u64);
        // ragged in M, N and K: two tile rows, one warp group's rows of the last one past M,
        // and two columns; the last K step 8 wide
        check(
            config,
            (bm + bm / 2 - 28, bn + 8, (steps - 1) * bk + 8),
            40 + i as u64,
        );
        // three tile rows and two columns: a group of two rows, then one of one
        check(config, (3 * bm - 84, 2 * bn - 56, 2 * bk), 50 + i as u64);
    }
}
