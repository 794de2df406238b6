//! Rules for mbarriers: where they are allocated, who arrives, and whether the transaction
//! bytes a phase expects match the copies issued on it.

use super::{Checker, Scope};
use crate::ir::{BarrierRef, Inst, Loc, MbarrierInst, Stmt, StmtKind, TmaInst};

fn bar_name(c: &Checker, b: &BarrierRef) -> String {
    match b.index.as_int() {
        Some(i) => format!("{}[{}]", c.p.barrier(b.array).name, i),
        None => c.p.barrier(b.array).name.clone(),
    }
}

fn check_index(c: &mut Checker, b: &BarrierRef, loc: Loc) {
    let n = c.p.barrier(b.array).counts.len() as i64;
    if let Some(i) = b.index.as_int() {
        if i < 0 || i >= n {
            let name = c.p.barrier(b.array).name.clone();
            c.err(
                loc,
                if i == n {
                    format!(
                        "barrier index {i} or higher is out of range: `{name}` has {n} barrier(s)"
                    )
                } else {
                    format!("barrier index {i} is out of range: `{name}` has {n} barrier(s)")
                },
            );
        }
    }
}

pub(super) fn check(c: &mut Checker, i: &MbarrierInst, loc: Loc, scope: &Scope) {
    let inst = i;
    match i {
        MbarrierInst::Alloc(id) => {
            let d = c.p.barrier(*id);
            if !scope.is_block || scope.loop_depth > 0 {
                c.err(loc, "mbarrier.alloc must run once in the whole block: outside loops and thread groups");
            }
            if d.counts.is_empty() || d.counts.iter().any(|&n| n == 0 || n >= (1 << 20)) {
                let counts = d.counts.clone();
                c.err(loc, format!("mbarrier.alloc: every count must be between 1 and 2^20 - 1, got {counts:?}"));
            }
        }
        MbarrierInst::Arrive(b) | MbarrierInst::ArriveExpectTx { bar: b, .. } => {
            check_index(c, b, loc);
            {
                // At a variable index, even the barrier with the largest count is too small.
                let counts = &c.p.barrier(b.array).counts;
                let count = match b.index.as_int() {
                    Some(i) => usize::try_from(i)
                        .ok()
                        .and_then(|i| counts.get(i))
                        .copied()
                        .unwrap_or(0),
                    None => counts.iter().copied().max().unwrap_or(0),
                };
                if count > 0 && scope.threads > count {
                    let msg = format!(
                        "{}: {} threads arrive on `{}`, which expects {} arrival{} per phase; \
                         wrap it in single_thread() or raise the count",
                        inst.name(),
                        scope.threads,
                        bar_name(c, b),
                        count,
                        if count == 1 { "" } else { "s" }
                    );
                    c.err(loc, msg);
                }
            }
            if let MbarrierInst::ArriveExpectTx { bytes, .. } = i {
                if let Some(v) = bytes.as_int() {
                    if !(0..(1 << 20)).contains(&v) {
                        c.err(loc, format!("arrive_and_expect_tx: {v} bytes is outside the barrier's transaction range (0 to 2^20 - 1)"));
                    }
                }
            }
        }
        MbarrierInst::Wait { bar, .. } => check_index(c, bar, loc),
    }
}

/// Within one statement list: the bytes declared by `arrive_and_expect_tx` must equal the bytes
/// of the TMA copies issued on the same barrier before the next wait on it.
pub(super) fn check_transactions(c: &mut Checker, stmts: &[Stmt]) {
    for (i, s) in stmts.iter().enumerate() {
        let StmtKind::Inst(Inst::Mbarrier(MbarrierInst::ArriveExpectTx { bar, bytes })) = &s.kind
        else {
            continue;
        };
        let Some(expected) = bytes.as_int() else {
            continue;
        };
        let mut delivered = 0i64;
        let mut known = true;
        for t in &stmts[i + 1..] {
            match &t.kind {
                StmtKind::Inst(Inst::Tma(TmaInst::GlobalToShared { dst, bar: b, .. }))
                    if b == bar =>
                {
                    delivered = delivered.saturating_add(
                        i64::try_from(c.p.shared(*dst).nbytes()).unwrap_or(i64::MAX),
                    );
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Wait { bar: b, .. })) if b == bar => {
                    break
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::ArriveExpectTx { bar: b, .. }))
                    if b == bar =>
                {
                    known = false;
                    break;
                }
                StmtKind::For { .. } | StmtKind::ThreadGroup { .. } => {
                    known = false;
                    break;
                }
                _ => {}
            }
        }
        if known && delivered != expected {
            let msg = format!(
                "arrive_and_expect_tx declares {expected} bytes on `{}`, but the TMA copies issued on it \
                 before the wait deliver {delivered} bytes; the wait would {}",
                bar_name(c, bar),
                if delivered < expected { "never return" } else { "return early or fault" }
            );
            c.err(s.loc, msg);
        }
    }
}
