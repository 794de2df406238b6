//! The softmax workload ([`tilus_kernels::norm::softmax`]): inputs in [-4, 4) shifted by -100,
//! 0 or +100 by row, so that `exp` of an unshifted row of the shifted ones overflows f32 and
//! only a kernel that subtracts the maximum passes; the f64 reference; a [`RowWise`] workload.

use super::rows::RowWise;
use crate::harness::Tolerance;

/// `y = exp(x - max) / sum`, one row.
fn reference(x: &[f64], _params: &[Vec<f64>], _scalar: f64, y: &mut [f64]) {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (e, v) in y.iter_mut().zip(x) {
        *e = (v - m).exp();
    }
    let s: f64 = y.iter().sum();
    y.iter_mut().for_each(|e| *e /= s);
}

/// The one instance the registry points at.
pub static SOFTMAX: RowWise = RowWise {
    name: "softmax",
    scalar: None,
    params: &[],
    x: (-4.0, 4.0),
    row_shift: |r| 100.0 * (r % 3) as f64 - 100.0,
    reference,
    // f32 arithmetic and one f16 rounding against the exact values: a little more than half
    // an f16 ulp relative, and one f16 subnormal step for the tiny probabilities
    tolerance: Tolerance {
        rtol: 1e-3,
        atol: 6e-8,
    },
};
