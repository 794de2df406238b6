//! v3 (warp specialization) on the CPU interpreter against the f64 CPU reference, in each of
//! its forms: one WGMMA group in flight or none, registers moved between warp groups or not,
//! every block tile that fits the register file, both K steps and every ring depth, at shapes
//! that are multiples of the tile and shapes that are not (ragged in M, N and K), with K long
//! enough that the ring wraps and every stage's full and empty barriers flip their phase at
//! least twice.

use hopper_matmul::v3::MatmulSpecialized;
use tilus_bench::checks::on_interpreter as check;

/// The four forms of v3 (in flight or not, registers moved or not) with a two-stage ring of
/// 64-wide K steps on 64 × 128 tiles; then a covering sample of the rest of the space: 64 × 256
/// and 128 × 128 tiles, 32-wide K steps, rings of three and four stages, each with both values
/// of `in_flight` and `register_split` among them (128 × 256 is rejected, `nvrtc_space_v3`).
pub fn forms() -> Vec<MatmulSpecialized> {
    let mut out = vec![];
    for in_flight in [0, 1] {
        for register_split in [0, 1] {
            out.push(MatmulSpecialized {
                block_m: 64,
                block_n: 128,
                block_k: 64,
                stages: 2,
                in_flight,
                register_split,
            });
        }
    }
    for (block_m, block_n, block_k, stages, in_flight, register_split) in [
        (64, 256, 32, 3, 1, 0),
        (64, 256, 64, 4, 0, 0),
        (128, 128, 32, 4, 0, 1),
        (128, 128, 64, 3, 1, 1),
        (128, 128, 32, 2, 1, 0),
    ] {
        out.push(MatmulSpecialized {
            block_m,
            block_n,
            block_k,
            stages,
            in_flight,
            register_split,
        });
    }
    out
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
        // two tile rows and columns, whole K steps
        check(config, (2 * bm, 2 * bn, steps * bk), 10 + i as u64);
        // ragged in M, N and K: the last K step is 8 wide
        check(
            config,
            (bm + 36, bn + 8, (steps - 1) * bk + 8),
            20 + i as u64,
        );
    }
}
