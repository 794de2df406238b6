//! Within one statement list: the bytes a barrier arrival declares with
//! `arrive_and_expect_tx` must equal the bytes the asynchronous copies issued on the same
//! barrier deliver before the next wait on it. Written once over the facts (arrivals,
//! transaction completions, waits).

use crate::ir::facts::BarrierEffect;
use crate::ir::{Stmt, StmtKind};
use crate::passes::context::Checker;
use crate::passes::rules::bar_name;

pub(super) fn check(c: &mut Checker, stmts: &[Stmt]) {
    let p = c.p;
    for (i, s) in stmts.iter().enumerate() {
        let StmtKind::Inst(inst) = &s.kind else {
            continue;
        };
        let facts = inst.facts(p);
        let Some((bar, expected)) = facts.barriers.iter().find_map(|b| match b {
            BarrierEffect::Arrive {
                bar,
                expect_tx: Some(bytes),
                ..
            } => bytes.as_int().map(|v| (*bar, v)),
            _ => None,
        }) else {
            continue;
        };
        let mut delivered = 0i64;
        let mut known = true;
        'scan: for t in &stmts[i + 1..] {
            match &t.kind {
                StmtKind::Inst(next) => {
                    for b in next.facts(p).barriers {
                        match b {
                            BarrierEffect::CompleteTx { bar: b, bytes } if b == bar => {
                                delivered = delivered
                                    .saturating_add(i64::try_from(bytes).unwrap_or(i64::MAX));
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
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync => {}
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
