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

use crate::buffers;
use crate::harness::{compare_within, Check, Tolerance};
use crate::rows;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::{alloc, Result};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus::prelude::*;

/// The kernel. Fields are compile-time hyperparameters: the rows a block holds and its warps.
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
        let width = rows::tile_cols(cols.as_const().unwrap_or(1), threads) as i32;
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

/// The softmax workload (see the module documentation).
pub struct SoftmaxRows;

/// The one instance the registry points at.
pub static SOFTMAX: SoftmaxRows = SoftmaxRows;

/// f32 arithmetic and one f16 rounding against the exact values: a little more than half an
/// f16 ulp relative, and one f16 subnormal step for the tiny probabilities.
const TOLERANCE: Tolerance = Tolerance {
    rtol: 1e-3,
    atol: 6e-8,
};

/// Inputs in [-4, 4) shifted by -100, 0 or +100 by row: `exp` of an unshifted row of the
/// shifted ones overflows f32, so only a kernel that subtracts the maximum passes.
fn inputs(what: &str, rows: usize, cols: usize, seed: u64) -> Result<Vec<f16>> {
    let mut x: Vec<f16> = buffers::random(what, rows * cols, seed, -4.0, 4.0)?;
    for (r, row) in x.chunks_mut(cols.max(1)).enumerate() {
        let shift = 100.0 * (r % 3) as f64 - 100.0;
        for v in row {
            *v = f16::from_f64(v.to_f64() + shift);
        }
    }
    Ok(x)
}

/// The softmax of each row, in f64 (into a buffer allocated fallibly).
fn reference(x: &[f16], cols: usize) -> Result<Vec<f64>> {
    let mut out = alloc::try_vec("the softmax reference", x.len(), 0.0f64)?;
    for (row, o) in x.chunks(cols.max(1)).zip(out.chunks_mut(cols.max(1))) {
        let m = row
            .iter()
            .map(|v| v.to_f64())
            .fold(f64::NEG_INFINITY, f64::max);
        for (e, v) in o.iter_mut().zip(row) {
            *e = (v.to_f64() - m).exp();
        }
        let s: f64 = o.iter().sum();
        o.iter_mut().for_each(|e| *e /= s);
    }
    Ok(out)
}

fn check(y: &[f16], x: &[f16], cols: usize) -> Result<Check> {
    Ok(compare_within(
        y.iter().map(|v| v.to_f64()),
        reference(x, cols)?.into_iter(),
        TOLERANCE,
    ))
}

struct OnHost {
    rows: usize,
    cols: usize,
    x: Vec<f16>,
    y: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        vec![
            InterpValue::Int(self.rows as i64),
            InterpValue::Int(self.cols as i64),
            InterpValue::buffer(&self.x),
            InterpValue::buffer_mut(&mut self.y),
        ]
    }

    fn check(&self) -> Result<Check> {
        check(&self.y, &self.x, self.cols)
    }
}

struct OnDevice {
    rows: usize,
    cols: usize,
    x: CudaSlice<f16>,
    y: CudaSlice<f16>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        vec![
            HostValue::Int(self.rows as i64),
            HostValue::Int(self.cols as i64),
            buffers::ptr(&self.x, stream),
            buffers::ptr(&self.y, stream),
        ]
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the host computes it in `check`, from the input brought back
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the softmax check";
        let x = buffers::download(stream, what, &self.x)?;
        let y = buffers::download(stream, what, &self.y)?;
        check(&y, &x, self.cols)
    }
}

/// Host bytes of a case and its check: input and output, and the f64 reference.
fn host_bytes(n: usize) -> u128 {
    (2 + 2 + 8) * n as u128
}

impl Workload for SoftmaxRows {
    fn dims(&self) -> &'static [&'static str] {
        rows::DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} softmax on the host");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, host_bytes(n))?;
        let x = inputs(&what, rows, cols, seed)?;
        let y = alloc::try_vec(&what, n, f16::NAN)?;
        Ok(Box::new(OnHost { rows, cols, x, y }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} softmax");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, host_bytes(n))?;
        let x = inputs(&what, rows, cols, seed)?;
        Ok(Box::new(OnDevice {
            rows,
            cols,
            x: buffers::upload(stream, &x)?,
            y: buffers::poisoned(stream, &what, n)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the host's softmax"
    }
}
