//! Rules for global views, shared and register tiles, loads, stores and global atomics;
//! atomics pass layouts between their tiles; lowering chooses the vector widths of
//! `load_global` and `store_global`.

use super::Rules;
use crate::ir::{AtomicOp, DType, Expr, GlobalId, Loc, MemoryInst, ParamKind, Program, RegView};
use crate::layout::RegisterLayout;
use crate::passes::context::{Checker, LayoutCx, LowerCx, Scope};

/// Reports a write (`what`) through a view of a read-only pointer.
fn writable(c: &mut Checker, g: GlobalId, what: &str, loc: Loc) {
    let p = c.p;
    if let Some((_, prm)) = p.param_of(p.global(g).ptr) {
        if let ParamKind::Pointer { mutable: false, .. } = prm.kind {
            c.err(
                loc,
                format!(
                    "{what} writes through `{}`, a read-only Ptr; declare it PtrMut",
                    prm.name
                ),
            );
        }
    }
}

/// Reports offsets or a tile whose rank is not the view's.
fn ranks(c: &mut Checker, g: GlobalId, what: &str, tile: usize, offsets: usize, loc: Loc) {
    let d = c.p.global(g);
    if offsets != d.shape.len() || tile != d.shape.len() {
        let msg = format!(
            "{what}: view `{}` has {} dimensions, the tile {tile} and the offsets {offsets}",
            d.name,
            d.shape.len()
        );
        c.err(loc, msg);
    }
}

/// The element types an atomic supports (PTX `atom`/`red`: 16-bit floats only add; f32
/// `min`/`max` go through integer atomics on the bits).
fn atomic_dtypes(op: AtomicOp, scalar: bool) -> &'static [DType] {
    match (scalar, op) {
        (true, _) => &[DType::I32, DType::U32],
        (false, AtomicOp::Add) => &[DType::F32, DType::I32, DType::U32, DType::F16, DType::BF16],
        (false, _) => &[DType::F32, DType::I32, DType::U32],
    }
}

fn check_atomic_dtype(c: &mut Checker, name: &str, op: AtomicOp, scalar: bool, t: DType, loc: Loc) {
    let ok = atomic_dtypes(op, scalar);
    if !ok.contains(&t) {
        let list: Vec<String> = ok.iter().map(|t| t.name()).collect();
        let hint = if scalar {
            "; use the tile form for other types".to_string()
        } else if t.bits() == 16 {
            "; atomics on 16-bit floats only add (cast to f32 for the others)".to_string()
        } else {
            String::new()
        };
        c.err(
            loc,
            format!(
                "{name} on a {t} view is not supported: it takes {}{hint}",
                list.join(", ")
            ),
        );
    }
}

/// A scalar access's index: as many coordinates as the view has dimensions.
fn index_rank(c: &mut Checker, name: &str, g: &crate::ir::GlobalDecl, coords: usize, loc: Loc) {
    if coords != g.shape.len() {
        let msg = format!(
            "{name}: view `{}` has {} dimensions, the index {coords}",
            g.name,
            g.shape.len()
        );
        c.err(loc, msg);
    }
}

/// A global view's or shared tile's element type: a valid one; narrower than a byte only
/// where `packed` (global views: their loads and stores move whole bytes; shared tiles take
/// 8-bit and wider elements for now).
fn check_element_type(c: &mut Checker, name: &str, t: DType, packed: bool, loc: Loc) {
    if !t.is_valid() {
        c.err(
            loc,
            format!("{name}: no element type {t:?} (see DType::is_valid)"),
        );
    } else if t.is_subbyte() && !packed {
        c.err(
            loc,
            format!(
                "{name}<{t}>: shared tiles of elements narrower than a byte are not supported \
                 yet (they take 8-bit and wider elements); load {t} from global memory into \
                 registers, or keep the packed bytes in a u8 tile"
            ),
        );
    }
}

