//! The interpreter's form: a script that passes the verifier and the planner runs on the CPU
//! interpreter, and the fault it must end in is checked: its kind, its first diagnostic's
//! phrases, and the call that diagnostic points at (marked with
//! `mark("key", line!(), call)`).

use tilus::interp::{Fault, InterpValue, Report};
use tilus::ir::{LaunchPlan, Program};
use tilus::prelude::*;
use tilus::{Diagnostic, Error, InterpArgList};

use super::{cache_dir, clear_marks, marked, Body};

/// Interprets `body` with `args` (markers cleared first).
pub fn interpret<A: InterpArgList + 'static>(
    body: fn(&mut Kernel, Handles<A>),
    args: tilus::InterpArgs<'_, A>,
) -> tilus::Result<Report> {
    run(&Body::<A>(body), args)
}

/// Interprets `script` with `args` (markers cleared first).
pub fn run<S: Script>(script: &S, args: tilus::InterpArgs<'_, S::Args>) -> tilus::Result<Report>
where
    S::Args: InterpArgList,
{
    cache_dir();
    clear_marks();
    tilus::interpret(script, args)
}

/// Plans a script without the verifier (whose static rules reject the bugs some tests make
/// the interpreter find at run time). Markers are cleared first.
pub fn plan_unverified<S: Script>(script: &S) -> (Program, LaunchPlan) {
    clear_marks();
    let program = tilus::trace(script, &[]).unwrap();
    let program = tilus::passes::infer_layout::run(program).unwrap();
    let program = tilus::passes::plan_shared::run(program).unwrap();
    tilus::passes::lower::run(program)
}

/// Interprets a planned program.
pub fn run_planned(
    program: &Program,
    plan: &LaunchPlan,
    args: &mut [InterpValue<'_>],
) -> tilus::Result<Report> {
    tilus::interp::run_program(program, plan, args, &Default::default())
}

/// The fault and diagnostics of a run that must fail.
#[track_caller]
pub fn fault<T: std::fmt::Debug>(r: tilus::Result<T>) -> (Fault, Vec<Diagnostic>) {
    match r {
        Err(Error::Interp {
            fault, diagnostics, ..
        }) => (fault, diagnostics),
        Err(e) => panic!("expected Error::Interp, got another error: {e}"),
        Ok(rep) => panic!("expected Error::Interp, but the kernel ran: {rep:?}"),
    }
}

/// The first diagnostic is `kind`, contains every phrase and points at the call marked `key`.
#[track_caller]
pub fn expect_fault<T: std::fmt::Debug>(
    r: tilus::Result<T>,
    kind: Fault,
    key: &str,
    phrases: &[&str],
) -> Vec<Diagnostic> {
    let (f, d) = fault(r);
    assert_eq!(f, kind, "{d:#?}");
    let first = &d[0];
    let at = marked(key).unwrap_or_else(|| panic!("`{key}` was not marked"));
    assert_eq!(
        first.loc.file, at.file,
        "diagnostic points at {}, not at the file of the marked call `{key}`: {first}",
        first.loc
    );
    assert_eq!(
        first.loc.line, at.line,
        "diagnostic points at line {}, the offending call `{key}` is on line {}: {first}",
        first.loc.line, at.line
    );
    for p in phrases {
        assert!(first.message.contains(p), "{p:?} not in {first}");
    }
    d
}

/// Some diagnostic (not the first) points at the call marked `key`.
#[track_caller]
pub fn assert_noted(d: &[Diagnostic], key: &str) {
    let at = marked(key).unwrap_or_else(|| panic!("`{key}` was not marked"));
    assert!(
        d[1..]
            .iter()
            .any(|x| x.loc.line == at.line && x.loc.file == at.file),
        "no further diagnostic points at `{key}` ({}): {d:#?}",
        at.loc()
    );
}
