//! The verifier: every rule reports the user's file:line and says what to do instead.
//!
//! The rules that follow from what instructions state about themselves ([`crate::ir::Facts`])
//! are written once, here and in the files beside this one: where an instruction may run
//! ([`placement`]), that values are used where they exist ([`scoping`]), asynchronous
//! operands ([`hazards`]), proxy fences ([`fences`]) and transaction counts
//! ([`transactions`]). Each family's own rules (shapes, dtypes, limits) live in
//! `passes/rules/`.

mod control;
mod fences;
mod hazards;
mod placement;
mod planned;
mod scoping;
mod transactions;

pub use planned::check_planned;

use super::context::{Checker, Scope};
use super::rules::Rules;
use crate::ir::{Program, Stmt, StmtKind};
use crate::{Diagnostic, Error, Result};

/// Checks the rules that need no layouts.
pub fn check(p: &Program) -> Result<()> {
    let mut c = Checker::new(p);
    control::check_program(&mut c);
    let scope = Scope {
        threads: p.threads(),
        is_block: true,
        loop_depth: 0,
        loop_id: 0,
        single_thread: p.threads() == 1,
        base: 0,
    };
    walk(&mut c, &p.body, &scope);
    hazards::check(&mut c);
    fences::check(&mut c);
    scoping::check(&mut c);
    finish(c.diags)
}

pub(crate) fn finish(diags: Vec<Diagnostic>) -> Result<()> {
    if diags.is_empty() {
        Ok(())
    } else {
        Err(Error::Script(diags))
    }
}

fn walk(c: &mut Checker, stmts: &[Stmt], scope: &Scope) {
    transactions::check(c, stmts);
    for s in stmts {
        match &s.kind {
            StmtKind::For { body, .. } => {
                control::check_stmt(c, s, scope);
                c.loops += 1;
                let inner = Scope {
                    loop_depth: scope.loop_depth + 1,
                    loop_id: c.loops,
                    ..*scope
                };
                walk(c, body, &inner);
            }
            StmtKind::ThreadGroup {
                begin, count, body, ..
            } => {
                control::check_stmt(c, s, scope);
                let inner = Scope {
                    threads: *count,
                    is_block: false,
                    loop_depth: scope.loop_depth,
                    loop_id: scope.loop_id,
                    single_thread: *count == 1,
                    base: scope.base.saturating_add(*begin),
                };
                walk(c, body, &inner);
            }
            StmtKind::Inst(inst) => {
                placement::check(c, inst, s.loc, scope);
                inst.check(c, s.loc, scope);
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync => {
                control::check_stmt(c, s, scope)
            }
        }
    }
}
