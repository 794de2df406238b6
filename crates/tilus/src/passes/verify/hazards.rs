//! Operands of asynchronous group operations (wgmma, TMA stores) are not to be touched until
//! the `wait_group` that covers them: an instruction that uses what such an operation may
//! still be writing, or writes what it may still be reading, is a diagnostic naming both
//! lines; so is a kernel that ends while one may still read shared memory. Written once over
//! the facts (effects completing at a group wait, commits and waits). Stages of a staged tile
//! conflict when they are the same for certain (`stages.rs`).

use super::stages::{Clock, Stage};
use crate::ir::facts::{columns_overlap, Access, AsyncGroup, Completion, Memory, Ordering};
use crate::ir::{Expr, Loc, SharedView, Stmt, StmtKind};
use crate::passes::async_groups::AsyncGroups;
use crate::passes::context::Checker;

/// One operand of an operation in flight.
#[derive(Clone, Debug, PartialEq)]
struct Pending {
    memory: Memory,
    /// The stage of a staged tile it touches, when it was issued.
    stage: Stage,
    /// For a register tile: the columns it touches (`None`: all).
    columns: Option<(i64, i64)>,
    reads: bool,
    writes: bool,
    kind: AsyncGroup,
    inst: &'static str,
    loc: Loc,
}

fn name(c: &Checker, m: Memory, stage: Option<&Expr>) -> String {
    match m {
        Memory::Register(r) => c.p.register(r).name.clone(),
        Memory::Shared(s) => c.p.sview_name(&SharedView {
            tensor: s,
            stage: stage.cloned(),
            transposed: false,
            rows: None,
        }),
        Memory::Global(g) => c.p.global(g).name.clone(),
    }
}

fn walk(c: &mut Checker, stmts: &[Stmt], st: &mut AsyncGroups<Pending>, clock: &mut Clock) {
    for s in stmts {
        clock.tick();
        match &s.kind {
            StmtKind::For { var, body, .. } => {
                // Twice: what the end of one iteration leaves in flight meets the next one's start.
                for _ in 0..2 {
                    clock.write(*var);
                    walk(c, body, st, clock);
                }
            }
            StmtKind::While { body, .. } => {
                walk(c, body, st, clock);
                walk(c, body, st, clock);
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                // Either branch may run: what may be in flight after the `if` is what either
                // leaves in flight.
                let mut other = st.clone();
                walk(c, then_body, st, clock);
                walk(c, else_body, &mut other, clock);
                st.join(other);
            }
            StmtKind::ThreadGroup { body, .. } => walk(c, body, st, clock),
            StmtKind::Inst(i) => {
                let facts = i.facts(c.p);
                for e in &facts.effects {
                    // global memory is not tracked statically: boxes at runtime offsets
                    if matches!(e.memory, Memory::Global(_)) || e.access == Access::Release {
                        continue;
                    }
                    let chained = |p: &Pending| {
                        // accumulating into the same accumulator chains in hardware order;
                        // copies of one kind into a tile fill their parts of it
                        matches!(e.access, Access::Update | Access::Write)
                            && (e.access == Access::Update || p.writes && !p.reads)
                            && matches!(e.completes, Completion::Group(k) if k == p.kind)
                    };
                    let here = clock.stamp(e.stage);
                    let conflict = st.in_flight().find(|p| {
                        p.memory == e.memory
                            && clock.same(&p.stage, &here)
                            && columns_overlap(p.columns, e.columns)
                            && !chained(p)
                            && (p.writes || (p.reads && e.access.writes()))
                    });
                    if let Some(p) = conflict.cloned() {
                        let what = name(c, e.memory, e.stage);
                        let uncommitted =
                            st.is_uncommitted(|q| q.loc == p.loc && q.memory == p.memory);
                        let how = if uncommitted {
                            format!("{} and {}", p.kind.commit_name(), p.kind.wait_name())
                        } else {
                            p.kind.wait_name().to_string()
                        };
                        let msg = if p.writes {
                            format!(
                                "`{what}` is used while the {} at {} may still be writing it; \
                                 {how} until it is covered first",
                                short(p.inst),
                                p.loc
                            )
                        } else {
                            format!(
                                "`{what}` is written while the {} at {} may still be reading it; \
                                 {how} until it is covered first",
                                short(p.inst),
                                p.loc
                            )
                        };
                        c.err_once(s.loc, msg);
                    }
                }
                for e in &facts.effects {
                    if let Completion::Group(kind) = e.completes {
                        if matches!(e.memory, Memory::Global(_)) {
                            continue;
                        }
                        st.issue(
                            kind,
                            Pending {
                                memory: e.memory,
                                stage: clock.stamp(e.stage),
                                columns: e.columns,
                                reads: e.access.reads(),
                                writes: e.access.writes(),
                                kind,
                                inst: i.name(),
                                loc: s.loc,
                            },
                        );
                    }
                }
                match facts.ordering {
                    Some(Ordering::Commit(kind)) => st.commit(kind),
                    Some(Ordering::Wait {
                        group,
                        pending,
                        reads_only,
                    }) => {
                        st.wait(group, pending, reads_only, |p| p.reads && !p.writes);
                    }
                    Some(Ordering::ProxyFence | Ordering::RegisterFence(_)) | None => {}
                }
            }
            StmtKind::Let { var, .. } | StmtKind::Assign { var, .. } => clock.write(*var),
            StmtKind::Sync { .. } => {}
        }
    }
}

/// `wgmma.mma` → `wgmma`: how messages name the operation.
fn short(inst: &str) -> &str {
    match inst {
        "wgmma.mma" => "wgmma",
        other => other,
    }
}

/// The asynchronous-operand rule over the whole program.
pub(super) fn check(c: &mut Checker) {
    let mut st = AsyncGroups::default();
    let body = &c.p.body;
    walk(c, body, &mut st, &mut Clock::default());
    let left: Vec<Pending> = st
        .in_flight()
        .filter(|p| matches!(p.memory, Memory::Shared(_)))
        .cloned()
        .collect();
    for p in left {
        let what = name(c, p.memory, p.stage.index());
        c.err_once(
            p.loc,
            format!(
                "the kernel ends while this {} may still be {} shared tensor `{what}`; \
                 {} (and {}) before the end",
                short(p.inst),
                if p.reads { "reading" } else { "writing" },
                p.kind.wait_name(),
                p.kind.commit_name()
            ),
        );
    }
}
