//! Random small scripts never panic the library: they trace, check, plan and emit CUDA, or
//! they fail with an error.
//!
//! A program is a list of operations (`ops/`), one per builder call (loops, conditionals and
//! thread groups hold nested lists). The script `replay::Fuzz` replays it in its body: every handle it
//! creates (scalars, global views, shared and register tiles, barrier arrays) goes into a
//! vector, and operations name handles by an index counted back from the most recent one,
//! modulo the number created so far. So every generated program can be replayed, including
//! the invalid ones: tiles used after `free_shared` or outside the group they belong to, loop
//! variables used after their loop, transposed views of 1-D tiles, products of mismatched
//! shapes and element types, barrier indices past the end, TMA copies between tiles of
//! different ranks, zero, negative and huge extents, and so on. The few combinations that
//! the typed API rules out (e.g. the two operands of a `dot` with different element types, a
//! view of another type than its pointer) are reached by an `Edit` of the traced program, as
//! the verifier's tests do.
//!
//! Cases are *wild* (anything anywhere) or *tame* (a plausible kernel built from snippets,
//! with one or two wild operations inserted), so that many get through the verifier to layout
//! inference, planning and emission; see `strategies`.
//!
//! For each program: `tilus::trace` (with random values for the script's `Const` arguments,
//! sometimes too few or too many), then `compile_program`, then `emit_cuda` (`run`). Nothing
//! may panic; a panic fails the property with its message and location and the program,
//! shrunk by proptest and then by `shrink::minimize`. The GPU is never used.
//!
//! Programs that are valid by construction check the other direction: the arithmetic
//! snippets of `ops::arith`, built on a model of the types and shapes of the tiles they
//! create, must trace, pass the verifier and the planner and emit CUDA, and the first few
//! compile with NVRTC when it is there (`typed_arithmetic_passes_the_verifier`).
//!
//! `TILUS_FUZZ_CASES=100000` runs more cases (the default, and CI's, is 4000);
//! `TILUS_FUZZ_BACKTRACE=1` adds the panic's backtrace to the report; the ignored
//! `coverage_report` test shows how far programs get
//! (`cargo test -p tilus --test fuzz -- --ignored --nocapture coverage_report`).
//!
//! # Adding an instruction
//!
//! Everything about one operation is in its family's file, `ops/<family>.rs`:
//!
//! 1. a variant of the family's enum (e.g. `Tma::GlobalToShared(view, tile, offsets,
//!    barrier)`), whose handles are indices counted back from the most recent handle
//!    (`model::T` for tiles, `model::BarRef` for barriers, `usize` for views);
//! 2. its weighted arm in the family's `arms(mode, top)`: plausible values in `Tame` mode,
//!    valid and invalid ones alike in `Wild` mode (the value strategies are in `strategies`);
//! 3. its arm in the family's `replay`: the builder call, skipped when a handle it names does
//!    not exist (`replay::Replay` has the handles and the typed-dispatch macros `on!` and
//!    `by_dt!`);
//! 4. optionally, a snippet in the same file (a plausible pattern around it) listed in
//!    `strategies::chunk`, so that tame cases carry it through to emission.
//!
//! A new family is a new file with the same parts and one line in `families!` in
//! `ops/mod.rs`. A program the fuzzer found goes, minimized, into `regressions.rs`.

#[path = "../common/mod.rs"]
mod common;

mod model;
mod ops;
mod regressions;
mod replay;
mod run;
mod shrink;
mod strategies;

use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::cell::RefCell;

use model::Op;
use replay::Fuzz;
use run::{apply, catching};
use shrink::no_panic;
use strategies::case;

/// The number of random cases: `TILUS_FUZZ_CASES`, or 4000.
fn cases() -> u32 {
    std::env::var("TILUS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

/// The property: no generated program makes the library panic. Also reports (with
/// `--nocapture`) and checks how far programs get, so that the generator keeps reaching
/// layout inference, planning and emission. `TILUS_FUZZ_CASES` sets the number of cases.
#[test]
fn random_scripts_never_panic() {
    let cases = cases();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    });
    let counts = RefCell::new([0u32; 3]);
    let result = runner.run(&case(), |case| {
        let stage = catching(&case).map_err(TestCaseError::fail)?;
        counts.borrow_mut()[stage as usize] += 1;
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, case)) => {
            no_panic(case);
            unreachable!("the shrunk case panics");
        }
        Err(e) => panic!("{e}"),
        Ok(()) => {}
    }
    let [trace_failed, compile_failed, emitted] = *counts.borrow();
    eprintln!(
        "{cases} cases: {trace_failed} failed to trace, {compile_failed} failed to compile, \
         {emitted} emitted CUDA"
    );
    let total = trace_failed + compile_failed + emitted;
    assert!(
        compile_failed + emitted >= total / 10 && emitted >= total / 50,
        "too few generated programs get past tracing or compile: the generator needs retuning"
    );
}

