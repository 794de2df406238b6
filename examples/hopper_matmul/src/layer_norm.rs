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
        let width = rows::tile_cols(n, threads);
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

/// The layer-norm workload (see the module documentation).
pub struct LayerNormRows;

/// The one instance the registry points at.
pub static LAYER_NORM: LayerNormRows = LayerNormRows;

/// The `eps` every case passes.
pub const EPS: f32 = 1e-5;

/// f32 arithmetic and one f16 rounding against the exact values.
const TOLERANCE: Tolerance = Tolerance::F16;

/// The inputs of a case: rows in [-4, 4) shifted by a row-dependent mean in [-6, 6], weights in
/// [0.5, 1.5), biases in [-1, 1).
struct Inputs {
    x: Vec<f16>,
    w: Vec<f16>,
    b: Vec<f16>,
}

fn inputs(what: &str, rows: usize, cols: usize, seed: u64) -> Result<Inputs> {
    let mut x: Vec<f16> = buffers::random(what, rows * cols, seed, -4.0, 4.0)?;
    for (r, row) in x.chunks_mut(cols.max(1)).enumerate() {
        let shift = 3.0 * (r % 5) as f64 - 6.0;
        for v in row {
            *v = f16::from_f64(v.to_f64() + shift);
        }
    }
    Ok(Inputs {
        x,
        w: buffers::random(what, cols, seed ^ 0x77, 0.5, 1.5)?,
        b: buffers::random(what, cols, seed ^ 0xbb, -1.0, 1.0)?,
    })
}

/// The layer norm of each row, in f64 (into a buffer allocated fallibly).
fn reference(i: &Inputs, cols: usize, eps: f32) -> Result<Vec<f64>> {
    let mut out = alloc::try_vec("the layer-norm reference", i.x.len(), 0.0f64)?;
    let n = cols.max(1);
    for (row, o) in i.x.chunks(n).zip(out.chunks_mut(n)) {
        let mean = row.iter().map(|v| v.to_f64()).sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v.to_f64() - mean).powi(2)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps as f64).sqrt();
        for (j, (y, v)) in o.iter_mut().zip(row).enumerate() {
            *y = (v.to_f64() - mean) * rstd * i.w[j].to_f64() + i.b[j].to_f64();
        }
    }
    Ok(out)
}

fn check(y: &[f16], i: &Inputs, cols: usize) -> Result<Check> {
    Ok(compare_within(
        y.iter().map(|v| v.to_f64()),
        reference(i, cols, EPS)?.into_iter(),
        TOLERANCE,
    ))
}

struct OnHost {
    rows: usize,
    cols: usize,
    i: Inputs,
    y: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        vec![
            InterpValue::Int(self.rows as i64),
            InterpValue::Int(self.cols as i64),
            InterpValue::Float(EPS as f64),
            InterpValue::buffer(&self.i.x),
            InterpValue::buffer(&self.i.w),
            InterpValue::buffer(&self.i.b),
            InterpValue::buffer_mut(&mut self.y),
        ]
    }

    fn check(&self) -> Result<Check> {
        check(&self.y, &self.i, self.cols)
    }
}

struct OnDevice {
    rows: usize,
    cols: usize,
    x: CudaSlice<f16>,
    w: CudaSlice<f16>,
    b: CudaSlice<f16>,
    y: CudaSlice<f16>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        vec![
            HostValue::Int(self.rows as i64),
            HostValue::Int(self.cols as i64),
            HostValue::Float(EPS as f64),
            buffers::ptr(&self.x, stream),
            buffers::ptr(&self.w, stream),
            buffers::ptr(&self.b, stream),
            buffers::ptr(&self.y, stream),
        ]
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the host computes it in `check`, from the inputs brought back
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the layer-norm check";
        let i = Inputs {
            x: buffers::download(stream, what, &self.x)?,
            w: buffers::download(stream, what, &self.w)?,
            b: buffers::download(stream, what, &self.b)?,
        };
        let y = buffers::download(stream, what, &self.y)?;
        check(&y, &i, self.cols)
    }
}

/// Host bytes of a case and its check: input and output, and the f64 reference.
fn host_bytes(n: usize) -> u128 {
    (2 + 2 + 8) * n as u128
}

/// Bytes a layer norm moves at `size`: the matrix read and written, `w` and `b` read once.
pub fn traffic_of(size: &Size) -> Result<u128> {
    let [rows, cols] = size.dims()?;
    Ok(rows::traffic(rows, cols, 2 * 2 * cols as u128))
}

impl Workload for LayerNormRows {
    fn dims(&self) -> &'static [&'static str] {
        rows::DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} layer norm on the host");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, host_bytes(n))?;
        let i = inputs(&what, rows, cols, seed)?;
        let y = alloc::try_vec(&what, n, f16::NAN)?;
        Ok(Box::new(OnHost { rows, cols, i, y }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} layer norm");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, host_bytes(n))?;
        let i = inputs(&what, rows, cols, seed)?;
        Ok(Box::new(OnDevice {
            rows,
            cols,
            x: buffers::upload(stream, &i.x)?,
            w: buffers::upload(stream, &i.w)?,
            b: buffers::upload(stream, &i.b)?,
            y: buffers::poisoned(stream, &what, n)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the host's layer norm"
    }
}
