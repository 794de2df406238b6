//! The verifier's form: a small, deliberately broken script must fail with a diagnostic that
//! carries a key phrase and points at the call marked with [`at`](super::at).
//!
//! ```ignore
//! check::<OutF32>(|k, _| {
//!     k.warps(4);
//!     at(line!(), k.thread_group(0, 0, |_| {}));
//! })
//! .fails_once("thread_group: a thread group needs at least one thread");
//! ```
//!
//! Before the expectation: `.consts(&[..])` (values of the script's `Const` arguments) and
//! `.edit(|p| ..)` (a change to the traced program, for what the typed builder API cannot
//! express). The expectations: [`Check::fails_once`] (exactly one diagnostic),
//! [`Check::fails`] (one among others), [`Check::fails_once_noting`] (exactly one, and its
//! message names the call marked with [`note`](super::note)), [`Check::diagnostics`] (all of
//! them, to [`Diagnostics::find`] several phrases), [`Check::compiles`].

use std::ops::Deref;
use tilus::ir::Program;
use tilus::lang::ArgList;
use tilus::prelude::*;
use tilus::{Diagnostic, Error};

use super::{cache_dir, clear_marks, marked, Body};

/// A script to trace and run through every pass (see the module's documentation).
pub struct Check<S: Script> {
    script: S,
    consts: Vec<i64>,
    edit: fn(&mut Program),
}

/// A check of a script written inline, as a plain function of its handles.
pub fn check<A: ArgList + 'static>(body: fn(&mut Kernel, Handles<A>)) -> Check<Body<A>> {
    check_script(Body(body))
}

/// A check of a script value.
pub fn check_script<S: Script>(script: S) -> Check<S> {
    Check {
        script,
        consts: vec![],
        edit: |_| {},
    }
}

impl<S: Script> Check<S> {
    /// The values of the script's compile-time constant arguments.
    pub fn consts(mut self, consts: &[i64]) -> Self {
        self.consts = consts.to_vec();
        self
    }

    /// Changes the traced program before the passes run.
    pub fn edit(mut self, edit: fn(&mut Program)) -> Self {
        self.edit = edit;
        self
    }

    /// Traces the script (markers cleared first), edits the program and runs every pass.
    pub fn run(&self) -> tilus::Result<Program> {
        cache_dir();
        clear_marks();
        let mut program = tilus::trace(&self.script, &self.consts)?;
        (self.edit)(&mut program);
        tilus::passes::compile_program(program).map(|(p, _)| p)
    }

    /// The diagnostics of a script that must not compile.
    #[track_caller]
    pub fn diagnostics(self) -> Diagnostics {
        match self.run() {
            Err(Error::Script(d)) => Diagnostics(d),
            Err(e) => panic!("expected Error::Script, got another error: {e}"),
            Ok(p) => panic!(
                "expected Error::Script, but the script compiled:\n{}",
                tilus::ir::print_program(&p)
            ),
        }
    }

    /// A diagnostic (among others) containing `phrase`, at the marked call.
    #[track_caller]
    pub fn fails(self, phrase: &str) -> Diagnostic {
        self.diagnostics().find(phrase)
    }

    /// Exactly one diagnostic, containing `phrase`, at the marked call.
    #[track_caller]
    pub fn fails_once(self, phrase: &str) -> Diagnostic {
        let d = self.diagnostics();
        assert_eq!(
            d.len(),
            1,
            "expected exactly one diagnostic, got {:#?}",
            d.0
        );
        d.find(phrase)
    }

    /// Exactly one diagnostic, containing `phrase`, at the marked call, whose message names
    /// the `file:line:` of the call marked with [`note`](super::note).
    #[track_caller]
    pub fn fails_once_noting(self, phrase: &str) -> Diagnostic {
        let d = self.fails_once(phrase);
        let noted = marked("note").expect("the test did not note the referenced call");
        assert!(d.message.contains(&noted.loc()), "{d}");
        d
    }

    /// The program, which must compile (`why` says why it should).
    #[track_caller]
    pub fn compiles(self, why: &str) -> Program {
        self.run().expect(why)
    }
}

/// The diagnostics of a script that did not compile.
#[derive(Debug)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Deref for Diagnostics {
    type Target = [Diagnostic];
    fn deref(&self) -> &[Diagnostic] {
        &self.0
    }
}

impl Diagnostics {
    /// The first diagnostic that contains `phrase`; it must point at the call marked with
    /// [`at`](super::at), in the file that marks it.
    #[track_caller]
    pub fn find(&self, phrase: &str) -> Diagnostic {
        let Some(hit) = self.iter().find(|d| d.message.contains(phrase)) else {
            panic!("no diagnostic contains {phrase:?}; got {:#?}", self.0);
        };
        let at = marked("at").expect("the test did not mark the offending call");
        assert_eq!(
            hit.loc.file, at.file,
            "diagnostic points at {}, not at the file of the marked call: {hit}",
            hit.loc
        );
        assert_eq!(
            hit.loc.line, at.line,
            "diagnostic points at line {}, the offending call is on line {}: {hit}",
            hit.loc.line, at.line
        );
        hit.clone()
    }
}
