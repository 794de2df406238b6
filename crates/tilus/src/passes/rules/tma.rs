//! Rules for TMA copies, loads and stores alike: shapes, dtypes and the tensor-map limits (the
//! swizzle span once layouts are known), a writable view for stores; lowering gives each copy
//! its tensor map and the view the 16-byte alignment TMA needs. That a store's source is
//! published, stays unwritten until the wait that covers it and is waited for before the end
//! follows from the facts (`verify/fences.rs`, `verify/hazards.rs`).

use super::Rules;
use crate::ir::{Expr, GlobalId, Loc, ParamKind, SharedView, TmaInst};
use crate::passes::context::{Checker, LowerCx, Scope};

/// Largest extent of a TMA box along any dimension.
pub const MAX_BOX_DIM: i64 = 256;

/// What every TMA copy needs of its view, tile and offsets.
fn check_box(
    c: &mut Checker,
    name: &str,
    view: GlobalId,
    tile: &SharedView,
    offsets: &[Expr],
    loc: Loc,
) {
    let p = c.p;
    c.check_sview(tile, name, loc);
    let (g, s) = (p.global(view), p.shared(tile.tensor));
    // the box: the tile's elements, or one stage's
    let shape = p.sview_stored_shape(tile);
    let tile_name = p.sview_name(tile);
    if g.dtype != s.dtype {
        let msg = match name {
            "tma.global_to_shared" => format!("{name}: {} view into a {} tile", g.dtype, s.dtype),
            _ => format!("{name}: {} tile into a {} view", s.dtype, g.dtype),
        };
        c.err(loc, msg);
    }
    // a tile of fewer dimensions than the view is a box one element deep in the view's
    // leading dimensions (one matrix of a batch)
    if g.shape.len() < shape.len() || offsets.len() != g.shape.len() {
        c.err(
            loc,
            format!(
                "{name}: view `{}` has {} dimensions, tile `{tile_name}` {} and the offsets {} \
                 (the offsets name an element of the view; the tile may leave out leading \
                 dimensions of the view, which the box then takes one element deep)",
                g.name,
                g.shape.len(),
                shape.len(),
                offsets.len()
            ),
        );
        return;
    }
    for (d, &b) in shape.iter().enumerate() {
        if b > MAX_BOX_DIM {
            c.err(loc, format!("{name}: tile `{tile_name}` is {b} long in dimension {d}; a TMA box allows at most {MAX_BOX_DIM}"));
        }
    }
    let inner_bytes = shape.last().copied().unwrap_or(1) * s.dtype.nbytes() as i64;
    if inner_bytes % 16 != 0 {
        c.err(
            loc,
            format!("{name}: the tile's rows are {inner_bytes} bytes; TMA needs a multiple of 16"),
        );
    }
    // The view's innermost stride must be 1 and the others multiples of 16 bytes; strides
    // that depend on runtime arguments are checked at launch, and so are strides past i64 (no
    // buffer is that large).
    let elem = g.dtype.nbytes() as i64;
    let rank = g.shape.len();
    if rank == 0 {
        return;
    }
    if let Some(s) = g.const_stride(rank - 1).filter(|&s| s != 1) {
        c.err(
            loc,
            format!(
                "{name}: view `{}` has an innermost stride of {s}; TMA needs the innermost \
                 dimension contiguous (stride 1)",
                g.name
            ),
        );
    }
    for d in 0..rank - 1 {
        let Some(stride) = g.const_stride(d).and_then(|s| s.checked_mul(elem)) else {
            continue;
        };
        if stride == 0 {
            c.err(
                loc,
                format!(
                    "{name}: view `{}` has a stride of 0 in dimension {d}; TMA needs positive strides",
                    g.name
                ),
            );
        } else if stride % 16 != 0 {
            c.err(
                loc,
                format!(
                    "{name}: view `{}` has a stride of {stride} bytes in dimension {d}; TMA needs \
                     strides that are multiples of 16 bytes (pad rows to a multiple of {} elements)",
                    g.name,
                    16 / elem.max(1)
                ),
            );
        }
    }
}

/// Once layouts are known: the tile's rows must fit its swizzle's span, and a stage must start
/// where its swizzle can.
fn check_swizzle_span(c: &mut Checker, name: &str, tile: &SharedView, loc: Loc) {
    let d = c.p.shared(tile.tensor);
    if let Some(l) = &d.layout {
        // one box per column block of a tile stored in them
        let inner = l.row_span() as u32 * d.dtype.nbytes();
        if inner > l.swizzle.span_bytes() {
            let msg = format!(
                "{name}: tile `{}` has {inner}-byte rows, wider than its {} swizzle allows",
                d.name,
                l.swizzle.name()
            );
            c.err(loc, msg);
        }
    }
    c.check_async_sview(tile, name, loc);
}

impl Rules for TmaInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let name = self.name();
        match self {
            TmaInst::GlobalToShared {
                src,
                dst,
                offsets,
                multicast,
                ..
            } => {
                check_box(c, name, *src, dst, offsets, loc);
                if multicast.is_some() && !c.p.clustered {
                    c.err(
                        loc,
                        "tma.global_to_shared_multicast in a kernel without clusters: declare \
                         them with k.cluster_blocks([..]), or copy with global_to_shared",
                    );
                }
            }
            TmaInst::SharedToGlobal {
                src, dst, offsets, ..
            } => {
                check_box(c, name, *dst, src, offsets, loc);
                let g = c.p.global(*dst);
                if let Some((_, prm)) = c.p.param_of(g.ptr) {
                    if let ParamKind::Pointer { mutable: false, .. } = prm.kind {
                        let msg = format!(
                            "{name} writes through `{}`, a read-only Ptr; declare it PtrMut",
                            prm.name
                        );
                        c.err(loc, msg);
                    }
                }
            }
            TmaInst::CommitGroup | TmaInst::WaitGroup { .. } => {}
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        let name = self.name();
        match self {
            TmaInst::GlobalToShared { dst: tile, .. }
            | TmaInst::SharedToGlobal { src: tile, .. } => check_swizzle_span(c, name, tile, loc),
            TmaInst::CommitGroup | TmaInst::WaitGroup { .. } => {}
        }
    }

    fn lower(&mut self, cx: &mut LowerCx, _loc: Loc) {
        let (view, tile, map, store) = match self {
            TmaInst::GlobalToShared { src, dst, map, .. } => (*src, &*dst, map, false),
            TmaInst::SharedToGlobal { src, dst, map, .. } => (*dst, &*src, map, true),
            TmaInst::CommitGroup | TmaInst::WaitGroup { .. } => return,
        };
        let id = cx.tensor_map(view, tile);
        if store {
            cx.tensor_maps[id.0 as usize].stores = true;
        }
        *map = Some(id);
        cx.require_alignment(view, 16, "TMA needs a 16-byte aligned base address".into());
    }
}
