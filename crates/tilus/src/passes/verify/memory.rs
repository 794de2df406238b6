//! Rules for global views, shared and register tiles, loads and stores.

use super::{Checker, Scope};
use crate::ir::{Loc, MemoryInst, RegView};

/// The shape of a register view (transposes swap the last two dimensions).
pub(crate) fn view_shape(p: &crate::ir::Program, v: &RegView) -> Vec<i64> {
    let s = &p.register(v.tensor).shape;
    v.perm(s.len()).iter().map(|&d| s[d]).collect()
}

/// Checks that a register tile is used in the thread group that declared it.
pub(crate) fn check_group(c: &mut Checker, v: &RegView, what: &str, loc: Loc, scope: &Scope) {
    let d = c.p.register(v.tensor);
    if v.transposed && d.shape.len() < 2 {
        let msg = format!(
            "{what}: `{}` has {} dimension(s); transpose() needs at least 2",
            d.name,
            d.shape.len()
        );
        c.err(loc, msg);
    }
    if d.group_threads != scope.threads {
        let msg = format!(
            "{what}: register tensor `{}` belongs to a group of {} threads but is used in a group of {}",
            d.name, d.group_threads, scope.threads
        );
        c.err(loc, msg);
    }
}

pub(super) fn check(c: &mut Checker, i: &MemoryInst, loc: Loc, scope: &Scope) {
    let p = c.p;
    match i {
        MemoryInst::GlobalView(g) => {
            let d = p.global(*g);
            let ptr = p.var(d.ptr);
            if ptr.pointee != Some(d.dtype) {
                c.err(
                    loc,
                    format!(
                        "global_view<{}> over a pointer to {}",
                        d.dtype,
                        ptr.pointee
                            .map_or("a non-pointer".to_string(), |t| t.to_string())
                    ),
                );
            }
            if d.shape.is_empty() || d.shape.len() > 5 {
                c.err(
                    loc,
                    format!("global_view needs 1 to 5 dimensions, got {}", d.shape.len()),
                );
            }
            for (i, e) in d.shape.iter().enumerate() {
                if let Some(v) = e.as_int() {
                    if v <= 0 {
                        c.err(
                            loc,
                            format!("global_view: dimension {i} is {v}; it must be positive"),
                        );
                    }
                }
            }
        }
        MemoryInst::AllocShared(id) => {
            if !scope.is_block {
                c.err(
                    loc,
                    "shared_tensor must be allocated by the whole block, outside thread groups",
                );
            }
            c.live_shared.insert(*id, scope.loop_id);
        }
        MemoryInst::FreeShared(id) => {
            let name = p.shared(*id).name.clone();
            if let Some(at) = c.freed_shared.get(id) {
                let msg = format!("free_shared(`{name}`): already freed at {at}");
                c.err(loc, msg);
            } else if let Some(alloc_loop) = c.live_shared.get(id).copied() {
                if alloc_loop != scope.loop_id {
                    c.err(loc, format!("free_shared(`{name}`) must be in the same loop as its allocation (it would run on every iteration)"));
                }
                if !scope.is_block {
                    c.err(
                        loc,
                        "free_shared must run in the whole block, outside thread groups",
                    );
                }
                c.live_shared.remove(id);
                c.freed_shared.insert(*id, loc);
            }
        }
        MemoryInst::AllocRegister { out, .. } => {
            let d = p.register(*out);
            if d.shape.is_empty() {
                c.err(loc, "register_tensor needs at least one dimension");
            }
        }
        MemoryInst::LoadShared { src, out } => {
            c.use_shared(*src, "load_shared", loc);
            let (s, r) = (p.shared(*src), p.register(*out));
            if s.dtype != r.dtype {
                c.err(
                    loc,
                    format!(
                        "load_shared: {} tile into a {} register tensor",
                        s.dtype, r.dtype
                    ),
                );
            }
        }
        MemoryInst::StoreShared { dst, src } => {
            c.use_shared(*dst, "store_shared", loc);
            check_group(c, src, "store_shared", loc, scope);
            let (sd, r) = (p.shared(*dst), p.register(src.tensor));
            if sd.dtype != r.dtype {
                c.err(
                    loc,
                    format!(
                        "store_shared: a {} tile into a {} shared tile; cast it first",
                        r.dtype, sd.dtype
                    ),
                );
            }
            let shape = view_shape(p, src);
            if shape != sd.shape {
                c.err(
                    loc,
                    format!(
                        "store_shared: the register tile is {shape:?}, the shared tile {:?}",
                        sd.shape
                    ),
                );
            }
        }
        MemoryInst::FenceProxyAsync => {}
        MemoryInst::StoreGlobal { dst, src, offsets } => {
            let g = p.global(*dst);
            let r = p.register(src.tensor);
            check_group(c, src, "store_global", loc, scope);
            if let Some((_, prm)) = p.param_of(g.ptr) {
                if let crate::ir::ParamKind::Pointer { mutable: false, .. } = prm.kind {
                    c.err(
                        loc,
                        format!(
                            "store_global writes through `{}`, a read-only Ptr; declare it PtrMut",
                            prm.name
                        ),
                    );
                }
            }
            if g.dtype != r.dtype {
                c.err(
                    loc,
                    format!(
                        "store_global: a {} tile into a {} view; cast it first",
                        r.dtype, g.dtype
                    ),
                );
            }
            if offsets.len() != g.shape.len() || r.shape.len() != g.shape.len() {
                c.err(
                    loc,
                    format!(
                        "store_global: view `{}` has {} dimensions, the tile {} and the offsets {}",
                        g.name,
                        g.shape.len(),
                        r.shape.len(),
                        offsets.len()
                    ),
                );
            }
        }
    }
}

