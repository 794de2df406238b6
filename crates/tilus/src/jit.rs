//! Scripts, end to end: trace, check, plan, compile (or hit the cache), load and launch.
//! One specialization per set of compile-time constant values.

use crate::compile::{self, CompiledProgram};
use crate::lang::{ArgList, HostArgs, HostValue};
use crate::runtime::{Device, LoadedKernel};
use crate::{Result, Script};
use cudarc::driver::CudaStream;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Traces, checks and compiles a script for the given constant values. Needs NVRTC but no GPU.
pub fn build<S: Script>(script: &S, consts: &[i64]) -> Result<CompiledProgram> {
    let program = crate::lang::trace(script, consts)?;
    let (program, plan) = crate::passes::compile_program(program)?;
    compile::compile(&program, &plan)
}

/// The CUDA source a script generates for the given constant values (no NVRTC, no GPU).
pub fn emit<S: Script>(script: &S, consts: &[i64]) -> Result<String> {
    let program = crate::lang::trace(script, consts)?;
    let (program, plan) = crate::passes::compile_program(program)?;
    Ok(crate::codegen::emit_cuda(&program, &plan))
}

/// The argument names of a script, as the generated code and error messages use them.
pub fn arg_names<S: Script>() -> Vec<String> {
    let given = S::arg_names();
    (0..<S::Args as ArgList>::LEN)
        .map(|i| {
            given
                .get(i)
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("arg{i}"))
        })
        .collect()
}

/// A script bound to a device, compiled on first use for each new set of constant values.
pub struct Jit<S: Script> {
    script: S,
    device: Device,
    kernels: Mutex<HashMap<Vec<i64>, Arc<LoadedKernel>>>,
}

impl<S: Script> Jit<S> {
    /// Binds a script (its hyperparameters fixed) to a device.
    pub fn new(script: S, device: &Device) -> Jit<S> {
        Jit {
            script,
            device: device.clone(),
            kernels: Mutex::new(HashMap::new()),
        }
    }

    /// The script.
    pub fn script(&self) -> &S {
        &self.script
    }

    /// The loaded kernel for these constant values, compiling it if needed.
    pub fn specialize(&self, consts: &[i64]) -> Result<Arc<LoadedKernel>> {
        if let Some(k) = self
            .kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(consts)
        {
            return Ok(k.clone());
        }
        let compiled = build(&self.script, consts)?;
        let k = Arc::new(LoadedKernel::load(
            &self.device,
            &compiled,
            arg_names::<S>(),
        )?);
        self.kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(consts.to_vec(), k.clone());
        Ok(k)
    }

    /// Launches on `stream` with the script's typed arguments; arguments are checked before
    /// anything is launched.
    pub fn launch(&self, stream: &CudaStream, args: HostArgs<'_, S::Args>) -> Result<()> {
        let values = <S::Args as ArgList>::host_values(&args, stream);
        let consts: Vec<i64> = <S::Args as ArgList>::const_positions()
            .into_iter()
            .map(|i| match values[i] {
                HostValue::Int(v) => v,
                HostValue::Ptr { .. } => 0,
            })
            .collect();
        let kernel = self.specialize(&consts)?;
        kernel.launch(stream, &values)
    }
}
