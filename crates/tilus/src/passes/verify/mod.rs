//! The verifier: every rule reports the user's file:line and says what to do instead.
//!
//! The rules that follow from what instructions state about themselves ([`crate::ir::Facts`])
//! are written once, here and in the files beside this one: where an instruction may run
//! (`placement.rs`), that values are used where they exist (`scoping.rs`), asynchronous
//! operands (`hazards.rs`), proxy fences (`fences.rs`), transaction counts
//! (`transactions.rs`), `sync()` under conditions (`control.rs`), scalar types
//! (`scalars.rs`), the register pool of `set_max_registers` (`registers.rs`) and, once
//! planned, the budgets and races between warps on shared tiles (`planned.rs`, `races.rs`).
//! Each family's own rules (shapes, dtypes, limits) live in `passes/rules/`.

mod control;
mod fences;
mod hazards;
mod live_registers;
mod placement;
mod planned;
mod races;
mod registers;
mod scalars;
mod scoping;
mod stages;
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
        branch_id: 0,
        branch_loc: None,
        divergent: None,
    };
    let uniform = control::uniform_vars(p);
    walk(&mut c, &p.body, &scope, &uniform);
    transactions::check_program(&mut c, &p.body);
    hazards::check(&mut c);
    fences::check(&mut c);
    scoping::check(&mut c);
    scalars::check(&mut c);
    registers::check(&mut c);
    finish(c.diags)
}

pub(crate) fn finish(diags: Vec<Diagnostic>) -> Result<()> {
    if diags.is_empty() {
        Ok(())
    } else {
        Err(Error::Script(diags))
    }
}

/// The verifier's walk: `uniform` says which variables have the same value in every thread
/// of the block (see [`control::uniform_vars`]).
fn walk(c: &mut Checker, stmts: &[Stmt], scope: &Scope, uniform: &[bool]) {
    for s in stmts {
        // the innermost `if`/`while` whose condition may differ between threads
        let divergent = |cond: &crate::ir::Expr, what: &'static str| {
            control::nonuniform_var(cond, uniform)
                .map(|v| (s.loc, what, v))
                .or(scope.divergent)
        };
        match &s.kind {
            StmtKind::For { body, .. } => {
                control::check_stmt(c, s, scope);
                c.loops += 1;
                let inner = Scope {
                    loop_depth: scope.loop_depth + 1,
                    loop_id: c.loops,
                    ..*scope
                };
                walk(c, body, &inner, uniform);
            }
            StmtKind::While { cond, body } => {
                control::check_stmt(c, s, scope);
                c.loops += 1;
                let inner = Scope {
                    loop_depth: scope.loop_depth + 1,
                    loop_id: c.loops,
                    divergent: divergent(cond, "while"),
                    ..*scope
                };
                walk(c, body, &inner, uniform);
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                control::check_stmt(c, s, scope);
                for body in [then_body, else_body] {
                    c.branches += 1;
                    let inner = Scope {
                        branch_id: c.branches,
                        branch_loc: Some(s.loc),
                        divergent: divergent(cond, "if"),
                        ..*scope
                    };
                    walk(c, body, &inner, uniform);
                }
            }
            StmtKind::ThreadGroup {
                begin,
                count,
                copies,
                body,
                ..
            } => {
                control::check_stmt(c, s, scope);
                // each group of copies where it runs (a rule about a group's first thread
                // holds for every one), a diagnostic said once
                let said = c.diags.len();
                // (groups past the enclosing one are the control rule's diagnostic: the first
                // group stands for them all there)
                let n = copies.map_or(1, |cp| cp.copies);
                let end = u64::from(*begin) + u64::from(*count) * u64::from(n);
                let walked = if end <= u64::from(scope.threads) {
                    n
                } else {
                    1
                };
                for i in 0..walked {
                    let first = begin.saturating_add(i.saturating_mul(*count));
                    let inner = Scope {
                        threads: *count,
                        is_block: false,
                        single_thread: *count == 1,
                        base: scope.base.saturating_add(first),
                        ..*scope
                    };
                    walk(c, body, &inner, uniform);
                }
                let added = c.diags.split_off(said);
                for d in added {
                    if !c.diags.contains(&d) {
                        c.diags.push(d);
                    }
                }
            }
            StmtKind::Inst(inst) => {
                placement::check(c, inst, s.loc, scope);
                inst.check(c, s.loc, scope);
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {
                control::check_stmt(c, s, scope)
            }
        }
    }
}
