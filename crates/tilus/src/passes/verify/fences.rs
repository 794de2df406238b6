//! Shared tiles written through the generic proxy (ordinary stores) are invisible to the async
//! proxy (wgmma, TMA) until the writing threads run `fence_proxy_async`: an async read of such
//! a tile before a fence is a diagnostic naming both lines. Written once over the facts.

use crate::ir::facts::{Access, Memory, Ordering, Proxy};
use crate::ir::{Loc, SharedId, Stmt, StmtKind};
use crate::passes::context::Checker;
use std::collections::HashMap;

fn walk(c: &mut Checker, stmts: &[Stmt], dirty: &mut HashMap<SharedId, (Loc, &'static str)>) {
    for s in stmts {
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                walk(c, body, dirty);
                walk(c, body, dirty);
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                // unpublished after the `if` if unpublished after either branch
                let mut other = dirty.clone();
                walk(c, then_body, dirty);
                walk(c, else_body, &mut other);
                for (t, w) in other {
                    dirty.entry(t).or_insert(w);
                }
            }
            StmtKind::ThreadGroup { body, .. } => walk(c, body, dirty),
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
                    match e.proxy {
                        Proxy::Async if e.access.reads() => {
                            if let Some((at, writer)) = dirty.get(&t) {
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
                            dirty.remove(&t);
                        }
                        Proxy::Generic if e.access.writes() => {
                            dirty.insert(t, (s.loc, i.name()));
                        }
                        Proxy::Generic => {}
                    }
                }
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync => {}
        }
    }
}

/// The proxy-fence rule over the whole program.
pub(super) fn check(c: &mut Checker) {
    let p = c.p;
    walk(c, &p.body, &mut HashMap::new());
}
