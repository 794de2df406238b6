//! The FP8 GEMM's test inputs and check, shared by its interpreter and GPU tests: random codes
//! (every magnitude the scales leave in range, both signs), per-tensor scales, and each output
//! against the exact product of the codes' values (`gemm::fp8::reference`) within the bound of
//! an f32 accumulation and one rounding to the output type; NaN fails.

use tilus::lowp::LowpElement;
use tilus_bench::harness::Rng;
use tilus_kernels::gemm::fp8::reference::{product, tolerance};

/// Two per-tensor scales ([`tilus_bench::fp8_bench::tensor_scales`]).
pub fn scales(rng: &mut Rng) -> [f32; 2] {
    tilus_bench::fp8_bench::tensor_scales(rng)
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

pub use tilus_bench::fp8_bench::{block_scales, codes};

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