impl Rules for MemoryInst {
    fn check(&self, c: &mut Checker, loc: Loc, scope: &Scope) {
        let p = c.p;
        match self {
            MemoryInst::GlobalView(g) => {
                let d = p.global(*g);
                check_element_type(c, "global_view", d.dtype, true, loc);
                let ptr = p.var(d.ptr);
                // packed elements lie in a buffer of bytes
                let bytes_of_packed = d.dtype.is_lowp() && ptr.pointee == Some(DType::U8);
                if ptr.pointee != Some(d.dtype) && !bytes_of_packed {
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
                for (i, e) in d.strides.iter().enumerate() {
                    if !e.dtype().is_int() {
                        c.err(
                            loc,
                            format!("global_view_strided: stride {i} is not an integer"),
                        );
                    } else if let Some(v) = e.eval(&|_| None).filter(|v| *v < 0) {
                        c.err(
                            loc,
                            format!(
                                "global_view_strided: stride {i} is {v}; strides must not be negative"
                            ),
                        );
                    }
                }
            }
            MemoryInst::AllocShared(id) => {
                check_element_type(c, "shared_tensor", p.shared(*id).dtype, false, loc);
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
            MemoryInst::FenceProxyAsync | MemoryInst::FenceGpu => {}
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                mask,
                ..
            } => {
                let g = p.global(*dst);
                let r = p.register(src.tensor);
                c.check_view(src, "store_global", loc);
                if let Some(m) = mask {
                    c.check_view(m, "store_global_where", loc);
                    let (t, shape) = (p.register(m.tensor).dtype, c.view_shape(m));
                    if t != DType::Bool || shape != c.view_shape(src) {
                        let msg = format!(
                            "store_global_where: the mask is {t} {shape:?}; it must be bool of the tile's shape {:?}",
                            c.view_shape(src)
                        );
                        c.err(loc, msg);
                    }
                }
                writable(c, *dst, "store_global", loc);
                if g.dtype != r.dtype {
                    c.err(
                        loc,
                        format!(
                            "store_global: a {} tile into a {} view; cast it first",
                            r.dtype, g.dtype
                        ),
                    );
                }
                ranks(c, *dst, "store_global", r.shape.len(), offsets.len(), loc);
            }
            MemoryInst::LoadGlobal {
                src, out, offsets, ..
            } => {
                let (g, r) = (p.global(*src), p.register(*out));
                if g.dtype != r.dtype {
                    c.err(
                        loc,
                        format!(
                            "load_global: a {} view into a {} register tensor",
                            g.dtype, r.dtype
                        ),
                    );
                }
                ranks(c, *src, "load_global", r.shape.len(), offsets.len(), loc);
            }
            MemoryInst::ScatterGlobal {
                dst,
                src,
                index,
                add,
            } => {
                let name = self.name();
                let (g, r) = (p.global(*dst), p.register(src.tensor));
                c.check_view(src, name, loc);
                writable(c, *dst, name, loc);
                if g.dtype.is_subbyte() {
                    let msg = format!(
                        "{name} into a view of packed {} elements: threads would share bytes; \
                         store whole rows with store_global",
                        g.dtype
                    );
                    c.err(loc, msg);
                } else if g.dtype != r.dtype {
                    let msg = format!(
                        "{name}: a {} tile into a {} view; cast it first",
                        r.dtype, g.dtype
                    );
                    c.err(loc, msg);
                } else if *add {
                    check_atomic_dtype(c, name, AtomicOp::Add, false, g.dtype, loc);
                } else if g.dtype.bits() != 32 {
                    let msg = format!(
                        "{name}: {} elements; scatters store 32-bit elements",
                        g.dtype
                    );
                    c.err(loc, msg);
                }
                if index.len() != g.shape.len() {
                    let msg = format!(
                        "{name}: {} index tile(s) for a view of {} dimension(s): one per dimension",
                        index.len(),
                        g.shape.len()
                    );
                    c.err(loc, msg);
                }
                let shape = c.view_shape(src);
                for v in index {
                    c.check_view(v, name, loc);
                    let t = p.register(v.tensor).dtype;
                    if t != DType::I32 || c.view_shape(v) != shape {
                        let msg = format!(
                            "{name}: an index tile is {t} {:?}; it must be i32 of the values' shape {shape:?}",
                            c.view_shape(v)
                        );
                        c.err(loc, msg);
                    }
                }
            }
            MemoryInst::AtomicGlobal {
                op,
                dst,
                src,
                compare,
                offsets,
                ..
            } => {
                let name = self.name();
                let (g, r) = (p.global(*dst), p.register(src.tensor));
                c.check_view(src, name, loc);
                writable(c, *dst, name, loc);
                if g.dtype != r.dtype {
                    c.err(
                        loc,
                        format!(
                            "{name}: a {} tile into a {} view; cast it first",
                            r.dtype, g.dtype
                        ),
                    );
                } else {
                    check_atomic_dtype(c, name, *op, false, g.dtype, loc);
                }
                if let Some(cmp) = compare {
                    c.check_view(cmp, name, loc);
                    let (a, b) = (c.view_shape(cmp), c.view_shape(src));
                    let t = p.register(cmp.tensor).dtype;
                    if a != b || t != r.dtype {
                        c.err(
                            loc,
                            format!(
                                "{name}: the compared tile is {t} {a:?}, the values {} {b:?}",
                                r.dtype
                            ),
                        );
                    }
                }
                ranks(c, *dst, name, r.shape.len(), offsets.len(), loc);
            }
            MemoryInst::LoadScalar { src, index, .. } => {
                let name = self.name();
                let g = p.global(*src);
                if ![DType::I32, DType::U32, DType::F32].contains(&g.dtype) {
                    c.err(
                        loc,
                        format!(
                            "{name} on a {} view is not supported: it takes i32, u32 and f32 \
                             views (load a tile with `load_global` for other types)",
                            g.dtype
                        ),
                    );
                }
                index_rank(c, name, g, index.len(), loc);
            }
            MemoryInst::AtomicScalar { op, dst, index, .. } => {
                let name = self.name();
                let g = p.global(*dst);
                writable(c, *dst, name, loc);
                check_atomic_dtype(c, name, *op, true, g.dtype, loc);
                index_rank(c, name, g, index.len(), loc);
            }
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        check_packed_vectors(self, c, loc);
        // old values go to the thread that updated the element: none may hold a copy of it
        let MemoryInst::AtomicGlobal {
            src, out: Some(_), ..
        } = self
        else {
            return;
        };
        let r = c.p.register(src.tensor);
        let Some(l) = &r.layout else { return };
        let threads = i64::from(r.group_threads);
        if (0..threads).any(|t| !l.is_first_copy(t)) {
            let msg = format!(
                "{}: the layout of `{}` ({l}) gives some elements to several of the group's {threads} \
                 threads, but only one of them receives the old value; use a tile with at least as \
                 many elements as the group has threads",
                self.name(),
                r.name
            );
            c.err(loc, msg);
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        // packed elements move in whole bytes per thread: their tiles take the vectorized
        // layout from the start, and a tile computed in another layout is converted (a cast)
        let (tile, view, g) = match self {
            MemoryInst::LoadGlobal { out, src, .. } => (*out, RegView::plain(*out), *src),
            MemoryInst::StoreGlobal { src, dst, .. } => (src.tensor, *src, *dst),
            _ => return,
        };
        let t = cx.p.global(g).dtype;
        let shape = cx.p.view_shape(&view);
        if !t.is_subbyte() || shape.is_empty() || shape.iter().any(|&n| n <= 0) {
            return;
        }
        let d = cx.p.register(tile);
        let threads = d.group_threads.max(1) as i64;
        let maskable = cx.maskable[tile.0 as usize];
        let l =
            crate::passes::infer_layout::fitted_layout_bits(&shape, threads, t.bits(), maskable);
        cx.require(tile, view.layout_of(&l), loc, "packed global access");
    }

    fn prefer_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        // tiles that only move between registers and global memory: 16-byte vectors along the
        // view's innermost dimension, consecutive threads on consecutive vectors
        let (tile, view) = match self {
            MemoryInst::LoadGlobal { out, .. } => (*out, RegView::plain(*out)),
            MemoryInst::StoreGlobal { src, .. } => (src.tensor, *src),
            _ => return,
        };
        let d = cx.p.register(tile);
        let shape = cx.p.view_shape(&view);
        if shape.is_empty() || shape.iter().any(|&n| n <= 0) {
            return;
        }
        let threads = d.group_threads.max(1) as i64;
        let maskable = cx.maskable[tile.0 as usize];
        let l = crate::passes::infer_layout::fitted_layout_bits(
            &shape,
            threads,
            d.dtype.bits(),
            maskable,
        );
        cx.prefer(tile, view.layout_of(&l), loc, "coalesced global access");
    }

    fn propagate_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        // the tiles an instruction reads or writes element by element together share one
        // layout: a masked store's values and mask, a scatter's values and index tiles, an
        // atomic's values, compared values and old values
        match self {
            MemoryInst::StoreGlobal {
                src, mask: Some(m), ..
            } => share_layout(cx, &[*src, *m], loc, "its masked store's other tile"),
            MemoryInst::ScatterGlobal { src, index, .. } => {
                let tiles: Vec<RegView> =
                    std::iter::once(*src).chain(index.iter().copied()).collect();
                share_layout(cx, &tiles, loc, "its scatter's other tiles");
            }
            MemoryInst::AtomicGlobal {
                src, compare, out, ..
            } => {
                let tiles: Vec<RegView> = std::iter::once(*src)
                    .chain(*compare)
                    .chain(out.map(RegView::plain))
                    .collect();
                share_layout(cx, &tiles, loc, "its atomic's other tiles");
            }
            _ => {}
        }
    }

    fn lower(&mut self, cx: &mut LowerCx, _loc: Loc) {
        match self {
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                vector,
                ..
            } => {
                let width = cx.p.register(src.tensor).layout.as_ref().map_or(1, |l| {
                    global_vector_width(cx, *dst, &src.layout_of(l), offsets)
                });
                *vector = Some(width);
                let bytes = vector_alignment(width, cx.p.global(*dst).dtype);
                cx.require_alignment(
                    *dst,
                    bytes,
                    format!("store_global writes {bytes}-byte vectors"),
                );
            }
            MemoryInst::LoadGlobal {
                src,
                out,
                offsets,
                vector,
                ..
            } => {
                let width =
                    cx.p.register(*out)
                        .layout
                        .as_ref()
                        .map_or(1, |l| global_vector_width(cx, *src, l, offsets));
                *vector = Some(width);
                let bytes = vector_alignment(width, cx.p.global(*src).dtype);
                cx.require_alignment(
                    *src,
                    bytes,
                    format!("load_global reads {bytes}-byte vectors"),
                );
            }
            MemoryInst::GlobalView(_)
            | MemoryInst::AllocShared(_)
            | MemoryInst::FreeShared(_)
            | MemoryInst::AllocRegister { .. }
            | MemoryInst::LoadShared { .. }
            | MemoryInst::StoreShared { .. }
            | MemoryInst::FenceProxyAsync
            | MemoryInst::FenceGpu
            | MemoryInst::AtomicGlobal { .. }
            | MemoryInst::ScatterGlobal { .. }
            | MemoryInst::AtomicScalar { .. }
            | MemoryInst::LoadScalar { .. } => {}
        }
    }
}