/// Arithmetic built on the typed model of `ops::arith::snippet_arith` is valid by
/// construction: every such script traces, passes the verifier and the planner and emits CUDA
/// (a failure shows the diagnostics and the case), and the first few compile with NVRTC when
/// it is available. `TILUS_FUZZ_CASES / 8` cases.
#[test]
fn typed_arithmetic_passes_the_verifier() {
    let mut runner = TestRunner::new(Config {
        cases: (cases() / 8).max(1),
        failure_persistence: None,
        max_shrink_iters: 512,
        ..Config::default()
    });
    let compiled = RefCell::new(0u32);
    let result = runner.run(&ops::arith::valid_arith_case(), |ops| {
        let case = model::Case {
            ops,
            consts: vec![64, 128],
            edits: vec![],
        };
        let fail = |e: tilus::Error| TestCaseError::fail(format!("{e}\n{}", shrink::show(&case)));
        let script = Fuzz(case.ops.clone());
        let program = tilus::trace(&script, &case.consts).map_err(fail)?;
        let (program, plan) = tilus::passes::compile_program(program).map_err(fail)?;
        std::hint::black_box(tilus::codegen::emit_cuda(&program, &plan));
        if *compiled.borrow() < 3 {
            match tilus::build(&script, &case.consts) {
                Ok(_) => *compiled.borrow_mut() += 1,
                // no NVRTC here: the emitted source is as far as this test goes
                Err(tilus::Error::NvrtcUnavailable(_)) => *compiled.borrow_mut() = u32::MAX,
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The name (`Family::Variant`) of every operation in `ops`, nested ones included.
fn op_names(ops: &[Op], out: &mut Vec<String>) {
    for op in ops {
        out.push(op.name());
        for body in op.bodies() {
            op_names(body, out);
        }
    }
}

/// For tuning the generator: per operation, in how many programs it got to each stage; and
/// the most common errors. `cargo test -p tilus --test fuzz -- --ignored --nocapture`.
#[test]
#[ignore = "a report for tuning the generator, not a check"]
fn coverage_report() {
    use std::collections::BTreeMap;
    let mut runner = TestRunner::new(Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    });
    let per_op: RefCell<BTreeMap<String, [u32; 3]>> = RefCell::default();
    let errors: RefCell<BTreeMap<String, u32>> = RefCell::default();
    let _ = runner.run(&case(), |case| {
        let stage = no_panic(case.clone());
        let mut names = vec![];
        op_names(&case.ops, &mut names);
        names.sort();
        names.dedup();
        for n in names {
            per_op.borrow_mut().entry(n).or_default()[stage as usize] += 1;
        }
        let traced = tilus::trace(&Fuzz(case.ops.clone()), &case.consts);
        let diags = match traced {
            Err(tilus::Error::Script(d)) => d
                .into_iter()
                .map(|d| format!("trace: {}", d.message))
                .collect(),
            Err(e) => vec![format!("trace: {e}")],
            Ok(mut p) => {
                apply(&mut p, &case.edits);
                match tilus::passes::compile_program(p) {
                    Err(tilus::Error::Script(d)) => d.into_iter().map(|d| d.message).collect(),
                    Err(e) => vec![e.to_string()],
                    Ok(_) => vec![],
                }
            }
        };
        for d in diags {
            let m: String = d.chars().take(70).collect();
            *errors.borrow_mut().entry(m).or_default() += 1;
        }
        Ok(())
    });
    for (n, [t, c, e]) in per_op.borrow().iter() {
        eprintln!("{n:24} trace failed {t:5}  compile failed {c:5}  emitted {e:5}");
    }
    let mut errors: Vec<_> = errors.into_inner().into_iter().collect();
    errors.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (m, n) in errors.iter().take(40) {
        eprintln!("{n:5} {m}");
    }
}
