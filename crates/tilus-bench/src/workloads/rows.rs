//! A row-wise workload from a few plain pieces, for kernels over a `[rows, cols]` f16 matrix
//! whose rows are independent (norms, softmax-like kernels): say what the kernel's arguments
//! are, how to draw the inputs and what one row's output is, in f64, and [`RowWise`] is the
//! whole [`Workload`]: host and device cases, the check, allocations checked before they are
//! made.
//!
//! The kernel's arguments are `(rows, cols[, scalar], x, params.., y)`: `rows` and `cols` as
//! `i32` (`cols` usually a compile-time constant), an optional f32 scalar (an `eps`), the
//! input `x` `[rows, cols]`, one `[cols]` f16 vector per parameter (weights, biases), and the
//! output `y` `[rows, cols]`.
//!
//! ```
//! use tilus_bench::harness::Tolerance;
//! use tilus_bench::workloads::rows::{Param, RowWise};
//!
//! /// y = x / sqrt(mean(x²) + eps) · w, one row.
//! fn rms_norm(x: &[f64], params: &[Vec<f64>], eps: f64, y: &mut [f64]) {
//!     let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
//!     let scale = 1.0 / (mean_square + eps).sqrt();
//!     for (j, out) in y.iter_mut().enumerate() {
//!         *out = x[j] * scale * params[0][j];
//!     }
//! }
//!
//! static MY_RMS_NORM: RowWise = RowWise {
//!     name: "my_rms_norm",
//!     scalar: Some(1e-6),
//!     params: &[Param { lo: 0.5, hi: 1.5 }],
//!     x: (-4.0, 4.0),
//!     row_shift: |r| 3.0 * (r % 5) as f64 - 6.0,
//!     reference: rms_norm,
//!     tolerance: Tolerance::F16,
//! };
//! ```

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

/// A `[cols]` f16 parameter vector, drawn uniform in `[lo, hi)`.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// The lowest value drawn.
    pub lo: f64,
    /// Above the highest value drawn.
    pub hi: f64,
}

/// One row's output from its input, the parameter vectors and the scalar (0 without one), in
/// f64, into `y` (as long as the row).
pub type RowReference = fn(x: &[f64], params: &[Vec<f64>], scalar: f64, y: &mut [f64]);

/// A row-wise workload (see the module documentation).
#[derive(Clone, Copy)]
pub struct RowWise {
    /// The kernel's name, in messages.
    pub name: &'static str,
    /// The f32 scalar argument after `cols`, if the kernel takes one.
    pub scalar: Option<f32>,
    /// The parameter vectors after `x`, in order.
    pub params: &'static [Param],
    /// The range `x` is drawn from, before each row's shift.
    pub x: (f64, f64),
    /// What row `r`'s values are shifted by (so that rows differ in mean: 0 for none).
    pub row_shift: fn(usize) -> f64,
    /// One row's output.
    pub reference: RowReference,
    /// How far an output may be from the reference.
    pub tolerance: Tolerance,
}

/// The inputs of a case.
struct Inputs {
    x: Vec<f16>,
    params: Vec<Vec<f16>>,
}

