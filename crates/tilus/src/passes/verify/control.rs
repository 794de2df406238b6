//! Rules for the launch configuration, loops, conditionals, thread groups and `sync`.
//!
//! `sync()` is `__syncthreads()`: every thread of the block must reach the same one. Inside a
//! thread group that can never happen. Inside an `if` or a `while` it happens exactly when the
//! condition has the same value in every thread of the block, which the verifier proves from
//! where the condition's variables come from (see [`uniform_vars`]): arguments, constants, the
//! block index, and variables the whole block computes alike from those (within a thread
//! group, `sync_group()` asks the same of the group's threads, which also share the variables
//! the group computes alike). A condition that reads anything else (a variable assigned inside
//! a smaller thread group than the one it belongs to, or under a condition that is itself not
//! uniform) may send some threads past the body while others wait in its
//! `sync()` forever, so a `sync()` under it is a diagnostic.

use crate::ir::{Expr, Program, Stmt, StmtKind, SyncScope, VarId};
use crate::passes::context::{Checker, Scope};

/// For every variable, whether it has the same value in every thread that can read it (the
/// block, or the thread group it is defined in): arguments always; a `let`, `var` or loop
/// index when every definition and assignment of it runs in all of those threads (in the
/// group it is defined in, not in a smaller group inside it, under conditions and loop
/// bounds that are themselves uniform) and computes a uniform value. A variable defined in a
/// thread group is read only there, so within the group it is as uniform as a block's
/// variable is within the block: `sync_group()` may run under a condition on it. The greatest
/// fixed point: assumed uniform until a definition shows otherwise.
pub(super) fn uniform_vars(p: &Program) -> Vec<bool> {
    let mut u: Vec<bool> = vec![true; p.vars.len()];
    fn define(v: VarId, uniform: bool, u: &mut [bool], changed: &mut bool) {
        if !uniform && u[v.0 as usize] {
            u[v.0 as usize] = false;
            *changed = true;
        }
    }
    /// The walk's state: the thread group each variable was defined in (0: the block;
    /// groups numbered in the order the walk enters them, the same in every pass).
    struct Walk<'a> {
        u: &'a mut [bool],
        defined_in: Vec<Option<u32>>,
        groups: u32,
        changed: bool,
    }
    fn visit(stmts: &[Stmt], control: bool, group: u32, w: &mut Walk<'_>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let { var, value } => {
                    w.defined_in[var.0 as usize] = Some(group);
                    let ok = control && nonuniform_var(value, w.u).is_none();
                    define(*var, ok, w.u, &mut w.changed);
                }
                StmtKind::Assign { var, value } => {
                    // an assignment by part of the threads that read the variable (a group
                    // inside the one it belongs to) makes it differ between them
                    let here = w.defined_in[var.0 as usize] == Some(group);
                    let ok = control && here && nonuniform_var(value, w.u).is_none();
                    define(*var, ok, w.u, &mut w.changed);
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    step,
                    unroll: _,
                    body,
                } => {
                    w.defined_in[var.0 as usize] = Some(group);
                    let ok = control
                        && [start, end, step]
                            .iter()
                            .all(|e| nonuniform_var(e, w.u).is_none());
                    define(*var, ok, w.u, &mut w.changed);
                    visit(body, ok, group, w);
                }
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let ok = control && nonuniform_var(cond, w.u).is_none();
                    visit(then_body, ok, group, w);
                    visit(else_body, ok, group, w);
                }
                StmtKind::While { cond, body } => {
                    let ok = control && nonuniform_var(cond, w.u).is_none();
                    visit(body, ok, group, w);
                }
                StmtKind::ThreadGroup { body, .. } => {
                    w.groups += 1;
                    let inner = w.groups;
                    visit(body, control, inner, w);
                }
                StmtKind::Sync { .. } | StmtKind::Inst(_) => {}
            }
        }
    }
    for (i, v) in p.vars.iter().enumerate() {
        if v.kind.is_parameter() {
            u[i] = true;
        }
    }
    loop {
        let mut w = Walk {
            u: &mut u,
            defined_in: vec![None; p.vars.len()],
            groups: 0,
            changed: false,
        };
        visit(&p.body, true, 0, &mut w);
        if !w.changed {
            return u;
        }
    }
}

/// A variable of `e` that may differ between the block's threads, if any.
pub(super) fn nonuniform_var(e: &Expr, uniform: &[bool]) -> Option<VarId> {
    let mut vars = vec![];
    e.vars(&mut vars);
    vars.into_iter().find(|v| !uniform[v.0 as usize])
}

