//! The FP8 GEMM's test inputs and check, shared by its interpreter and GPU tests: random codes
//! (every magnitude the scales leave in range, both signs), per-tensor scales, and each output
//! against the exact product of the codes' values (`gemm::fp8::reference`) within the bound of
//! an f32 accumulation and one rounding to the output type; NaN fails.

use tilus::lowp::LowpElement;
use tilus_bench::harness::Rng;
use tilus_kernels::gemm::fp8::reference::{product, tolerance};

/// `len` codes of `T`: values `±2^e · (1 + u)` with `e` in `[-4, 3]`, rounded to the code.
pub fn codes<T: LowpElement + Copy>(rng: &mut Rng, len: usize, from_f64: fn(f64) -> T) -> Vec<T> {
    (0..len)
        .map(|_| {
            let sign = if rng.next_f64() < 0.5 { -1.0 } else { 1.0 };
            let e = (rng.next_f64() * 8.0).floor() - 4.0;
            from_f64(sign * 2f64.powf(e) * (1.0 + rng.next_f64()))
        })
        .collect()
}

/// Two positive scales, not powers of two (so that a scale left out or applied twice shows).
pub fn scales(rng: &mut Rng) -> [f32; 2] {
    [
        (0.01 + rng.next_f64() * 0.05) as f32,
        (0.5 + rng.next_f64() * 2.0) as f32,
    ]
}

/// Checks `c` (as f64, by `to_f64`) against the exact product; the first element outside the
/// bound, or any NaN, is an error naming it.
#[allow(clippy::too_many_arguments)]
pub fn check<T: LowpElement, O: Copy>(
    what: &str,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[T], &[T]),
    s: [f32; 2],
    c: &[O],
    to_f64: fn(O) -> f64,
    unit_roundoff: f64,
) -> Result<(), String> {
    let (exact, mag) = product((m, n, k), (a, b), (s[0], s[1]));
    let mut worst = 0.0f64;
    for (i, (&got, (&want, &mg))) in c.iter().zip(exact.iter().zip(&mag)).enumerate() {
        let got = to_f64(got);
        let tol = tolerance(want, mg, k, unit_roundoff);
        if !got.is_finite() || (got - want).abs() > tol {
            return Err(format!(
                "{what} ({m}, {n}, {k}): c[{}, {}] = {got}, exact {want} (bound {tol:.3e})",
                i / n,
                i % n
            ));
        }
        worst = worst.max((got - want).abs() / tol.max(f64::MIN_POSITIVE));
    }
    println!("{what} ({m}, {n}, {k}): every element within {worst:.3} of its bound");
    Ok(())
}

/// Scales of `len` blocks, each its own (from 1/16 to 4), so that a block's scale read for
/// another's shows.
pub fn block_scales(rng: &mut Rng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| (2f64.powf(rng.next_f64() * 6.0 - 4.0)) as f32)
        .collect()
}

/// [`check`] with fine-grained scales (`reference::product_blocks`).
#[allow(clippy::too_many_arguments)]
pub fn check_blocks<T: LowpElement, O: Copy>(
    what: &str,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[T], &[T]),
    (sa, sb): (&[f32], &[f32]),
    c: &[O],
    to_f64: fn(O) -> f64,
    unit_roundoff: f64,
) -> Result<(), String> {
    let (exact, mag) =
        tilus_kernels::gemm::fp8::reference::product_blocks((m, n, k), (a, b), (sa, sb));
    for (i, (&got, (&want, &mg))) in c.iter().zip(exact.iter().zip(&mag)).enumerate() {
        let got = to_f64(got);
        let tol = tolerance(want, mg, k, unit_roundoff);
        if !got.is_finite() || (got - want).abs() > tol {
            return Err(format!(
                "{what} ({m}, {n}, {k}): c[{}, {}] = {got}, exact {want} (bound {tol:.3e})",
                i / n,
                i % n
            ));
        }
    }
    Ok(())
}
