//! The FP8 GEMM's test inputs and check, shared by its interpreter and GPU tests: random codes
//! (every magnitude the scales leave in range, both signs), per-tensor or per-block scales, and
//! each output against the exact product of the codes' values (`gemm::fp8::reference`) within
//! the bound of its accumulation (f32 in the interpreter; the FP8 tensor cores' and then f32 on
//! the GPU) and one rounding to the output type; NaN fails.

use tilus::lowp::LowpElement;
use tilus_bench::harness::Rng;
use tilus_kernels::gemm::fp8::reference::{
    product, product_blocks, tensor_core_tolerance, tolerance,
};

pub use tilus_bench::fp8_bench::{block_scales, codes};

/// Who summed the products: the interpreter (in f32) or the GPU (each K step of 128 on the
/// FP8 tensor cores, then in f32): the bound each is held to.
#[derive(Clone, Copy, Debug)]
pub enum Summed {
    /// f32 throughout (`reference::tolerance`).
    F32,
    /// The FP8 tensor cores' accumulator within a K step (`reference::tensor_core_tolerance`).
    TensorCores,
}

/// Two per-tensor scales ([`tilus_bench::fp8_bench::tensor_scales`]).
pub fn scales(rng: &mut Rng) -> [f32; 2] {
    tilus_bench::fp8_bench::tensor_scales(rng)
}

/// Checks `c` (as f64, by `to_f64`) against the exact product with per-tensor scales `s`.
#[allow(clippy::too_many_arguments)]
pub fn check<T: LowpElement, O: Copy>(
    what: &str,
    shape: (usize, usize, usize),
    (a, b): (&[T], &[T]),
    s: [f32; 2],
    c: &[O],
    to_f64: fn(O) -> f64,
    (unit_roundoff, summed): (f64, Summed),
) -> Result<(), String> {
    let exact = product(shape, (a, b), (s[0], s[1]));
    within(
        what,
        shape,
        exact,
        c.iter().map(|&x| to_f64(x)),
        (unit_roundoff, summed),
    )
}

/// [`check`] with fine-grained scales (`reference::product_blocks`).
#[allow(clippy::too_many_arguments)]
pub fn check_blocks<T: LowpElement, O: Copy>(
    what: &str,
    shape: (usize, usize, usize),
    (a, b): (&[T], &[T]),
    (sa, sb): (&[f32], &[f32]),
    c: &[O],
    to_f64: fn(O) -> f64,
    (unit_roundoff, summed): (f64, Summed),
) -> Result<(), String> {
    let exact = product_blocks(shape, (a, b), (sa, sb));
    within(
        what,
        shape,
        exact,
        c.iter().map(|&x| to_f64(x)),
        (unit_roundoff, summed),
    )
}

/// Every output within its bound of the exact value (`(values, magnitude sums)`); the first
/// element outside it, or any NaN, is an error naming it.
fn within(
    what: &str,
    (m, n, k): (usize, usize, usize),
    (exact, mag): (Vec<f64>, Vec<f64>),
    got: impl Iterator<Item = f64>,
    (unit_roundoff, summed): (f64, Summed),
) -> Result<(), String> {
    let bound = match summed {
        Summed::F32 => tolerance,
        Summed::TensorCores => tensor_core_tolerance,
    };
    let got: Vec<f64> = got.collect();
    // every element of C checked: the reference gives one value and one magnitude each
    if got.len() != m * n || exact.len() != m * n || mag.len() != m * n {
        return Err(format!(
            "{what} ({m}, {n}, {k}): {} outputs, {} exact values, {} magnitudes",
            got.len(),
            exact.len(),
            mag.len()
        ));
    }
    let mut worst = 0.0f64;
    for (i, (got, (&want, &mg))) in got.into_iter().zip(exact.iter().zip(&mag)).enumerate() {
        let tol = bound(want, mg, k, unit_roundoff);
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
