//! The RMSNorm workload ([`tilus_kernels::norm::rms_norm`]): rows with row-dependent means (so
//! the mean is not zero and a kernel that centred the rows would fail), weights in [0.5, 1.5),
//! the f64 reference, a [`RowWise`] workload.

use super::rows::{Param, RowWise};
use crate::harness::Tolerance;
use crate::size::Size;
use crate::Result;

/// The `eps` every case passes.
pub const EPS: f32 = 1e-6;

/// `y = x / sqrt(mean(x²) + eps) · w`, one row.
fn reference(x: &[f64], params: &[Vec<f64>], eps: f64, y: &mut [f64]) {
    let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len().max(1) as f64;
    let scale = 1.0 / (mean_square + eps).sqrt();
    for ((out, v), w) in y.iter_mut().zip(x).zip(&params[0]) {
        *out = v * scale * w;
    }
}

/// The one instance the registry points at.
pub static RMS_NORM: RowWise = RowWise {
    name: "RMSNorm",
    scalar: Some(EPS),
    params: &[Param { lo: 0.5, hi: 1.5 }],
    x: (-4.0, 4.0),
    row_shift: |r| 3.0 * (r % 5) as f64 - 6.0,
    reference,
    // f32 arithmetic and one f16 rounding against the exact values
    tolerance: Tolerance::F16,
};

/// Bytes an RMSNorm moves at `size`: the matrix read and written, `w` read once.
pub fn traffic_of(size: &Size) -> Result<u128> {
    RMS_NORM.traffic(size)
}
