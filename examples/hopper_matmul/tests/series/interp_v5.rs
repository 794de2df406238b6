//! v5 (two consumer warp groups) on the CPU interpreter against the f64 CPU reference: with
//! and without registers moved to the consumers, tiles in row order and in groups, at shapes that are multiples of the tile and
//! shapes that are not, the ring wrapping several times.

use hopper_matmul::v5::MatmulCooperative;
use tilus_bench::checks::on_interpreter as check;

/// v5 with 128 × 128 tiles and three stages, both register splits, tiles row by row and in
/// groups of two tile rows.
pub fn forms() -> Vec<MatmulCooperative> {
    [(0, 2), (1, 1)]
        .into_iter()
        .map(|(register_split, group_m)| MatmulCooperative {
            block_m: 128,
            block_n: 128,
            block_k: 64,
            stages: 3,
            register_split,
            group_m,
        })
        .collect()
}

#[test]
fn both_forms_are_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        check(config, (128, 128, 448), 30 + i as u64);
        check(config, (200, 72, 136), 40 + i as u64);
        // three tile rows and two columns: a group of two rows, then one of one
        check(config, (300, 200, 128), 50 + i as u64);
    }
}
