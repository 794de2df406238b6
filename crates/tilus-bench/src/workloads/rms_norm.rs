//! The RMSNorm workload: rows with row-dependent means (so the mean is not zero and a kernel
//! that centred the rows would fail), weights, the f64 reference, the check
//! ([`tilus_kernels::norm::rms_norm`]).

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

/// The RMSNorm workload (see the module documentation).
pub struct RmsNormRows;

/// The one instance the registry points at.
pub static RMS_NORM: RmsNormRows = RmsNormRows;

/// The `eps` every case passes.
pub const EPS: f32 = 1e-6;

/// f32 arithmetic and one f16 rounding against the exact values.
const TOLERANCE: Tolerance = Tolerance::F16;

/// The inputs of a case: rows in [-4, 4) shifted by a row-dependent mean in [-6, 6], weights in
/// [0.5, 1.5).
struct Inputs {
    x: Vec<f16>,
    w: Vec<f16>,
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
    })
}

/// The RMSNorm of each row, in f64 (into a buffer allocated fallibly).
fn reference(i: &Inputs, cols: usize, eps: f32) -> Result<Vec<f64>> {
    let mut out = alloc::try_vec("the RMSNorm reference", i.x.len(), 0.0f64)?;
    let n = cols.max(1);
    for (row, o) in i.x.chunks(n).zip(out.chunks_mut(n)) {
        let mean_square = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / n as f64;
        let rrms = 1.0 / (mean_square + eps as f64).sqrt();
        for (j, (y, v)) in o.iter_mut().zip(row).enumerate() {
            *y = v.to_f64() * rrms * i.w[j].to_f64();
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
            buffers::ptr(&self.y, stream),
        ]
    }

    fn reference(&mut self, _stream: &Arc<CudaStream>) -> Result<()> {
        // the host computes it in `check`, from the inputs brought back
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the RMSNorm check";
        let i = Inputs {
            x: buffers::download(stream, what, &self.x)?,
            w: buffers::download(stream, what, &self.w)?,
        };
        let y = buffers::download(stream, what, &self.y)?;
        check(&y, &i, self.cols)
    }
}

/// Host bytes of a case and its check: input and output, and the f64 reference.
fn host_bytes(n: usize) -> u128 {
    (2 + 2 + 8) * n as u128
}

/// Bytes an RMSNorm moves at `size`: the matrix read and written, `w` read once.
pub fn traffic_of(size: &Size) -> Result<u128> {
    let [rows, cols] = size.dims()?;
    Ok(rows::traffic(rows, cols, 2 * cols as u128))
}

impl Workload for RmsNormRows {
    fn dims(&self) -> &'static [&'static str] {
        rows::DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let [rows, cols] = size.dims()?;
        let what = format!("a {size} RMSNorm on the host");
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
        let what = format!("a {size} RMSNorm");
        let n = alloc::elements(&what, &[rows, cols])?;
        alloc::ensure(&what, host_bytes(n))?;
        let i = inputs(&what, rows, cols, seed)?;
        Ok(Box::new(OnDevice {
            rows,
            cols,
            x: buffers::upload(stream, &i.x)?,
            w: buffers::upload(stream, &i.w)?,
            y: buffers::poisoned(stream, &what, n)?,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the host's RMSNorm"
    }
}