impl RowWise {
    fn inputs(&self, what: &str, rows: usize, cols: usize, seed: u64) -> Result<Inputs> {
        let (lo, hi) = self.x;
        let mut x: Vec<f16> = buffers::random(what, rows * cols, seed, lo, hi)?;
        for (r, row) in x.chunks_mut(cols.max(1)).enumerate() {
            let shift = (self.row_shift)(r);
            for v in row {
                *v = f16::from_f64(v.to_f64() + shift);
            }
        }
        let params = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| buffers::random(what, cols, seed ^ (0x77 + i as u64), p.lo, p.hi))
            .collect::<Result<_>>()?;
        Ok(Inputs { x, params })
    }

    /// Every row's output, in f64 (into a buffer allocated fallibly).
    fn expected(&self, i: &Inputs, cols: usize) -> Result<Vec<f64>> {
        let what = format!("the {} reference", self.name);
        let mut out = alloc::try_vec(&what, i.x.len(), 0.0f64)?;
        let params: Vec<Vec<f64>> = i
            .params
            .iter()
            .map(|p| p.iter().map(|v| v.to_f64()).collect())
            .collect();
        let mut row64 = alloc::try_vec(&what, cols, 0.0f64)?;
        let scalar = self.scalar.map_or(0.0, f64::from);
        for (row, y) in i.x.chunks(cols.max(1)).zip(out.chunks_mut(cols.max(1))) {
            for (d, v) in row64.iter_mut().zip(row) {
                *d = v.to_f64();
            }
            (self.reference)(&row64, &params, scalar, y);
        }
        Ok(out)
    }

    fn check(&self, y: &[f16], i: &Inputs, cols: usize) -> Result<Check> {
        Ok(compare_within(
            y.iter().map(|v| v.to_f64()),
            self.expected(i, cols)?.into_iter(),
            self.tolerance,
        ))
    }

    /// Host bytes of a case and its check: input and output, the f64 reference and one row.
    fn host_bytes(n: usize) -> u128 {
        (2 + 2 + 8) * n as u128
    }

    /// Bytes one launch moves at `size`: the matrix read and written, each parameter vector
    /// read once.
    pub fn traffic(&self, size: &Size) -> Result<u128> {
        let [rows, cols] = size.dims()?;
        Ok(rows::traffic(
            rows,
            cols,
            2 * self.params.len() as u128 * cols as u128,
        ))
    }
}

struct OnHost {
    w: RowWise,
    rows: usize,
    cols: usize,
    i: Inputs,
    y: Vec<f16>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let mut args = vec![
            InterpValue::Int(self.rows as i64),
            InterpValue::Int(self.cols as i64),
        ];
        if let Some(s) = self.w.scalar {
            args.push(InterpValue::Float(f64::from(s)));
        }
        args.push(InterpValue::buffer(&self.i.x));
        for p in &self.i.params {
            args.push(InterpValue::buffer(p));
        }
        args.push(InterpValue::buffer_mut(&mut self.y));
        args
    }

    fn check(&self) -> Result<Check> {
        self.w.check(&self.y, &self.i, self.cols)
    }
}

struct OnDevice {
    w: RowWise,
    rows: usize,
    cols: usize,
    x: CudaSlice<f16>,
    params: Vec<CudaSlice<f16>>,
    y: CudaSlice<f16>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let mut args = vec![
            HostValue::Int(self.rows as i64),
            HostValue::Int(self.cols as i64),
        ];
        if let Some(s) = self.w.scalar {
            args.push(HostValue::Float(f64::from(s)));
        }
        args.push(buffers::ptr(&self.x, stream));
        for p in &self.params {
            args.push(buffers::ptr(p, stream));
        }
        args.push(buffers::ptr(&self.y, stream));
        args
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the host computes it in `check`, from the inputs brought back
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = format!("the {} check", self.w.name);
        let i = Inputs {
            x: buffers::download(stream, &what, &self.x)?,
            params: self
                .params
                .iter()
                .map(|p| buffers::download(stream, &what, p))
                .collect::<Result<_>>()?,
        };
        let y = buffers::download(stream, &what, &self.y)?;
        self.w.check(&y, &i, self.cols)
    }
}

impl Workload for RowWise {
    fn dims(&self) -> &'static [&'static str] {
        rows::DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} {} on the host", self.name);
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, RowWise::host_bytes(n))?;
        let i = self.inputs(&what, rows, cols, seed)?;
        let y = alloc::try_vec(&what, n, f16::NAN)?;
        Ok(Box::new(OnHost {
            w: *self,
            rows,
            cols,
            i,
            y,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} {}", self.name);
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, RowWise::host_bytes(n))?;
        let i = self.inputs(&what, rows, cols, seed)?;
        Ok(Box::new(OnDevice {
            w: *self,
            rows,
            cols,
            x: buffers::upload(stream, &i.x)?,
            params: i
                .params
                .iter()
                .map(|p| buffers::upload(stream, p))
                .collect::<Result<_>>()?,
            y: buffers::poisoned(stream, &what, n)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the host's f64 reference"
    }
}
