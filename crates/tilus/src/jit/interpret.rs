//! Scripts on the CPU: trace → plan → interpret, without a GPU (see [`crate::interp`] for what
//! the interpreter models and reports).

use super::{InterpArgList, InterpArgs};
use crate::interp::{run_program, Options, Report};
use crate::ir::{LaunchPlan, Program};
use crate::lang::ArgList;
use crate::{Result, Script};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Traces, checks and plans a script for the arguments' constant values, then interprets it.
/// The arguments are the script's `Args` with host slices for buffers: `&[T]` for `Ptr<T>`,
/// `&mut [T]` for `PtrMut<T>` (outputs are written back into them).
pub fn interpret<S: Script>(script: &S, args: InterpArgs<'_, S::Args>) -> Result<Report>
where
    S::Args: InterpArgList,
{
    interpret_with(script, args, &Options::default())
}

/// [`interpret`] with options.
pub fn interpret_with<S: Script>(
    script: &S,
    mut args: InterpArgs<'_, S::Args>,
    opts: &Options,
) -> Result<Report>
where
    S::Args: InterpArgList,
{
    let mut values = <S::Args as InterpArgList>::values(&mut args);
    let consts = <S::Args as ArgList>::const_values(|i| values.get(i).and_then(|v| v.as_int()));
    let program = crate::lang::trace(script, &consts)?;
    let (program, plan) = crate::passes::compile_program(program)?;
    run_program(&program, &plan, &mut values, opts)
}

/// A planned program and its launch plan, shared between runs.
type Planned = Arc<(Program, LaunchPlan)>;

/// A script bound to the interpreter, planned once for each new set of constant values (the
/// parallel of [`crate::Jit`], which needs a GPU).
pub struct Interpreter<S: Script> {
    script: S,
    options: Options,
    programs: Mutex<HashMap<Vec<i64>, Planned>>,
}

impl<S: Script> Interpreter<S> {
    /// Binds a script (its hyperparameters fixed) to the interpreter.
    pub fn new(script: S) -> Interpreter<S> {
        Interpreter {
            script,
            options: Options::default(),
            programs: Mutex::new(HashMap::new()),
        }
    }

    /// The same, with options.
    pub fn with_options(script: S, options: Options) -> Interpreter<S> {
        Interpreter {
            options,
            ..Interpreter::new(script)
        }
    }

    /// The script.
    pub fn script(&self) -> &S {
        &self.script
    }

    /// The planned program and launch plan for these constant values.
    pub fn specialize(&self, consts: &[i64]) -> Result<Arc<(Program, LaunchPlan)>> {
        if let Some(p) = self
            .programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(consts)
        {
            return Ok(p.clone());
        }
        let program = crate::lang::trace(&self.script, consts)?;
        let planned = Arc::new(crate::passes::compile_program(program)?);
        self.programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(consts.to_vec(), planned.clone());
        Ok(planned)
    }

    /// Runs the script on host buffers (see [`interpret`]).
    pub fn run(&self, mut args: InterpArgs<'_, S::Args>) -> Result<Report>
    where
        S::Args: InterpArgList,
    {
        let mut values = <S::Args as InterpArgList>::values(&mut args);
        let consts = <S::Args as ArgList>::const_values(|i| values.get(i).and_then(|v| v.as_int()));
        let planned = self.specialize(&consts)?;
        run_program(&planned.0, &planned.1, &mut values, &self.options)
    }
}

impl<S: Script> super::Jit<S> {
    /// Runs this Jit's script with the interpreter instead of the GPU, on host buffers (see
    /// [`interpret`]): the same script, checked on the CPU, e.g. when `TILUS_BACKEND=interp`.
    pub fn interpret(&self, args: InterpArgs<'_, S::Args>) -> Result<Report>
    where
        S::Args: InterpArgList,
    {
        interpret(self.script(), args)
    }
}