/// Shared tiles written by ordinary stores are invisible to the async proxy (wgmma, TMA) until
/// the writing threads run `fence_proxy_async`: a wgmma that reads such a tile before a fence is
/// a diagnostic naming both lines.
pub(super) fn check_proxy_fences(c: &mut Checker) {
    use crate::ir::{Inst, Loc, SharedId, Stmt, StmtKind, TmaInst, WgmmaA, WgmmaInst};
    use std::collections::HashMap;
    fn walk(c: &mut Checker, stmts: &[Stmt], dirty: &mut HashMap<SharedId, Loc>) {
        for s in stmts {
            match &s.kind {
                StmtKind::For { body, .. } => {
                    walk(c, body, dirty);
                    walk(c, body, dirty);
                }
                StmtKind::ThreadGroup { body, .. } => walk(c, body, dirty),
                StmtKind::Inst(Inst::Memory(MemoryInst::StoreShared { dst, .. })) => {
                    dirty.insert(*dst, s.loc);
                }
                StmtKind::Inst(Inst::Memory(MemoryInst::FenceProxyAsync)) => dirty.clear(),
                StmtKind::Inst(Inst::Tma(TmaInst::GlobalToShared { dst, .. })) => {
                    dirty.remove(dst);
                }
                StmtKind::Inst(Inst::Wgmma(WgmmaInst::Mma { a, b, .. })) => {
                    let mut read = vec![b.tensor];
                    if let WgmmaA::Shared(v) = a {
                        read.push(v.tensor);
                    }
                    for t in read {
                        if let Some(at) = dirty.get(&t) {
                            let d = crate::Diagnostic {
                                loc: s.loc,
                                message: format!(
                                    "wgmma.mma reads `{}`, written by store_shared at {at} with no fence_proxy_async \
                                     since: the tensor cores may read stale bytes; call k.fence_proxy_async() \
                                     after the stores (then sync)",
                                    c.p.shared(t).name
                                ),
                            };
                            if !c.diags.contains(&d) {
                                c.diags.push(d);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let p = c.p;
    walk(c, &p.body, &mut HashMap::new());
}
