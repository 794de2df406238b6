//! v4 (v3 on the library's `Pipeline`, tiles in grouped order) on the CPU interpreter
//! against the f64 CPU reference, at shapes that are multiples of the tile and shapes that
//! are not, with grids of several tile rows and columns.

use hopper_matmul::v4::MatmulPipelined;
use tilus_bench::checks::on_interpreter as check;

/// Three-stage rings of 64 × 128 tiles, row order and groups of two tile rows, registers
/// moved or not.
pub fn forms() -> Vec<MatmulPipelined> {
    [(1, 0), (2, 1)]
        .into_iter()
        .map(|(group_m, register_split)| MatmulPipelined {
            block_m: 64,
            block_n: 128,
            block_k: 64,
            stages: 3,
            group_m,
            register_split,
        })
        .collect()
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        check(config, (128, 256, 320), 60 + i as u64);
        check(config, (200, 136, 200), 70 + i as u64);
    }
}
