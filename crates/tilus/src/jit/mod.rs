//! The compositions: scripts end to end. Every other module does one step (`lang` traces,
//! `passes` check and plan, `codegen` emits, `compile` runs NVRTC, `runtime` loads and
//! launches, `interp` runs a planned program on the CPU); only the modules here chain them:
//!
//! - [`build`] and [`emit`]: trace → plan → CUDA (→ cubin);
//! - [`Jit`] (`gpu.rs`): build → load → launch, one specialization per set of compile-time
//!   constant values;
//! - [`interpret`] and [`Interpreter`] (`interpret.rs`): trace → plan → interpret;
//! - [`tune`]: search spaces, parallel builds, benchmarks and the dispatch table.

mod gpu;
mod interpret;
mod interpret_args;
pub mod tune;

pub use gpu::Jit;
pub use interpret::{interpret, interpret_with, Interpreter};
pub use interpret_args::{InterpArg, InterpArgList, InterpArgs};

use crate::compile::{self, CompiledProgram};
use crate::{Result, Script};

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
