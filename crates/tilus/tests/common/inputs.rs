//! Deterministic inputs.

use half::f16;

/// `n` f16 values, a sawtooth of multiples of 1/4 in `[-100, 150)`.
pub fn f16s(n: usize) -> Vec<f16> {
    (0..n)
        .map(|i| f16::from_f32((i % 1000) as f32 * 0.25 - 100.0))
        .collect()
}

/// `[m, k]` and `[n, k]` f16 operands of multiples of 1/16 with small sums: every partial sum
/// of a product is exact in f32 and in f16.
pub fn matmul_inputs(m: usize, n: usize, k: usize) -> (Vec<f16>, Vec<f16>) {
    let a = (0..m * k)
        .map(|i| f16::from_f32(((i * 7) % 13) as f32 / 16.0 - 0.375))
        .collect();
    let b = (0..n * k)
        .map(|i| f16::from_f32(((i * 5) % 11) as f32 / 16.0 - 0.3125))
        .collect();
    (a, b)
}

/// `len` pseudo-random f16 values in `[-0.125, 0.125)` (xorshift, from `seed`).
pub fn random_f16(len: usize, seed: u64) -> Vec<f16> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f16::from_f64(((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.25)
        })
        .collect()
}

/// `len` pseudo-random f32 values in `[-1, 1)` (xorshift, from `seed`).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// A seed for inputs that differ from run to run: `TILUS_TEST_SEED` when set (to replay a
/// failure), else the clock. Printed, so that a failing run says how to replay it.
pub fn fresh_seed() -> u64 {
    let seed = std::env::var("TILUS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("inputs from seed {seed} (replay with TILUS_TEST_SEED={seed})");
    seed
}