/// The alignment a vector of `width` elements of `t` needs: its bytes, or for packed elements
/// whose vectors are not a power of two bytes long (3, 5, 6, 7 bits), 1 (they move byte by
/// byte).
fn vector_alignment(width: u32, t: DType) -> u32 {
    let bytes = (width * t.bits()).div_ceil(8);
    if bytes.is_power_of_two() {
        bytes
    } else {
        1
    }
}

/// Elements of a view narrower than a byte move in whole bytes: the vector width lowering
/// will choose must cover at least `8 / gcd(bits, 8)` elements (two 4-bit, four 2-bit, eight
/// of 1, 3, 5, 6 or 7 bits), so that no byte is shared between threads or split between
/// vectors.
fn check_packed_vectors(i: &MemoryInst, c: &mut Checker, loc: Loc) {
    let (g, view, offsets) = match i {
        MemoryInst::LoadGlobal {
            src, out, offsets, ..
        } => (*src, RegView::plain(*out), offsets),
        MemoryInst::StoreGlobal {
            dst, src, offsets, ..
        } => (*dst, *src, offsets),
        _ => return,
    };
    let p = c.p;
    let t = p.global(g).dtype;
    if !t.is_subbyte() {
        return;
    }
    let Some(layout) = p.register(view.tensor).layout.as_ref() else {
        return;
    };
    let need = 8 / gcd(t.bits(), 8);
    let cx = LowerCx {
        p,
        tensor_maps: vec![],
        alignments: vec![],
        divisibility: crate::passes::lower::divisibility_in(p, &p.body),
    };
    let width = global_vector_width(&cx, g, &view.layout_of(layout), offsets);
    if width < need {
        let msg = format!(
            "{}: {t} elements are packed ({} bits each), so each thread must move whole bytes: at \
             least {need} consecutive elements of the innermost dimension per thread, starting at \
             a multiple of {need} (the view's innermost stride 1, its other strides and the \
             innermost offset multiples of {need}); here the layout `{layout}` and the view allow \
             {width}",
            i.name(),
            t.bits(),
        );
        c.err(loc, msg);
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Gives every tile of `tiles` of the first one's shape the layout the first of them with a
/// known layout has (seen through each tile's view).
fn share_layout(cx: &mut LayoutCx, tiles: &[RegView], loc: Loc, why: &'static str) {
    let Some(first) = tiles.first() else {
        return;
    };
    let shape = cx.p.view_shape(first);
    let known = tiles
        .iter()
        .find_map(|v| cx.get(v.tensor).map(|l| v.layout_of(&l)));
    let Some(l) = known.filter(|l| l.shape() == &shape[..]) else {
        return;
    };
    for v in tiles {
        if cx.p.view_shape(v) == shape {
            cx.require(v.tensor, v.layout_of(&l), loc, why);
        }
    }
}

/// Elements per vector access that `load_global` and `store_global` may use between view `g`
/// and a tile laid out as `layout` (in the view's dimension order): the widest power of two (up
/// to 16 bytes) for which each thread's consecutive locals are adjacent along the innermost
/// dimension, the thread terms keep vectors whole, the innermost stride is 1, and the other
/// strides and the innermost offset keep vectors aligned (their divisibility).
pub(super) fn global_vector_width(
    cx: &LowerCx,
    g: GlobalId,
    layout: &RegisterLayout,
    offsets: &[Expr],
) -> u32 {
    let p: &Program = cx.p;
    let g = p.global(g);
    let rank = layout.rank();
    if rank == 0 || rank != g.shape.len() || g.const_stride(rank - 1) != Some(1) {
        return 1;
    }
    let last = rank - 1;
    let max_bits = 128u32;
    let elem = g.dtype.bits();
    let mut width = 1u32;
    let mut cand = 2u32;
    while cand * elem <= max_bits && (layout.local_size() as u32).is_multiple_of(cand) {
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
        // the other strides (the row pitch) and the offset of the innermost dimension must keep
        // vectors aligned
        let pitch_ok = g.strides[..last]
            .iter()
            .all(|s| cx.divisibility(s) % cand as i64 == 0);
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
