//! `layer_norm`: each row of a `[rows, cols]` f16 matrix normalized to zero mean and unit
//! variance, then scaled and shifted per column: `y = (x - mean) / sqrt(var + eps) * w + b`,
//! with `w` and `b` `[cols]` f16 vectors and `eps` an f32 kernel argument; f32 inside.
//!
//! One pass over memory, as for `softmax`: a block loads `block_rows` whole rows into
//! registers, sums each row (the mean), sums the squares of the centred row (the variance:
//! two reductions over data already in registers, so the variance is computed from centred
//! values, which does not cancel the way `E[x²] - mean²` does), and writes the result. The
//! rows stay in registers as f16 and are widened to f32 where they are used (the conversions
//! are cheap; f32 copies alive across the reductions would halve the blocks that fit on a
//! multiprocessor). `w` and `b` are loaded by every block in the layout the rows have (each
//! thread the columns it holds); they are small and stay in the caches.
//!
//! Columns past `cols` read 0: they add nothing to the row's sum, and each adds exactly
//! `mean²` to the sum of centred squares, which the kernel subtracts (the padding is a
//! compile-time count).

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
/// use tilus_kernels::norm::{LayerNorm, LayerNormOp};
/// use half::f16;
/// let x: Vec<f16> = [1.0, 3.0, 1.0, 3.0].iter().map(|&v| f16::from_f32(v)).collect();
/// let (w, b) = (vec![f16::ONE; 4], vec![f16::ZERO; 4]);
/// let mut y = vec![f16::NAN; 4];
/// LayerNormOp::interpret(&LayerNorm::default(), (1, 4), 0.0, (&x, &w, &b), &mut y)?;
/// assert_eq!(y, [-1.0, 1.0, -1.0, 1.0].map(f16::from_f32)); // mean 2, variance 1
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_rows = [1, 2, 4])]
#[tune(warps = [4, 8, 16])]
pub struct LayerNorm {
    /// Rows per block, each whole in registers.
    pub block_rows: i32,
    /// Warps per block: they split each row (and the block's rows, when a row is short).
    pub warps: u32,
}

impl Default for LayerNorm {
    /// One row per block of 8 warps: 32 halves per thread for rows of 8192.
    fn default() -> Self {
        LayerNorm {
            block_rows: 1,
            warps: 8,
        }
    }
}

#[tilus::script]
impl Script for LayerNorm {
    // rows: runtime; cols: a compile-time constant (the width of the row tile); eps: runtime.
    type Args = (
        i32,
        Const<i32>,
        f32,
        Ptr<f16>,
        Ptr<f16>,
        Ptr<f16>,
        PtrMut<f16>,
    );

    fn body(&self, k: &mut Kernel, (rows, cols, eps, x, w, b, y): Handles<Self::Args>) {
        let threads = 32 * i64::from(self.warps);
        let n = cols.as_const().unwrap_or(1).max(1);
        let width = tile_cols(n, threads);
        let padding = (width - n) as f32;
        let width = width as i32;
        k.blocks([cdiv(rows, self.block_rows)]);
        k.warps(self.warps);
        let row0 = k.let_i32(self.block_rows * k.block_idx().x);
        let gx = k.global_view::<f16>(x, [rows, cols]);
        let gw = k.global_view::<f16>(w, [cols]);
        let gb = k.global_view::<f16>(b, [cols]);
        let gy = k.global_view::<f16>(y, [rows, cols]);
        let xs = k.load_global(&gx, (row0, 0), [self.block_rows, width]);
        let total = k.sum(xs.cast::<f32>(), 1, true);
        let mean = k.compute(total / n as f32);
        let squares = k.sum((xs.cast::<f32>() - mean).square(), 1, true);
        // each padding column holds -mean once centred
        let var = k.compute((squares - mean.square() * padding) / n as f32);
        let rstd = k.compute((var + eps).rsqrt());
        let ws = k.load_global(&gw, [0], [width]);
        let bs = k.load_global(&gb, [0], [width]);
        let normed = (xs.cast::<f32>() - mean) * rstd;
        let ys = k.compute((normed * ws.cast::<f32>() + bs.cast::<f32>()).cast::<f16>());
        k.store_global(&gy, &ys, (row0, 0));
    }
}

/// Layer norm of each row of `[rows, cols]` f16 device buffers, with `[cols]` weights and
/// biases: [`LayerNorm`] autotuned on its first use of each shape.
///
/// ```no_run
/// use tilus_kernels::norm::LayerNormOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let layer_norm = LayerNormOp::new(&device)?;
/// let (rows, cols) = (32, 4096);
/// let x = device.stream().clone_htod(&vec![half::f16::ONE; rows * cols])?;
/// let w = device.stream().clone_htod(&vec![half::f16::ONE; cols])?;
/// let b = device.stream().clone_htod(&vec![half::f16::ZERO; cols])?;
/// let mut y = device.stream().alloc_zeros::<half::f16>(rows * cols)?;
/// layer_norm.run(device.stream(), (rows, cols), 1e-5, (&x, &w, &b), &mut y)?;
/// # Ok(()) }
/// ```
pub struct LayerNormOp {
    tuned: Autotuned<LayerNorm>,
}

impl LayerNormOp {
    /// The kernel bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> crate::Result<LayerNormOp> {
        Ok(LayerNormOp {
            tuned: LayerNorm::autotuned(device)?,
        })
    }

    /// `y = (x - mean) / sqrt(var + eps) * w + b` row by row, on `stream`: `x` and `y` hold
    /// `rows · cols` elements, `w` and `b` `cols`.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize),
        eps: f32,
        (x, w, b): (&CudaSlice<f16>, &CudaSlice<f16>, &CudaSlice<f16>),
        y: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, [x.len(), w.len(), b.len(), y.len()])?;
        Ok(self.tuned.launch(stream, (rows, cols, eps, x, w, b, y))?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &LayerNorm,
        shape: (usize, usize),
        eps: f32,
        (x, w, b): (&[f16], &[f16], &[f16]),
        y: &mut [f16],
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, [x.len(), w.len(), b.len(), y.len()])?;
        tilus::interpret(config, (rows, cols, eps, x, w, b, y))?;
        Ok(())
    }
}

/// The kernel's `(rows, cols)` arguments, once the lengths of `x`, `w`, `b` and `y` match.
fn checked_shape(
    (rows, cols): (usize, usize),
    [x, w, b, y]: [usize; 4],
) -> crate::Result<(i32, i32)> {
    const NAME: &str = "layer_norm";
    let dims = (dim(NAME, "rows", rows, 1)?, dim(NAME, "cols", cols, 1)?);
    let n = elements(NAME, rows, cols)?;
    length(NAME, "x", x, n)?;
    length(NAME, "w", w, cols)?;
    length(NAME, "b", b, cols)?;
    length(NAME, "y", y, n)?;
    Ok(dims)
}
