//! `tile_copy`: the smallest kernel with a TMA store. Each block brings one tile of the source
//! into shared memory with a TMA load, then writes it to the destination with a TMA store
//! (`shared_to_global`, `commit_group`, `wait_group`): the epilogue of the later matmuls, on
//! its own. Ragged edges need no masks: the load fills outside the source with zeros, the
//! store writes nothing outside the destination.
//!
//! The workload copies a `[rows, cols]` f16 matrix; `cols` is a compile-time constant (its
//! row pitch goes into the tensor maps' checks), `rows` a runtime argument. The check is
//! exact: every element of the destination must be the source's, bit for bit.

use crate::alloc;
use crate::buffers::{self, ptr};
use crate::harness::Check;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus::prelude::*;

/// The kernel. Fields are compile-time hyperparameters: the tile each block copies.
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

/// The dimensions of a copy's size.
pub const DIMS: &[&str] = &["rows", "cols"];

/// The copy workload (see the module documentation).
pub struct Copy;

/// The one instance the registry points at.
pub static COPY: Copy = Copy;

/// The copy's compile-time constant: `cols`.
pub fn consts(size: &Size) -> Vec<i64> {
    vec![size.values()[1] as i64]
}

/// The destination against the source, bit for bit.
fn compare_exact(actual: &[f16], expect: &[f16]) -> Check {
    let mut c = Check {
        total: actual.len(),
        ..Check::default()
    };
    for (x, y) in actual.iter().zip(expect) {
        if !x.is_finite() {
            c.non_finite += 1;
        } else if x.to_bits() != y.to_bits() {
            c.mismatches += 1;
            c.max_abs = c.max_abs.max((x.to_f64() - y.to_f64()).abs());
        }
    }
    c.rel_err = if c.mismatches == 0 && c.non_finite == 0 {
        0.0
    } else {
        f64::NAN
    };
    c
}

struct OnHost {
    rows: usize,
    cols: usize,
    src: Vec<f16>,
    dst: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        vec![
            InterpValue::Int(self.rows as i64),
            InterpValue::Int(self.cols as i64),
            InterpValue::buffer(&self.src),
            InterpValue::buffer_mut(&mut self.dst),
        ]
    }

    fn check(&self) -> Result<Check> {
        Ok(compare_exact(&self.dst, &self.src))
    }
}

struct OnDevice {
    rows: usize,
    cols: usize,
    src: CudaSlice<f16>,
    dst: CudaSlice<f16>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        vec![
            HostValue::Int(self.rows as i64),
            HostValue::Int(self.cols as i64),
            ptr(&self.src, stream),
            ptr(&self.dst, stream),
        ]
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the reference of a copy is its source
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the copy check";
        let mut actual = alloc::try_vec(what, self.dst.len(), f16::ZERO)?;
        let mut expect = alloc::try_vec(what, self.src.len(), f16::ZERO)?;
        stream
            .memcpy_dtoh(&self.dst, &mut actual)
            .map_err(buffers::drv("cuMemcpyDtoH"))?;
        stream
            .memcpy_dtoh(&self.src, &mut expect)
            .map_err(buffers::drv("cuMemcpyDtoH"))?;
        Ok(compare_exact(&actual, &expect))
    }
}

impl Workload for Copy {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} copy on the host");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, 4 * n as u128)?;
        let src = buffers::random(&what, n, seed, -4.0, 4.0)?;
        let dst = alloc::try_vec(&what, n, f16::NAN)?;
        Ok(Box::new(OnHost {
            rows,
            cols,
            src,
            dst,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} copy");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, 2 * n as u128)?;
        let src = stream
            .clone_htod(&buffers::random(&what, n, seed, -4.0, 4.0)?)
            .map_err(buffers::drv("cuMemcpyHtoD"))?;
        let dst = stream
            .clone_htod(&alloc::try_vec(&what, n, f16::NAN)?)
            .map_err(buffers::drv("cuMemcpyHtoD"))?;
        Ok(Box::new(OnDevice {
            rows,
            cols,
            src,
            dst,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the source"
    }
}
