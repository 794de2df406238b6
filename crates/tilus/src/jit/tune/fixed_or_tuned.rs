//! A script's kernel with its configuration either given or chosen by the autotuner: what a
//! benchmark or an entry point holds when the user may pin the hyperparameters (`--set`) or
//! leave them to the search, so that callers launch and report the configuration one way.

use super::{Autotuned, Tunable};
use crate::ir::HostValue;
use crate::lang::{ArgList, HostArgs};
use crate::{Jit, Result};
use cudarc::driver::CudaStream;
use std::path::PathBuf;
use std::sync::Arc;

/// See the module documentation.
pub enum FixedOrTuned<S: Tunable> {
    /// One configuration, compiled on first launch.
    Fixed(Jit<S>),
    /// The script's search space, tuned on first use of each key.
    Tuned(Autotuned<S>),
}

impl<S: Tunable + Clone> FixedOrTuned<S> {
    /// Launches with the configuration for these arguments.
    pub fn launch(&self, stream: &Arc<CudaStream>, args: HostArgs<'_, S::Args>) -> Result<()> {
        self.launch_config(stream, args).map(|_| ())
    }

    /// Launches and returns the configuration that ran: one decision for the launch and
    /// whatever the caller does next with the configuration (a second kernel sized by it).
    pub fn launch_config(
        &self,
        stream: &Arc<CudaStream>,
        args: HostArgs<'_, S::Args>,
    ) -> Result<S> {
        match self {
            FixedOrTuned::Fixed(j) => {
                j.launch(stream, args)?;
                Ok(j.script().clone())
            }
            FixedOrTuned::Tuned(t) => {
                let values = <S::Args as ArgList>::host_values(&args, stream);
                let chosen = t.choose(stream, &values)?;
                chosen.kernel.launch(stream, &values)?;
                Ok(chosen.config.clone())
            }
        }
    }

    /// The configuration for these argument values (tuning first when needed), without
    /// launching.
    pub fn config(&self, stream: &Arc<CudaStream>, values: &[HostValue]) -> Result<S> {
        match self {
            FixedOrTuned::Fixed(j) => Ok(j.script().clone()),
            FixedOrTuned::Tuned(t) => Ok(t.choose(stream, values)?.config.clone()),
        }
    }

    /// Where the tuning decisions are kept, when it tunes.
    pub fn table_path(&self) -> Option<&PathBuf> {
        match self {
            FixedOrTuned::Fixed(_) => None,
            FixedOrTuned::Tuned(t) => Some(t.table_path()),
        }
    }
}
