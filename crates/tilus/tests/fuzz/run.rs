//! Running a case: trace, apply the edits, run every pass, emit CUDA; how far it got, or the
//! panic it caused (message and location).

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use tilus::ir::{DType, Program};

use crate::model::{Case, Dt, Edit};
use crate::replay::Fuzz;

fn dtype(d: Dt) -> DType {
    match d {
        Dt::F16 => DType::F16,
        Dt::Bf16 => DType::BF16,
        Dt::F32 => DType::F32,
        Dt::I32 => DType::I32,
    }
}

/// Applies the edits to a traced program (an edit of something that does not exist does
/// nothing).
pub fn apply(p: &mut Program, edits: &[Edit]) {
    for e in edits {
        match *e {
            Edit::Register(i, d) if !p.registers.is_empty() => {
                let n = p.registers.len();
                p.registers[i % n].dtype = dtype(d);
            }
            Edit::Shared(i, d) if !p.shareds.is_empty() => {
                let n = p.shareds.len();
                p.shareds[i % n].dtype = dtype(d);
            }
            Edit::Global(i, d) if !p.globals.is_empty() => {
                let n = p.globals.len();
                p.globals[i % n].dtype = dtype(d);
            }
            _ => {}
        }
    }
}

/// How far a case got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `trace` returned an error.
    TraceFailed,
    /// `compile_program` returned an error.
    CompileFailed,
    /// CUDA was emitted.
    Emitted,
}

fn run_case(case: &Case) -> Stage {
    let program = match tilus::trace(&Fuzz(case.ops.clone()), &case.consts) {
        Ok(p) => p,
        Err(e) => {
            std::hint::black_box(e.to_string());
            return Stage::TraceFailed;
        }
    };
    let mut program = program;
    apply(&mut program, &case.edits);
    std::hint::black_box(tilus::ir::print_program(&program));
    let (program, plan) = match tilus::passes::compile_program(program) {
        Ok(p) => p,
        Err(e) => {
            std::hint::black_box(e.to_string());
            return Stage::CompileFailed;
        }
    };
    std::hint::black_box(tilus::ir::print_program(&program));
    std::hint::black_box(tilus::codegen::emit_cuda(&program, &plan));
    Stage::Emitted
}

thread_local! {
    /// Whether panics on this thread are expected (caught and reported by the property).
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The last caught panic: message and location.
    static PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Installs a panic hook that records panics of [`catching`] instead of printing them (the
/// shrinker provokes many).
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(|q| q.get()) {
                let bt = if std::env::var_os("TILUS_FUZZ_BACKTRACE").is_some() {
                    format!("\n{}", std::backtrace::Backtrace::force_capture())
                } else {
                    String::new()
                };
                PANIC.with(|p| *p.borrow_mut() = format!("{info}{bt}"));
            } else {
                default(info)
            }
        }));
    });
}

/// Runs a case; a panic becomes an error carrying its message and location.
pub fn catching(case: &Case) -> Result<Stage, String> {
    install_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(|| run_case(case)));
    QUIET.with(|q| q.set(false));
    r.map_err(|_| PANIC.with(|p| p.borrow().clone()))
}
