//! Rules for the launch configuration, loops, thread groups and `sync`.

use crate::ir::{Stmt, StmtKind};
use crate::passes::context::{Checker, Scope};

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
        StmtKind::Sync => {
            if !scope.is_block {
                c.err(
                    s.loc,
                    "sync() inside a thread group would wait for threads that never arrive; \
                     call it outside the group, where every thread of the block runs",
                );
            }
        }
        StmtKind::ThreadGroup { begin, count, .. } => {
            // in u64: a group declared before `warps` is only checked here, and its bounds
            // may be anything
            let end = u64::from(*begin) + u64::from(*count);
            if end > u64::from(scope.threads) {
                c.err(
                    s.loc,
                    format!(
                        "thread group {begin}..{end} does not fit in the enclosing group of {} threads",
                        scope.threads
                    ),
                );
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
