//! v4 (v3 on the library's `Pipeline`, tiles in grouped order) on the CPU interpreter
//! against the f64 CPU reference: every block tile and register split of its space, rings of
//! three and four stages, tiles row by row and in groups, at shapes that are multiples of the
//! tile and shapes that are not (ragged in M, N and K), with grids of several tile rows and
//! columns and K long enough that the ring wraps and every stage's barriers flip their phase
//! at least twice.

use hopper_matmul::v4::MatmulPipelined;
use tilus_bench::checks::on_interpreter as check;

/// Three-stage rings of 64 × 128 tiles, row order and groups of two tile rows, registers
/// moved or not; then the space's other tiles (64 × 256, 128 × 128 with registers moved and
/// not) on four-stage rings, one in the space's groups of eight tile rows.
pub fn forms() -> Vec<MatmulPipelined> {
    [
        (64, 128, 3, 1, 0),
        (64, 128, 3, 2, 1),
        (64, 256, 4, 8, 0),
        (128, 128, 4, 2, 1),
        (128, 128, 4, 1, 0),
    ]
    .into_iter()
    .map(
        |(block_m, block_n, stages, group_m, register_split)| MatmulPipelined {
            block_m,
            block_n,
            block_k: 64,
            stages,
            group_m,
            register_split,
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
        // three tile rows (a group of two, then one of one) and two columns, whole K steps
        check(config, (3 * bm, 2 * bn, steps * bk), 60 + i as u64);
        // ragged in M, N and K: four tile rows and two columns, the last K step 8 wide
        check(
            config,
            (3 * bm + 8, bn + 8, (steps - 1) * bk + 8),
            70 + i as u64,
        );
    }
}
