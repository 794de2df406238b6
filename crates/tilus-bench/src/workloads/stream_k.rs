//! Stream-K ([`tilus_kernels::gemm::stream_k`]) as a workload of its own (`tilus run
//! hopper_matmul_stream_k`): the arguments `(m, n, k, a, b, c, workspace, flags)`, the
//! workspace poisoned with NaN and the flags zero, C checked against the matmul reference.
//! (As a matmul version, `tilus bench matmul --versions stream_k`, it is the library's
//! [`tilus_kernels::gemm::stream_k::StreamK`], in `versions.rs`.)

use crate::buffers::{drv, poisoned, ptr};
use crate::harness::Check;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::workloads::matmul::MATMUL;
use crate::{alloc, Result};
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus_kernels::gemm::stream_k::{flags_len, workspace_elements};

/// The stream-K kernel's workload (see the module documentation): the matmul workload's cases
/// with the workspace and the flags after C.
pub struct StreamKMatmul;

/// The one instance the registry points at.
pub static STREAM_K_MATMUL: StreamKMatmul = StreamKMatmul;

impl Workload for StreamKMatmul {
    fn dims(&self) -> &'static [&'static str] {
        MATMUL.dims()
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let what = format!("a {size} stream-K matmul on the host");
        let matmul = MATMUL.host_case(size, seed)?;
        let w = alloc::try_vec(&what, workspace_elements(), f32::NAN)?;
        let flags = alloc::try_vec(&what, flags_len(), 0i32)?;
        Ok(Box::new(OnHost { matmul, w, flags }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let matmul = MATMUL.device_case(stream, size, seed)?;
        let w = poisoned::<f32>(stream, "the stream-K workspace", workspace_elements())?;
        let flags = stream
            .alloc_zeros::<i32>(flags_len())
            .map_err(drv("cuMemAlloc"))?;
        Ok(Box::new(OnDevice { matmul, w, flags }))
    }

    fn device_reference(&self) -> &'static str {
        MATMUL.device_reference()
    }
}

struct OnHost {
    matmul: Box<dyn HostCase>,
    w: Vec<f32>,
    flags: Vec<i32>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let mut args = self.matmul.args();
        args.push(InterpValue::buffer_mut(&mut self.w));
        args.push(InterpValue::buffer_mut(&mut self.flags));
        args
    }

    fn check(&self) -> Result<Check> {
        self.matmul.check()
    }
}

struct OnDevice {
    matmul: Box<dyn DeviceCase>,
    w: CudaSlice<f32>,
    flags: CudaSlice<i32>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let mut args = self.matmul.args(stream);
        args.push(ptr(&self.w, stream));
        args.push(ptr(&self.flags, stream));
        args
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        self.matmul.reference(stream)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        self.matmul.check(stream)
    }
}
