//! `tile_copy`: the smallest kernel with a TMA store. Each block brings one tile of the source
//! into shared memory with a TMA load, then writes it to the destination with a TMA store
//! (`shared_to_global`, `commit_group`, `wait_group`): the epilogue of the later matmuls, on
//! its own. Ragged edges need no masks: the load fills outside the source with zeros, the
//! store writes nothing outside the destination.
//!
//! The workload copies a `[rows, cols]` f16 matrix; `cols` is a compile-time constant (its
//! row pitch goes into the tensor maps' checks), `rows` a runtime argument. The check is
//! exact: every element of the destination must be the source's, bit for bit.

use crate::host::{dim, elements, length};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus::tune::Autotuned;

/// The kernel. Fields are compile-time hyperparameters: the tile each block copies.
///
/// ```
/// use tilus_kernels::copy::{TileCopy, TileCopyOp};
/// let src: Vec<half::f16> = (0..100 * 72).map(|i| half::f16::from_f32(i as f32)).collect();
/// let mut dst = vec![half::f16::NAN; src.len()];
/// TileCopyOp::interpret(&TileCopy::default(), (100, 72), &src, &mut dst)?;
/// assert_eq!(src, dst);
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_rows = [32, 64, 128, 256])]
#[tune(block_cols = [32, 64])]
pub struct TileCopy {
    /// Rows per block (a TMA box allows at most 256).
    pub block_rows: i32,
    /// Columns per block: 32 or 64 halves, rows of 64 or 128 bytes (one swizzle span).
    pub block_cols: i32,
}

impl Default for TileCopy {
    fn default() -> Self {
        TileCopy {
            block_rows: 64,
            block_cols: 64,
        }
    }
}

#[tilus::script]
impl Script for TileCopy {
    // rows: runtime; cols: a compile-time constant.
    type Args = (i32, Const<i32>, Ptr<f16>, PtrMut<f16>);

    fn body(&self, k: &mut Kernel, (rows, cols, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(rows, self.block_rows), cdiv(cols, self.block_cols)]);
        k.warps(1);
        let offset_r = k.let_i32(self.block_rows * k.block_idx().x);
        let offset_c = k.let_i32(self.block_cols * k.block_idx().y);
        let g_src = k.global_view::<f16>(src, [rows, cols]);
        let g_dst = k.global_view::<f16>(dst, [rows, cols]);
        let tile = k.shared_tensor::<f16>([self.block_rows, self.block_cols]);
        let loaded = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(loaded[0], tile.nbytes());
            k.tma()
                .global_to_shared(&g_src, &tile, [offset_r, offset_c], loaded[0]);
            k.mbarrier().wait(loaded[0], 0u32);
            k.tma()
                .shared_to_global(&tile, &g_dst, [offset_r, offset_c]);
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    }
}

/// A copy of a `[rows, cols]` f16 device buffer by [`TileCopy`], autotuned on its first use of
/// each shape. TMA needs rows of a multiple of 16 bytes: `cols` a multiple of 8 (the launch
/// refuses others, before anything runs).
///
/// ```no_run
/// use tilus_kernels::copy::TileCopyOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let copy = TileCopyOp::new(&device)?;
/// let (rows, cols) = (1000, 1024);
/// let src = device.stream().clone_htod(&vec![half::f16::ONE; rows * cols])?;
/// let mut dst = device.stream().alloc_zeros::<half::f16>(rows * cols)?;
/// copy.run(device.stream(), (rows, cols), &src, &mut dst)?;
/// # Ok(()) }
/// ```
pub struct TileCopyOp {
    tuned: Autotuned<TileCopy>,
}

impl TileCopyOp {
    /// The kernel bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> crate::Result<TileCopyOp> {
        Ok(TileCopyOp {
            tuned: TileCopy::autotuned(device)?,
        })
    }

    /// `dst = src` on `stream`; both hold `rows · cols` elements.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize),
        src: &CudaSlice<f16>,
        dst: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, src.len(), dst.len())?;
        Ok(self.tuned.launch(stream, (rows, cols, src, dst))?)
    }

    /// The same copy by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &TileCopy,
        shape: (usize, usize),
        src: &[f16],
        dst: &mut [f16],
    ) -> crate::Result<()> {
        let (rows, cols) = checked_shape(shape, src.len(), dst.len())?;
        tilus::interpret(config, (rows, cols, src, dst))?;
        Ok(())
    }
}

/// The kernel's `(rows, cols)` arguments, once both lengths match the shape.
fn checked_shape(
    (rows, cols): (usize, usize),
    src: usize,
    dst: usize,
) -> crate::Result<(i32, i32)> {
    const NAME: &str = "tile_copy";
    let dims = (dim(NAME, "rows", rows, 1)?, dim(NAME, "cols", cols, 1)?);
    let n = elements(NAME, rows, cols)?;
    length(NAME, "src", src, n)?;
    length(NAME, "dst", dst, n)?;
    Ok(dims)
}
