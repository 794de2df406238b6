//! Emitters for scalar variables, loops, conditionals, thread groups and `sync`.

use super::{scalar_c_type, Core, Emitter, Helper, Tid};
use crate::ir::{GroupKind, Stmt, StmtKind, SyncScope, VarKind};

pub(super) fn emit(e: &mut Emitter, s: &Stmt) {
    match &s.kind {
        StmtKind::Let { var, value } => {
            let d = e.p.var(*var);
            let cst = if d.kind == VarKind::Mutable {
                ""
            } else {
                "const "
            };
            let v = rounded(e, d.dtype, value);
            let t = format!("{cst}{} {} = {v};", scalar_c_type(d.dtype), d.name);
            e.line(t);
        }
        StmtKind::Assign { var, value } => {
            let v = rounded(e, e.p.var(*var).dtype, value);
            let t = format!("{} = {v};", e.p.var(*var).name);
            e.line(t);
        }
        StmtKind::For {
            var,
            start,
            end,
            step,
            unroll,
            body,
        } => {
            let n = e.p.var(*var).name.clone();
            if let Some(u) = unroll {
                e.line(format!("#pragma unroll {u}"));
            }
            let head = format!(
                "for (i32 {n} = {}; {n} < {}; {n} += {})",
                e.expr(start),
                e.expr(end),
                e.expr(step)
            );
            e.open(head);
            e.block(body);
            e.close();
        }
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => {
            let head = format!("if ({})", e.expr(cond));
            e.open(head);
            e.block(then_body);
            if !else_body.is_empty() {
                // `} else {`: close the first C scope and open the second on one line
                e.depth -= 1;
                e.declared.pop();
                e.line("} else {");
                e.depth += 1;
                e.declared.push(vec![]);
                e.block(else_body);
            }
            e.close();
        }
        StmtKind::While { cond, body } => {
            let head = format!("while ({})", e.expr(cond));
            e.open(head);
            e.block(body);
            e.close();
        }
        StmtKind::ThreadGroup {
            begin,
            count,
            kind,
            copies,
            body,
        } => {
            let parent = e.tid();
            let (pname, pwarps) = (parent.name.clone(), parent.whole_warps);
            let n = copies.map_or(1, |c| c.copies);
            let end = begin.saturating_add(count.saturating_mul(n));
            let cond =
                if *count == 1 && pwarps && begin % 32 == 0 && *kind == GroupKind::SingleThread {
                    // one thread, chosen warp-uniformly: the whole warp evaluates elect.sync
                    e.use_helper(Helper::Core(Core::ElectOne));
                    format!("({pname} / 32 == {}) && tilus_elect_one()", begin / 32)
                } else if *begin == 0 {
                    format!("{pname} < {end}")
                } else {
                    format!("{pname} >= {begin} && {pname} < {end}")
                };
            e.open(format!("if ({cond})"));
            let name = e.fresh("tilus_tid");
            if let Some(c) = copies {
                let from = if *begin == 0 {
                    pname
                } else {
                    format!("({pname} - {begin})")
                };
                // the group's index, then the thread's place in its group
                let index = e.p.var(c.index).name.clone();
                if whole_warps(pwarps, *begin, *count) {
                    // the same in every thread of a warp: read from lane 0, so that the
                    // compiler knows it (uniform registers, wgmma descriptors among them);
                    // every lane is there (the verifier refuses the groups under a condition
                    // that may differ between threads)
                    e.line(format!(
                        "const i32 {index} = __shfl_sync(0xffffffffu, {from} / {count}, 0);"
                    ));
                } else {
                    e.line(format!("const i32 {index} = {from} / {count};"));
                }
                e.line(format!("const i32 {name} = {from} % {count};"));
            } else if *count > 1 {
                e.line(format!("const i32 {name} = {pname} - {begin};"));
            }
            e.tids.push(Tid {
                name,
                threads: *count,
                whole_warps: whole_warps(pwarps, *begin, *count),
            });
            e.block(body);
            e.tids.pop();
            e.close();
        }
        StmtKind::Sync {
            scope: SyncScope::Block,
            vote: Some(v),
        } => {
            let cond = e.expr(&v.cond);
            let t = format!(
                "const bool {} = __syncthreads_or({cond});  // every thread: whether it held in any",
                e.p.var(v.out).name
            );
            e.line(t);
        }
        StmtKind::Sync {
            scope: SyncScope::Block,
            ..
        } => e.line("__syncthreads();"),
        StmtKind::Sync {
            scope: SyncScope::Cluster,
            ..
        } => e.line(
            "asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");  // every thread of the cluster",
        ),
        StmtKind::Sync {
            scope: SyncScope::ClusterRelaxed,
            ..
        } => e.line(
            "asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\\n\\tbarrier.cluster.wait.aligned;\" ::: \"memory\");  // every thread of the cluster, no memory ordered",
        ),
        StmtKind::Sync {
            scope: SyncScope::Group(g),
            ..
        } => e.line(format!(
            "asm volatile(\"bar.sync {}, {};\" ::: \"memory\");  // threads {}..{}",
            g.barrier,
            g.threads,
            g.first,
            g.first + g.threads
        )),
        StmtKind::Inst(_) => unreachable!("instructions are emitted by their family"),
    }
}

/// The C value a scalar variable of type `t` takes from `value`: a 16-bit float variable
/// holds its value rounded to its type (in a `float`).
fn rounded(e: &Emitter, t: crate::ir::DType, value: &crate::ir::Expr) -> String {
    let already = matches!(value, crate::ir::Expr::Var(_, vt) if *vt == t);
    if t.is_float() && t.bits() == 16 && !already {
        e.expr(&crate::ir::Expr::Cast(t, Box::new(value.clone())))
    } else {
        e.expr(value)
    }
}

/// Whether a group of `count` threads from `begin` of a parent made of whole warps (`pwarps`)
/// is whole warps itself.
fn whole_warps(pwarps: bool, begin: u32, count: u32) -> bool {
    pwarps && begin.is_multiple_of(32) && count.is_multiple_of(32)
}