/// Program-wide rules.
pub(super) fn check_program(c: &mut Checker) {
    let p = c.p;
    let fallback = crate::ir::Loc {
        file: "<script>",
        line: 0,
        col: 0,
    };
    let loc = p
        .grid_loc
        .or_else(|| p.body.first().map(|s| s.loc))
        .unwrap_or(fallback);
    for (axis, g) in p.grid.iter().enumerate() {
        if g.uses_block_idx() {
            c.err(
                loc,
                format!("blocks[{axis}] may not depend on the block index"),
            );
        }
        let mut vars = vec![];
        g.vars(&mut vars);
        for v in vars {
            if p.param_of(v).is_none() {
                let msg = format!(
                    "blocks[{axis}] may only use arguments and constants, not `{}`",
                    p.var(v).name
                );
                c.err(loc, msg);
            }
        }
    }
}

/// Statement rules.
pub(super) fn check_stmt(c: &mut Checker, s: &Stmt, scope: &Scope) {
    match &s.kind {
        StmtKind::Sync {
            scope: SyncScope::Group(g),
            ..
        } => {
            if scope.base != g.first || scope.threads != g.threads {
                c.err(
                    s.loc,
                    format!(
                        "sync_group() for threads {}..{} runs in a group of threads {}..{}",
                        g.first,
                        g.first + g.threads,
                        scope.base,
                        scope.base + scope.threads
                    ),
                );
            } else if let Some((at, what, v)) = scope.divergent {
                let msg = format!(
                    "sync_group() inside the {what} at {at}, whose condition reads `{}`, which may \
                     differ between the group's threads: threads that skip the body would never \
                     arrive; call sync_group() outside",
                    c.p.var(v).name
                );
                c.err(s.loc, msg);
            }
        }
        StmtKind::Sync {
            scope: SyncScope::Cluster | SyncScope::ClusterRelaxed,
            ..
        } => {
            if !c.p.clustered {
                c.err(
                    s.loc,
                    "cluster_sync() in a kernel without clusters: declare them with \
                     k.cluster_blocks([..]), or synchronize the block with sync()",
                );
            } else if !scope.is_block {
                c.err(
                    s.loc,
                    "cluster_sync() inside a thread group would wait for threads that never \
                     arrive; call it outside the group, where every thread of the block runs",
                );
            } else if let Some((at, what, v)) = scope.divergent {
                let msg = format!(
                    "cluster_sync() inside the {what} at {at}, whose condition reads `{}`, which \
                     may differ between the threads of the block: threads that skip the body \
                     would never arrive; call cluster_sync() outside",
                    c.p.var(v).name
                );
                c.err(s.loc, msg);
            }
        }
        StmtKind::Sync {
            scope: SyncScope::Block,
            ..
        } => {
            if !scope.is_block {
                c.err(
                    s.loc,
                    "sync() inside a thread group would wait for threads that never arrive; \
                     call it outside the group, where every thread of the block runs",
                );
            } else if let Some((at, what, v)) = scope.divergent {
                let msg = format!(
                    "sync() inside the {what} at {at}, whose condition reads `{}`, which may differ \
                     between the threads of the block (it is assigned inside a thread group or \
                     under such a condition): threads that skip the body would never arrive; call \
                     sync() outside, or make the condition depend only on arguments, constants, the \
                     block index and variables the whole block computes alike",
                    c.p.var(v).name
                );
                c.err(s.loc, msg);
            }
        }
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => {
            let what = if matches!(s.kind, StmtKind::If { .. }) {
                "if_"
            } else {
                "while_"
            };
            if !cond.dtype().is_int() && cond.dtype() != crate::ir::DType::Bool {
                c.err(
                    s.loc,
                    format!(
                        "{what} needs a boolean or integer condition, got {}",
                        cond.dtype()
                    ),
                );
            }
        }
        StmtKind::ThreadGroup {
            begin,
            count,
            copies,
            ..
        } => {
            // in u64: a group declared before `warps` is only checked here, and its bounds
            // may be anything
            let n = copies.map_or(1, |cp| cp.copies);
            let end = u64::from(*begin) + u64::from(*count) * u64::from(n);
            if end > u64::from(scope.threads) {
                c.err(
                    s.loc,
                    format!(
                        "thread group {begin}..{end} does not fit in the enclosing group of {} threads",
                        scope.threads
                    ),
                );
            } else if let (Some(_), Some((at, what, v))) = (copies, scope.divergent) {
                let msg = format!(
                    "thread_groups inside the {what} at {at}, whose condition reads `{}`, which \
                     may differ between threads: each warp reads its group's index from its \
                     first lane, which must be there; open the groups outside the {what}",
                    c.p.var(v).name
                );
                c.err(s.loc, msg);
            }
        }
        StmtKind::For { step, .. } => {
            if let Some(v) = step.as_int() {
                if v <= 0 {
                    c.err(s.loc, format!("for_range needs a positive step, got {v}"));
                }
            }
        }
        StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Inst(_) => {}
    }
}
