//! The bytes a barrier arrival declares with `arrive_and_expect_tx` must equal the bytes the
//! asynchronous copies issued on the same barrier deliver before the next wait on it, in the
//! statements that follow it. A one-thread group inside a warp (the `single_thread` a
//! producer warp declares its bytes in, before its elected lane issues the copies) is
//! transparent: the statements after the group continue its body. Written once over the
//! facts (arrivals, transaction completions, waits).

use crate::ir::facts::BarrierEffect;
use crate::ir::{BarrierRef, Stmt, StmtKind};
use crate::passes::context::Checker;
use crate::passes::rules::bar_name;

/// The rule over the whole program.
pub(super) fn check_program(c: &mut Checker, body: &[Stmt]) {
    check_list(c, body, &[]);
}

/// `after`: the statements that run next when `stmts` ends (through enclosing one-thread
/// groups), innermost first; empty where the list is a loop's or a branch's body.
fn check_list(c: &mut Checker, stmts: &[Stmt], after: &[&[Stmt]]) {
    let p = c.p;
    for (i, s) in stmts.iter().enumerate() {
        let mut next: Vec<&[Stmt]> = vec![&stmts[i + 1..]];
        next.extend_from_slice(after);
        match &s.kind {
            StmtKind::Inst(inst) => {
                let facts = inst.facts(p);
                let arrival = facts.barriers.iter().find_map(|b| match b {
                    BarrierEffect::Arrive {
                        bar,
                        expect_tx: Some(bytes),
                        ..
                    } => bytes.as_int().map(|v| (*bar, v)),
                    _ => None,
                });
                if let Some((bar, expected)) = arrival {
                    check_arrival(c, s, bar, expected, &next);
                }
            }
            StmtKind::ThreadGroup { count: 1, body, .. } => check_list(c, body, &next),
            _ => {
                for body in s.kind.bodies() {
                    check_list(c, body, &[]);
                }
            }
        }
    }
}

/// Adds up the bytes copies deliver on `bar` in `next` (lists in order) until a wait on it;
/// reports a mismatch when everything in between is straight-line code.
fn check_arrival(c: &mut Checker, s: &Stmt, bar: &BarrierRef, expected: i64, next: &[&[Stmt]]) {
    let p = c.p;
    let mut delivered = 0i64;
    let mut known = true;
    'scan: for t in next.iter().flat_map(|l| l.iter()) {
        match &t.kind {
            // a multicast copy delivers on other blocks' barriers too, and this one receives
            // the copies other blocks multicast: the bytes are not this list's to add up
            StmtKind::Inst(crate::ir::Inst::Tma(crate::ir::TmaInst::GlobalToShared {
                multicast: Some(_),
                ..
            })) => {
                known = false;
                break;
            }
            StmtKind::Inst(inst) => {
                for b in inst.facts(p).barriers {
                    match b {
                        BarrierEffect::CompleteTx { bar: b, bytes } if b == bar => {
                            delivered =
                                delivered.saturating_add(i64::try_from(bytes).unwrap_or(i64::MAX));
                        }
                        BarrierEffect::Wait { bar: b, .. } if b == bar => break 'scan,
                        BarrierEffect::Arrive {
                            bar: b,
                            expect_tx: Some(_),
                            ..
                        } if b == bar => {
                            known = false;
                            break 'scan;
                        }
                        _ => {}
                    }
                }
            }
            StmtKind::For { .. }
            | StmtKind::While { .. }
            | StmtKind::If { .. }
            | StmtKind::ThreadGroup { .. } => {
                known = false;
                break;
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
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
