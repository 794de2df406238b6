//! Shared tiles written through the generic proxy (ordinary stores) are invisible to the async
//! proxy (wgmma, TMA) until the writing threads run `fence_proxy_async`: an async read of such
//! a tile before a fence is a diagnostic naming both lines. Written once over the facts; stages
//! of a staged tile meet when they are the same for certain (`stages.rs`).

use super::stages::{Clock, Stage};
use crate::ir::facts::{Access, Memory, Ordering, Proxy};
use crate::ir::{Loc, SharedId, Stmt, StmtKind};
use crate::passes::context::Checker;
use std::collections::HashMap;

/// Ordinary writes not yet published: per tile, the stage written, where and by what.
type Dirty = HashMap<SharedId, Vec<(Stage, Loc, &'static str)>>;

fn walk(c: &mut Checker, stmts: &[Stmt], dirty: &mut Dirty, clock: &mut Clock) {
    for s in stmts {
        clock.tick();
        match &s.kind {
            StmtKind::For { var, body, .. } => {
                for _ in 0..2 {
                    clock.write(*var);
                    walk(c, body, dirty, clock);
                }
            }
            StmtKind::While { body, .. } => {
                walk(c, body, dirty, clock);
                walk(c, body, dirty, clock);
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                // unpublished after the `if` if unpublished after either branch
                let mut other = dirty.clone();
                walk(c, then_body, dirty, clock);
                walk(c, else_body, &mut other, clock);
                for (t, ws) in other {
                    let mine = dirty.entry(t).or_default();
                    for w in ws {
                        if !mine.contains(&w) {
                            mine.push(w);
                        }
                    }
                }
            }
            StmtKind::ThreadGroup { body, .. } => walk(c, body, dirty, clock),
            StmtKind::Inst(i) => {
                let facts = i.facts(c.p);
                if facts.ordering == Some(Ordering::ProxyFence) {
                    dirty.clear();
                }
                for e in &facts.effects {
                    // allocating a tile writes nothing
                    let (Memory::Shared(t), false) = (e.memory, e.access == Access::Declare) else {
                        continue;
                    };
                    let here = clock.stamp(e.stage);
                    match e.proxy {
                        Proxy::Async if e.access.reads() => {
                            let written = dirty.get(&t).and_then(|ws| {
                                ws.iter().rev().find(|(w, _, _)| clock.same(w, &here))
                            });
                            if let Some((_, at, writer)) = written {
                                let msg = format!(
                                    "{} reads `{}`, written by {writer} at {at} with no fence_proxy_async \
                                     since: the async proxy may read stale bytes; call k.fence_proxy_async() \
                                     after the stores (then sync)",
                                    i.name(),
                                    c.p.shared(t).name
                                );
                                c.err_once(s.loc, msg);
                            }
                        }
                        // the async proxy's own write replaces what ordinary stores left
                        Proxy::Async => {
                            if let Some(ws) = dirty.get_mut(&t) {
                                ws.retain(|(w, _, _)| !clock.covers(&here, w));
                            }
                        }
                        Proxy::Generic if e.access.writes() => {
                            let ws = dirty.entry(t).or_default();
                            ws.retain(|(w, _, _)| !clock.covers(&here, w));
                            ws.push((here, s.loc, i.name()));
                        }
                        Proxy::Generic => {}
                    }
                }
            }
            StmtKind::Let { var, .. } | StmtKind::Assign { var, .. } => clock.write(*var),
            StmtKind::Sync { .. } => {}
        }
    }
}

/// The proxy-fence rule over the whole program.
pub(super) fn check(c: &mut Checker) {
    let p = c.p;
    walk(c, &p.body, &mut HashMap::new(), &mut Clock::default());
}
