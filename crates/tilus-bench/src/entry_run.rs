//! A registry entry run once on either backend, over its workload: on the CPU interpreter
//! against the host reference ([`Entry::interpret`]), or loaded and launched on the GPU against
//! the device reference ([`Entry::run_on_gpu`]), each timed by its parts ([`RunReport`]).

use crate::registry::Entry;
use crate::size::Size;
use crate::workload::RunReport;
use crate::Result;
use std::sync::Arc;
use std::time::Instant;
use tilus::cudarc::driver::CudaStream;
use tilus::lang::DynScript;
use tilus::runtime::{Device, LoadedKernel};

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
