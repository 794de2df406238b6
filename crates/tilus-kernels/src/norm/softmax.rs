//! `softmax`: the softmax of each row of a `[rows, cols]` f16 matrix, `y = exp(x - max) / sum`,
//! numerically stable (the row's maximum is subtracted before `exp`, so no row overflows
//! whatever its values), f16 in and out, f32 inside.
//!
//! One pass over memory: a block loads `block_rows` whole rows into registers (16-byte vectors,
//! coalesced), reduces each row twice (its maximum, then the sum of the exponentials: lane
//! shuffles within warps, shared memory across them) and writes the normalized row. Columns past
//! `cols` read `-inf`, which changes neither reduction (`exp(-inf) = 0`), and are not written.
//!
//! `exp` is the hardware's approximation (`ex2.approx`): its error, a few f32 ulps, is far
//! below the rounding of the f16 result, and it keeps the kernel's arithmetic well under what
//! the memory system allows.

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
/// On the CPU interpreter, through the host API's entry:
///
/// ```
/// use tilus_kernels::norm::{Softmax, SoftmaxOp};
/// let (rows, cols) = (2, 5);
/// let x = vec![half::f16::ZERO; rows * cols];
/// let mut y = vec![half::f16::NAN; rows * cols];
/// SoftmaxOp::interpret(&Softmax { block_rows: 1, warps: 4 }, (rows, cols), &x, &mut y)?;
/// assert!(y.iter().all(|v| (v.to_f32() - 0.2).abs() < 1e-3));
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_rows = [1, 2, 4])]
#[tune(warps = [4, 8, 16])]
pub struct Softmax {
    /// Rows per block, each whole in registers.
    pub block_rows: i32,
    /// Warps per block: they split each row (and the block's rows, when a row is short).
    pub warps: u32,
}

impl Default for Softmax {
    /// One row per block of 8 warps: 32 halves per thread for rows of 8192.
    fn default() -> Self {
        Softmax {
            block_rows: 1,
            warps: 8,
        }
    }
}

#[tilus::script]
impl Script for Softmax {
    // rows: runtime; cols: a compile-time constant (the width of the row tile).
    type Args = (i32, Const<i32>, Ptr<f16>, PtrMut<f16>);

    fn body(&self, k: &mut Kernel, (rows, cols, x, y): Handles<Self::Args>) {
        let threads = 32 * i64::from(self.warps);
        let width = tile_cols(cols.as_const().unwrap_or(1), threads) as i32;
        k.blocks([cdiv(rows, self.block_rows)]);
        k.warps(self.warps);
        let row0 = k.let_i32(self.block_rows * k.block_idx().x);
        let gx = k.global_view::<f16>(x, [rows, cols]);
        let gy = k.global_view::<f16>(y, [rows, cols]);
        let xs = k.load_global_or(&gx, (row0, 0), [self.block_rows, width], f64::NEG_INFINITY);
        let xf = k.cast::<f32>(&xs);
        let row_max = k.max(xf, 1, true);
        let e = k.compute((xf - row_max).exp_approx());
        let total = k.sum(e, 1, true);
        let inv = k.compute(1.0 / total);
        let ys = k.compute((e * inv).cast::<f16>());
        k.store_global(&gy, &ys, (row0, 0));
    }
}

/// The softmax of each row of `[rows, cols]` f16 device buffers: [`Softmax`] autotuned on its
/// first use of each shape (or dispatched from the on-disk table).
///
/// ```no_run
/// use tilus_kernels::norm::SoftmaxOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let softmax = SoftmaxOp::new(&device)?;
/// let (rows, cols) = (32, 8192);
/// let x = device.stream().clone_htod(&vec![half::f16::ZERO; rows * cols])?;
/// let mut y = device.stream().alloc_zeros::<half::f16>(rows * cols)?;
/// softmax.run(device.stream(), (rows, cols), &x, &mut y)?; // every y is 1 / 8192
/// # Ok(()) }
/// ```
pub struct SoftmaxOp {
    tuned: Autotuned<Softmax>,
}

impl SoftmaxOp {
    /// The kernel bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> crate::Result<SoftmaxOp> {
        Ok(SoftmaxOp {
            tuned: Softmax::autotuned(device)?,
        })
    }

    /// `y = softmax(x)` row by row, on `stream`; `x` and `y` hold `rows · cols` elements.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize),
        x: &CudaSlice<f16>,
        y: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, x.len(), y.len())?;
        Ok(self.tuned.launch(stream, (rows, cols, x, y))?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &Softmax,
        shape: (usize, usize),
        x: &[f16],
        y: &mut [f16],
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, x.len(), y.len())?;
        tilus::interpret(config, (rows, cols, x, y))?;
        Ok(())
    }
}

/// The kernel's `(rows, cols)` arguments, once the buffers' lengths match the shape.
fn checked_shape((rows, cols): (usize, usize), x: usize, y: usize) -> crate::Result<(i32, i32)> {
    const NAME: &str = "softmax";
    let dims = (dim(NAME, "rows", rows, 1)?, dim(NAME, "cols", cols, 1)?);
    let n = elements(NAME, rows, cols)?;
    length(NAME, "x", x, n)?;
    length(NAME, "y", y, n)?;
    Ok(dims)
}
