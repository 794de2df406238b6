//! The softmax workload: inputs whose rows overflow `exp` unless the maximum is subtracted,
//! the f64 reference, the check ([`tilus_kernels::norm::softmax`]).

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
