//! The tile-copy workload: random sources, the destination checked bit for bit
//! ([`tilus_kernels::copy::tile`]).

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
