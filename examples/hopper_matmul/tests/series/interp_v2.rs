//! v2 (a ring of `stages` tiles refilled `stages` steps ahead) on the CPU interpreter against
//! the f64 CPU reference: a covering sample of its search space (every block tile that fits the
//! register file, both K steps, every ring depth; 128 × 256 is rejected, `nvrtc_space_v2`),
//! each at a shape that is a multiple of the tile and a ragged one,
//! with K long enough that the ring wraps and every stage's barrier completes at least three
//! times (its phase flips twice): a refill of the wrong K tile or a wait on the wrong phase
//! shows in the product.

use hopper_matmul::v2::MatmulStaged;
use tilus_bench::checks::on_interpreter as check;

/// Every `(block_m, block_n)` of the space that compiles, both `block_k`s and every `stages`.
pub fn forms() -> Vec<MatmulStaged> {
    [
        (64, 128, 32, 2),
        (64, 256, 64, 3),
        (128, 128, 64, 4),
        (128, 128, 32, 3),
    ]
    .into_iter()
    .map(|(block_m, block_n, block_k, stages)| MatmulStaged {
        block_m,
        block_n,
        block_k,
        stages,
    })
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
        let steps = crate::k_steps(config.stages);
        // two tile rows and columns, whole K steps
        check(config, (2 * bm, 2 * bn, steps * bk), 10 + i as u64);
        // ragged in M, N and K: the last K step is 8 wide (TMA fills the rest with zeros)
        check(
            config,
            (bm + 36, bn + 8, (steps - 1) * bk + 8),
            20 + i as u64,
        );
    }
}
