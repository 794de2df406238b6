//! Rules for copies by threads (`copy_async`): the view and the tile agree in type and rank;
//! lowering chooses the bytes per copy — the widest of 16, 8 and 4 that the view's strides and
//! offsets keep aligned (as for `load_global`) and the tile's layout keeps in one aligned run
//! of shared memory — and asks the launch for the view's alignment. That the tile is not used
//! before the wait that covers the copy, and is waited for before the end, follows from the
//! facts (`verify/hazards.rs`).

use super::memory::global_vector_width;
use super::Rules;
use crate::ir::{CpAsyncInst, Loc, Program, SharedView};
use crate::layout::RegisterLayout;
use crate::passes::context::{Checker, LowerCx, Scope};

impl Rules for CpAsyncInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let CpAsyncInst::Copy {
            src, dst, offsets, ..
        } = self
        else {
            return;
        };
        let p = c.p;
        let name = self.name();
        c.check_sview(dst, name, loc);
        let (g, s) = (p.global(*src), p.shared(dst.tensor));
        if g.dtype != s.dtype {
            let msg = format!(
                "{name}: a {} view into a {} tile; the copy moves bytes, so the types must be the same",
                g.dtype, s.dtype
            );
            c.err(loc, msg);
        }
        let tile = p.sview_stored_shape(dst);
        if tile.len() != g.shape.len() || offsets.len() != g.shape.len() {
            let msg = format!(
                "{name}: view `{}` has {} dimensions, tile `{}` {} and the offsets {}: all three must agree",
                g.name,
                g.shape.len(),
                p.sview_name(dst),
                tile.len(),
                offsets.len()
            );
            c.err(loc, msg);
        }
    }

    fn lower(&mut self, cx: &mut LowerCx, _loc: Loc) {
        let Some(layout) = self.layout(cx.p) else {
            return;
        };
        let CpAsyncInst::Copy {
            src,
            dst,
            offsets,
            vector,
            ..
        } = self
        else {
            return;
        };
        let global = global_vector_width(cx, *src, &layout, offsets);
        let width = shared_run_width(cx.p, dst, &layout, global);
        *vector = Some(width);
        let bytes = width * cx.p.global(*src).dtype.nbytes();
        if bytes >= 4 {
            cx.require_alignment(
                *src,
                bytes,
                format!("copy_async copies {bytes}-byte vectors"),
            );
        }
    }
}

/// The widest power of two up to `limit` elements such that every thread's runs of that many
/// locals lie in one aligned run of the tile's bytes (a swizzle keeps 16-byte units whole;
/// a padded or column-blocked layout may cut rows), the view's first byte included.
fn shared_run_width(p: &Program, dst: &SharedView, l: &RegisterLayout, limit: u32) -> u32 {
    let Some(sl) = p.sview_layout(dst) else {
        return 1;
    };
    let d = p.shared(dst.tensor);
    let elem = i64::from(d.dtype.nbytes());
    // the view's first byte from the tile's: the rows it starts at, the stage (any stage)
    let mut base_align = p.sview_row_offset_bytes(dst);
    if dst.stage.is_some() {
        if let Some(whole) = &d.layout {
            base_align = gcd(base_align, i64::from(whole.stage_bytes()));
        }
    }
    let (ls, threads) = (l.local_size(), l.num_threads());
    let last = l.rank().saturating_sub(1);
    let mut width = limit.max(1);
    while width > 1 {
        let w = i64::from(width);
        let bytes = w * elem;
        let ok = ls % w == 0
            && (base_align == 0 || base_align % bytes == 0)
            && (0..threads).all(|t| {
                (0..ls).step_by(width as usize).all(|first| {
                    let c0 = l.coords(t, first);
                    let b0 = i64::from(sl.byte_offset(&c0));
                    b0 % bytes == 0
                        && (1..w).all(|j| {
                            let c = l.coords(t, first + j);
                            c[..last] == c0[..last]
                                && c[last] == c0[last] + j
                                && i64::from(sl.byte_offset(&c)) == b0 + j * elem
                        })
                })
            });
        if ok {
            break;
        }
        width /= 2;
    }
    width
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}
