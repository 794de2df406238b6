//! The layer-norm workload ([`tilus_kernels::norm::layer_norm`]): rows in [-4, 4) shifted by a
//! row-dependent mean in [-6, 6], weights in [0.5, 1.5), biases in [-1, 1), the f64 reference;
//! a [`RowWise`] workload.

use super::rows::{Param, RowWise};
use crate::harness::Tolerance;
use crate::size::Size;
use crate::Result;

/// The `eps` every case passes.
pub const EPS: f32 = 1e-5;

/// `y = (x - mean) / sqrt(var + eps) · w + b`, one row.
fn reference(x: &[f64], params: &[Vec<f64>], eps: f64, y: &mut [f64]) {
    let n = x.len().max(1) as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let rstd = 1.0 / (var + eps).sqrt();
    for (j, (out, v)) in y.iter_mut().zip(x).enumerate() {
        *out = (v - mean) * rstd * params[0][j] + params[1][j];
    }
}

/// The one instance the registry points at.
pub static LAYER_NORM: RowWise = RowWise {
    name: "layer norm",
    scalar: Some(EPS),
    params: &[Param { lo: 0.5, hi: 1.5 }, Param { lo: -1.0, hi: 1.0 }],
    x: (-4.0, 4.0),
    row_shift: |r| 3.0 * (r % 5) as f64 - 6.0,
    reference,
    // f32 arithmetic and one f16 rounding against the exact values
    tolerance: Tolerance::F16,
};

/// Bytes a layer norm moves at `size`: the matrix read and written, `w` and `b` read once.
pub fn traffic_of(size: &Size) -> Result<u128> {
    LAYER_NORM.traffic(size)
}
