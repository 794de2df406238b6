//! v3 (warp specialization) on the CPU interpreter against the f64 CPU reference, in each of
//! its forms: one WGMMA group in flight or none, registers moved between warp groups or not,
//! at shapes that are multiples of the tile and shapes that are not, with the ring wrapping
//! several times.

use hopper_matmul::v3::MatmulSpecialized;
use tilus_bench::checks::on_interpreter as check;

/// The four forms of v3 with a two-stage ring of 64-wide K steps.
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
    out
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().iter().enumerate() {
        check(config, (128, 128, 320), 10 + i as u64);
        check(config, (100, 136, 200), 20 + i as u64);
    }
}
