//! Rules for global views, shared and register tiles, loads and stores; lowering chooses the
//! vector width of `store_global`.

use super::Rules;
use crate::ir::{Loc, MemoryInst, ParamKind, Program, RegView};
use crate::passes::context::{Checker, LowerCx, Scope};

impl Rules for MemoryInst {
    fn check(&self, c: &mut Checker, loc: Loc, scope: &Scope) {
        let p = c.p;
        match self {
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
                c.live_shared.insert(*id, (scope.loop_id, scope.branch_id));
            }
            MemoryInst::FreeShared(id) => {
                let name = p.shared(*id).name.clone();
                if let Some(at) = c.freed_shared.get(id) {
                    let msg = format!("free_shared(`{name}`): already freed at {at}");
                    c.err(loc, msg);
                } else if let Some((alloc_loop, alloc_branch)) = c.live_shared.get(id).copied() {
                    if alloc_loop != scope.loop_id {
                        c.err(loc, format!("free_shared(`{name}`) must be in the same loop as its allocation (it would run on every iteration)"));
                    } else if alloc_branch != scope.branch_id {
                        // On the path that does not free it the tile stays allocated (and may
                        // be used after the `if`): its life would end in one branch only,
                        // which the shared-memory plan cannot place.
                        let at = scope
                            .branch_loc
                            .map_or(String::new(), |l| format!(" (the if at {l})"));
                        c.err(loc, format!(
                            "free_shared(`{name}`) must be in the same branch as its allocation{at}: \
                             on the other path the tile would stay allocated; free it after the if"
                        ));
                    }
                    c.live_shared.remove(id);
                    c.freed_shared.insert(*id, loc);
                }
            }
            MemoryInst::AllocRegister { out, .. } => {
                if p.register(*out).shape.is_empty() {
                    c.err(loc, "register_tensor needs at least one dimension");
                }
            }
            MemoryInst::LoadShared { src, out } => {
                c.check_sview(src, "load_shared", loc);
                let (s, r) = (p.shared(src.tensor), p.register(*out));
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
                c.check_view(src, "store_shared", loc);
                c.check_sview(dst, "store_shared", loc);
                let (sd, r) = (p.shared(dst.tensor), p.register(src.tensor));
                if sd.dtype != r.dtype {
                    c.err(
                        loc,
                        format!(
                            "store_shared: a {} tile into a {} shared tile; cast it first",
                            r.dtype, sd.dtype
                        ),
                    );
                }
                let shape = c.view_shape(src);
                let tile = p.sview_stored_shape(dst);
                if shape != tile {
                    c.err(
                        loc,
                        format!(
                            "store_shared: the register tile is {shape:?}, the shared tile {tile:?}"
                        ),
                    );
                }
            }
            MemoryInst::FenceProxyAsync => {}
            MemoryInst::StoreGlobal {
                dst, src, offsets, ..
            } => {
                let g = p.global(*dst);
                let r = p.register(src.tensor);
                c.check_view(src, "store_global", loc);
                if let Some((_, prm)) = p.param_of(g.ptr) {
                    if let ParamKind::Pointer { mutable: false, .. } = prm.kind {
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

    fn lower(&mut self, cx: &mut LowerCx, _loc: Loc) {
        match self {
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                vector,
            } => {
                let width = store_vector_width(cx, *dst, src, offsets);
                *vector = Some(width);
                let bytes = width * cx.p.global(*dst).dtype.nbytes();
                cx.require_alignment(
                    *dst,
                    bytes,
                    format!("store_global writes {bytes}-byte vectors"),
                );
            }
            MemoryInst::GlobalView(_)
            | MemoryInst::AllocShared(_)
            | MemoryInst::FreeShared(_)
            | MemoryInst::AllocRegister { .. }
            | MemoryInst::LoadShared { .. }
            | MemoryInst::StoreShared { .. }
            | MemoryInst::FenceProxyAsync => {}
        }
    }
}

/// Elements per vector store that `store_global` may use for tile `src` into view `dst`: the
/// widest power of two (up to 16 bytes) for which each thread's consecutive locals are
/// adjacent along the last dimension, the thread terms keep vectors whole, and the row pitch
/// and the offset keep them aligned.
fn store_vector_width(
    cx: &LowerCx,
    dst: crate::ir::GlobalId,
    src: &RegView,
    offsets: &[crate::ir::Expr],
) -> u32 {
    let p: &Program = cx.p;
    let g = p.global(dst);
    let r = p.register(src.tensor);
    let Some(layout) = &r.layout else { return 1 };
    let layout = layout.permute(&src.perm(layout.rank()));
    let rank = layout.rank();
    let last = rank - 1;
    let max_bytes = 16u32;
    let elem = g.dtype.nbytes();
    let mut width = 1u32;
    let mut cand = 2u32;
    while cand * elem <= max_bytes && (layout.local_size() as u32).is_multiple_of(cand) {
        let ok_locals = (0..layout.local_size()).step_by(cand as usize).all(|l| {
            let base = layout.local_coords(l);
            base[last] % cand as i64 == 0
                && (1..cand as i64).all(|j| {
                    let c = layout.local_coords(l + j);
                    c[last] == base[last] + j && (0..last).all(|d| c[d] == base[d])
                })
        });
        let ok_threads = layout.thread_terms()[last]
            .iter()
            .all(|t| t.stride % cand as i64 == 0);
        // the row pitch and the offset of the last dimension must keep vectors aligned
        let pitch_ok = g
            .shape
            .last()
            .and_then(|e| e.as_int())
            .is_some_and(|n| n % cand as i64 == 0)
            || rank == 1;
        let off_ok = offsets
            .get(last)
            .is_some_and(|o| cx.divisibility(o) % cand as i64 == 0);
        if ok_locals && ok_threads && pitch_ok && off_ok {
            width = cand;
            cand *= 2;
        } else {
            break;
        }
    }
    width
}
