//! What a kernel of the registry computes, apart from how: the dimensions of its size, random
//! inputs, a reference and a comparison, on the host (for the interpreter) and on the device
//! (for the GPU). A matmul is one workload ([`crate::workloads::matmul::Matmul`]); a copy or a reduction is
//! another, with its own dimensions and arguments. Running a registry entry on either backend
//! over these pieces is written once, in [`crate::entry_run`].

use crate::harness::Check;
use crate::size::Size;
use crate::Result;
use std::sync::Arc;
use std::time::Duration;
use tilus::cudarc::driver::CudaStream;
use tilus::interp::InterpValue;
use tilus::lang::HostValue;

/// The host side of one kind of problem.
pub trait Workload: Send + Sync {
    /// The names of the size's dimensions, in order (`["m", "n", "k"]`).
    fn dims(&self) -> &'static [&'static str];
    /// Random inputs drawn from `seed` and outputs poisoned with NaN, in host memory (checked
    /// against what the machine has and allocated fallibly).
    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>>;
    /// The same in device memory.
    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>>;
    /// What the device reference is called in reports (`cuBLAS`).
    fn device_reference(&self) -> &'static str;
}

/// One problem in host memory.
pub trait HostCase: Send {
    /// The kernel's arguments, in order (constants included), for the interpreter.
    fn args(&mut self) -> Vec<InterpValue<'_>>;
    /// Computes the CPU reference and compares the outputs with it.
    fn check(&self) -> Result<Check>;
}

/// One problem in device memory.
pub trait DeviceCase {
    /// The kernel's arguments, in order (constants included), for a launch.
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue>;
    /// Computes the reference on the device.
    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()>;
    /// Compares the outputs with the reference.
    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check>;
}

/// What one checked run did, and how long each part took.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// Trace and passes (and, on the GPU, NVRTC or the cache, and loading).
    pub prepare: Duration,
    /// The kernel: the interpreter, or the launch and its completion on the GPU.
    pub kernel: Duration,
    /// The reference.
    pub reference: Duration,
    /// The interpreter's account (interpreted runs).
    pub interp: Option<tilus::interp::Report>,
    /// Whether the compiled program came from the cache (GPU runs).
    pub from_cache: bool,
    /// The outputs against the reference.
    pub check: Check,
}
