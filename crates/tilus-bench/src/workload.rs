//! What a kernel of the registry computes, apart from how: the dimensions of its size, random
//! inputs, a reference and a comparison, on the host (for the interpreter) and on the device
//! (for the GPU). A matmul is one workload ([`crate::workloads::matmul::Matmul`]); a copy or a reduction is
//! another, with its own dimensions and arguments. Running a kernel on either backend is
//! written once, here, over these pieces.

use crate::harness::Check;
use crate::registry::Entry;
use crate::size::Size;
use crate::Result;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tilus::cudarc::driver::CudaStream;
use tilus::interp::InterpValue;
use tilus::lang::{DynScript, HostValue};
use tilus::runtime::{Device, LoadedKernel};

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

fn synchronize(stream: &Arc<CudaStream>) -> Result<()> {
    stream.synchronize().map_err(|e| tilus::Error::Driver {
        call: "cuStreamSynchronize",
        message: format!("{e:?}"),
    })?;
    Ok(())
}

impl Entry {
    /// Runs `script` (a configuration of this entry) once on the CPU interpreter on random
    /// inputs of `size`, and checks it against the CPU reference.
    pub fn interpret(
        &self,
        script: &dyn DynScript,
        size: &Size,
        seed: u64,
        opts: &tilus::interp::Options,
    ) -> Result<RunReport> {
        let t0 = Instant::now();
        let program = script.trace(&(self.consts)(size))?;
        let (program, plan) = tilus::passes::compile_program(program)?;
        let prepare = t0.elapsed();
        let mut case = self.workload.host_case(size, seed)?;
        let t1 = Instant::now();
        let report = {
            let mut values = case.args();
            tilus::interp::run_program(&program, &plan, &mut values, opts)?
        };
        let kernel = t1.elapsed();
        let t2 = Instant::now();
        let check = case.check()?;
        Ok(RunReport {
            prepare,
            kernel,
            reference: t2.elapsed(),
            interp: Some(report),
            from_cache: false,
            check,
        })
    }

    /// Traces, checks and compiles `script` (a configuration of this entry) for `size` and loads
    /// it on `device`; also says whether the compiled program came from the cache.
    pub fn load(
        &self,
        script: &dyn DynScript,
        size: &Size,
        device: &Device,
    ) -> Result<(LoadedKernel, bool)> {
        let program = script.trace(&(self.consts)(size))?;
        let (program, plan) = tilus::passes::compile_program(program)?;
        let compiled = tilus::compile::compile(&program, &plan)?;
        let names = program.params.iter().map(|p| p.name.clone()).collect();
        let kernel = LoadedKernel::load(device, &compiled, names)?;
        Ok((kernel, compiled.from_cache))
    }

    /// Compiles `script` (a configuration of this entry) for `size`, runs it once on the GPU on
    /// random inputs and checks it against the device reference.
    pub fn run_on_gpu(
        &self,
        script: &dyn DynScript,
        size: &Size,
        seed: u64,
        device: &Device,
    ) -> Result<RunReport> {
        let stream = device.stream().clone();
        let t0 = Instant::now();
        let (kernel, from_cache) = self.load(script, size, device)?;
        let prepare = t0.elapsed();
        let mut case = self.workload.device_case(&stream, size, seed)?;
        let t1 = Instant::now();
        case.reference(&stream)?;
        synchronize(&stream)?;
        let reference = t1.elapsed();
        let t2 = Instant::now();
        kernel.launch(&stream, &case.args(&stream))?;
        synchronize(&stream)?;
        let kernel_time = t2.elapsed();
        let check = case.check(&stream)?;
        Ok(RunReport {
            prepare,
            kernel: kernel_time,
            reference,
            interp: None,
            from_cache,
            check,
        })
    }
}
