//! A script bound to a GPU: traced, planned and compiled on first use of each set of
//! compile-time constant values, then launched with arguments checked first.

use super::build;
use crate::lang::{arg_names, ArgList, HostArgs};
use crate::runtime::{Device, LoadedKernel};
use crate::{Result, Script};
use cudarc::driver::CudaStream;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
        let consts = <S::Args as ArgList>::const_values(|i| values[i].as_int());
        let kernel = self.specialize(&consts)?;
        kernel.launch(stream, &values)
    }
}
