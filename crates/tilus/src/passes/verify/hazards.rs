//! Operands of asynchronous group operations (wgmma, TMA stores) are not to be touched until
//! the `wait_group` that covers them: an instruction that uses what such an operation may
//! still be writing, or writes what it may still be reading, is a diagnostic naming both
//! lines; so is a kernel that ends while one may still read shared memory. Written once over
//! the facts (effects completing at a group wait, commits and waits).

use crate::ir::facts::{Access, AsyncGroup, Completion, Memory, Ordering};
use crate::ir::{Loc, Stmt, StmtKind};
use crate::passes::async_groups::AsyncGroups;
use crate::passes::context::Checker;

/// One operand of an operation in flight.
#[derive(Clone, Debug, PartialEq)]
struct Pending {
    memory: Memory,
    reads: bool,
    writes: bool,
    kind: AsyncGroup,
    inst: &'static str,
    loc: Loc,
}

fn name(c: &Checker, m: Memory) -> String {
    match m {
        Memory::Register(r) => c.p.register(r).name.clone(),
        Memory::Shared(s) => c.p.shared(s).name.clone(),
        Memory::Global(g) => c.p.global(g).name.clone(),
    }
}

fn walk(c: &mut Checker, stmts: &[Stmt], st: &mut AsyncGroups<Pending>) {
    for s in stmts {
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                // Twice: what the end of one iteration leaves in flight meets the next one's start.
                walk(c, body, st);
                walk(c, body, st);
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                // Either branch may run: what may be in flight after the `if` is what either
                // leaves in flight.
                let mut other = st.clone();
                walk(c, then_body, st);
                walk(c, else_body, &mut other);
                st.join(other);
            }
            StmtKind::ThreadGroup { body, .. } => walk(c, body, st),
            StmtKind::Inst(i) => {
                let facts = i.facts(c.p);
                for e in &facts.effects {
                    // global memory is not tracked statically: boxes at runtime offsets
                    if matches!(e.memory, Memory::Global(_)) || e.access == Access::Release {
                        continue;
                    }
                    let chained = |p: &Pending| {
                        // accumulating into the same accumulator chains in hardware order
                        e.access == Access::Update
                            && matches!(e.completes, Completion::Group(k) if k == p.kind)
                    };
                    let conflict = st.in_flight().find(|p| {
                        p.memory == e.memory
                            && !chained(p)
                            && (p.writes || (p.reads && e.access.writes()))
                    });
                    if let Some(p) = conflict.cloned() {
                        let what = name(c, e.memory);
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
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync => {}
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
    walk(c, body, &mut st);
    let left: Vec<Pending> = st
        .in_flight()
        .filter(|p| p.reads && matches!(p.memory, Memory::Shared(_)))
        .cloned()
        .collect();
    for p in left {
        let what = name(c, p.memory);
        c.err_once(
            p.loc,
            format!(
                "the kernel ends while this {} may still be reading shared tensor `{what}`; \
                 {} (and {}) before the end",
                short(p.inst),
                p.kind.wait_name(),
                p.kind.commit_name()
            ),
        );
    }
}
