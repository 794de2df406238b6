//! Rules for TMA copies: shapes, dtypes and the tensor-map limits (the swizzle span once
//! layouts are known); lowering gives each copy its tensor map and the view the 16-byte
//! alignment TMA needs.

use super::Rules;
use crate::ir::{Loc, TmaInst};
use crate::passes::context::{Checker, LowerCx, Scope};

/// Largest extent of a TMA box along any dimension.
pub const MAX_BOX_DIM: i64 = 256;

impl Rules for TmaInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let p = c.p;
        match self {
            TmaInst::GlobalToShared {
                src, dst, offsets, ..
            } => {
                let (g, s) = (p.global(*src), p.shared(*dst));
                if g.dtype != s.dtype {
                    c.err(
                        loc,
                        format!(
                            "tma.global_to_shared: {} view into a {} tile",
                            g.dtype, s.dtype
                        ),
                    );
                }
                if g.shape.len() != s.shape.len() || offsets.len() != g.shape.len() {
                    c.err(
                        loc,
                        format!(
                            "tma.global_to_shared: view `{}` has {} dimensions, tile `{}` {} and the offsets {}",
                            g.name,
                            g.shape.len(),
                            s.name,
                            s.shape.len(),
                            offsets.len()
                        ),
                    );
                    return;
                }
                for (d, &b) in s.shape.iter().enumerate() {
                    if b > MAX_BOX_DIM {
                        c.err(loc, format!("tma.global_to_shared: tile `{}` is {b} long in dimension {d}; a TMA box allows at most {MAX_BOX_DIM}", s.name));
                    }
                }
                let inner_bytes = s.shape.last().copied().unwrap_or(1) * s.dtype.nbytes() as i64;
                if inner_bytes % 16 != 0 {
                    c.err(loc, format!("tma.global_to_shared: the tile's rows are {inner_bytes} bytes; TMA needs a multiple of 16"));
                }
                // Row strides of the view (every dimension but the innermost) must be multiples
                // of 16 bytes; strides that depend on runtime sizes are checked at launch, and
                // so are strides past i64 (no buffer is that large).
                let elem = g.dtype.nbytes() as i64;
                for d in 0..g.shape.len().saturating_sub(1) {
                    let inner: Option<i64> = g.shape[d + 1..]
                        .iter()
                        .try_fold(1i64, |n, e| n.checked_mul(e.as_int()?));
                    if let Some(stride) = inner.and_then(|n| n.checked_mul(elem)) {
                        if stride % 16 != 0 {
                            c.err(
                                loc,
                                format!(
                                    "tma.global_to_shared: view `{}` has a stride of {stride} bytes in dimension {d}; TMA needs \
                                     strides that are multiples of 16 bytes (pad rows to a multiple of {} elements)",
                                    g.name,
                                    16 / elem.max(1)
                                ),
                            );
                        }
                    }
                }
            }
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        match self {
            TmaInst::GlobalToShared { dst, .. } => {
                let d = c.p.shared(*dst);
                if let Some(l) = &d.layout {
                    let inner = (*d.shape.last().unwrap_or(&1) as u32) * d.dtype.nbytes();
                    if inner > l.swizzle.span_bytes() {
                        let msg = format!(
                            "tma.global_to_shared: tile `{}` has {inner}-byte rows, wider than its {} swizzle allows",
                            d.name,
                            l.swizzle.name()
                        );
                        c.err(loc, msg);
                    }
                }
            }
        }
    }

    fn lower(&mut self, cx: &mut LowerCx, _loc: Loc) {
        match self {
            TmaInst::GlobalToShared { src, dst, map, .. } => {
                *map = Some(cx.tensor_map(*src, *dst));
                cx.require_alignment(*src, 16, "TMA needs a 16-byte aligned base address".into());
            }
        }
    }
}
