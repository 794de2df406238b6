//! `rms_norm`: each row of a `[rows, cols]` f16 matrix divided by its root mean square, then
//! scaled per column: `y = x / sqrt(mean(x²) + eps) * w`, with `w` a `[cols]` f16 vector and
//! `eps` an f32 kernel argument; f32 inside. The normalization of LLaMA-style models.
//!
//! One pass over memory, as for `layer_norm`, with one reduction instead of two: a block loads
//! `block_rows` whole rows into registers, sums their squares, and writes the scaled rows.
//! Columns past `cols` read 0 and add nothing to the sum; the mean divides by `cols`.

use super::tile::tile_cols;
use crate::host::{dim, elements, length};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus::tune::Autotuned;

/// The kernel. Fields are compile-time hyperparameters: the rows a block holds and its warps.
///
/// ```
/// use tilus_kernels::norm::{RmsNorm, RmsNormOp};
/// use half::f16;
/// let x: Vec<f16> = [3.0, -3.0, 3.0, -3.0].iter().map(|&v| f16::from_f32(v)).collect();
/// let w = vec![f16::from_f32(2.0); 4];
/// let mut y = vec![f16::NAN; 4];
/// RmsNormOp::interpret(&RmsNorm::default(), (1, 4), 0.0, (&x, &w), &mut y)?;
/// assert_eq!(y, [2.0, -2.0, 2.0, -2.0].map(f16::from_f32)); // root mean square 3
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_rows = [1, 2, 4])]
#[tune(warps = [4, 8, 16])]
pub struct RmsNorm {
    /// Rows per block, each whole in registers.
    pub block_rows: i32,
    /// Warps per block: they split each row (and the block's rows, when a row is short).
    pub warps: u32,
}

impl Default for RmsNorm {
    /// One row per block of 8 warps: 32 halves per thread for rows of 8192.
    fn default() -> Self {
        RmsNorm {
            block_rows: 1,
            warps: 8,
        }
    }
}

#[tilus::script]
impl Script for RmsNorm {
    // rows: runtime; cols: a compile-time constant (the width of the row tile); eps: runtime.
    type Args = (i32, Const<i32>, f32, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(&self, k: &mut Kernel, (rows, cols, eps, x, w, y): Handles<Self::Args>) {
        let threads = 32 * i64::from(self.warps);
        let n = cols.as_const().unwrap_or(1).max(1);
        let width = tile_cols(n, threads) as i32;
        k.blocks([cdiv(rows, self.block_rows)]);
        k.warps(self.warps);
        let row0 = k.let_i32(self.block_rows * k.block_idx().x);
        let gx = k.global_view::<f16>(x, [rows, cols]);
        let gw = k.global_view::<f16>(w, [cols]);
        let gy = k.global_view::<f16>(y, [rows, cols]);
        let xs = k.load_global(&gx, (row0, 0), [self.block_rows, width]);
        let squares = k.sum(xs.cast::<f32>().square(), 1, true);
        let rrms = k.compute((squares / n as f32 + eps).rsqrt());
        let ws = k.load_global(&gw, [0], [width]);
        let ys = k.compute((xs.cast::<f32>() * rrms * ws.cast::<f32>()).cast::<f16>());
        k.store_global(&gy, &ys, (row0, 0));
    }
}

/// RMSNorm of each row of `[rows, cols]` f16 device buffers with `[cols]` weights: [`RmsNorm`]
/// autotuned on its first use of each shape.
///
/// ```no_run
/// use tilus_kernels::norm::RmsNormOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let rms_norm = RmsNormOp::new(&device)?;
/// let (rows, cols) = (32, 4096);
/// let x = device.stream().clone_htod(&vec![half::f16::ONE; rows * cols])?;
/// let w = device.stream().clone_htod(&vec![half::f16::ONE; cols])?;
/// let mut y = device.stream().alloc_zeros::<half::f16>(rows * cols)?;
/// rms_norm.run(device.stream(), (rows, cols), 1e-6, &x, &w, &mut y)?;
/// # Ok(()) }
/// ```
pub struct RmsNormOp {
    tuned: Autotuned<RmsNorm>,
}

impl RmsNormOp {
    /// The kernel bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> crate::Result<RmsNormOp> {
        Ok(RmsNormOp {
            tuned: RmsNorm::autotuned(device)?,
        })
    }

    /// `y = x / sqrt(mean(x²) + eps) * w` row by row, on `stream`: `x` and `y` hold
    /// `rows · cols` elements, `w` `cols`.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize),
        eps: f32,
        x: &CudaSlice<f16>,
        w: &CudaSlice<f16>,
        y: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, [x.len(), w.len(), y.len()])?;
        Ok(self.tuned.launch(stream, (rows, cols, eps, x, w, y))?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &RmsNorm,
        shape: (usize, usize),
        eps: f32,
        (x, w): (&[f16], &[f16]),
        y: &mut [f16],
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, [x.len(), w.len(), y.len()])?;
        tilus::interpret(config, (rows, cols, eps, x, w, y))?;
        Ok(())
    }
}

/// The kernel's `(rows, cols)` arguments, once the lengths of `x`, `w` and `y` match.
fn checked_shape((rows, cols): (usize, usize), [x, w, y]: [usize; 3]) -> crate::Result<(i32, i32)> {
    const NAME: &str = "rms_norm";
    let dims = (dim(NAME, "rows", rows, 1)?, dim(NAME, "cols", cols, 1)?);
    let n = elements(NAME, rows, cols)?;
    length(NAME, "x", x, n)?;
    length(NAME, "w", w, cols)?;
    length(NAME, "y", y, n)?;
    Ok(dims)
}
