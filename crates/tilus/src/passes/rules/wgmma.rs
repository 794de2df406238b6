//! Rules for warp-group MMA: operand kinds, shapes and dtypes; the operand tiles' layouts once
//! known; layout inference chooses the instruction shape and fixes the accumulator's (and a
//! register operand's) layout. That nothing touches the accumulator before the wait that
//! covers it is checked over the facts (`verify/hazards.rs`).

use super::Rules;
use crate::ir::{b_mn_major, DType, Loc, SharedView, WgmmaA, WgmmaInst};
use crate::layout::WgmmaPlan;
use crate::passes::context::{Checker, LayoutCx, Scope};

fn shared_shape(c: &Checker, v: &SharedView) -> Vec<i64> {
    c.p.sview_shape(v)
}

impl Rules for WgmmaInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let WgmmaInst::Mma {
            a, b, d, target, ..
        } = self
        else {
            return;
        };
        let p = c.p;
        let (sa, ta) = match a {
            WgmmaA::Shared(v) => {
                c.check_sview(v, "wgmma.mma operand a", loc);
                (shared_shape(c, v), p.shared(v.tensor).dtype)
            }
            WgmmaA::Register(v) => {
                c.check_view(v, "wgmma.mma operand a", loc);
                (c.view_shape(v), p.register(v.tensor).dtype)
            }
        };
        c.check_sview(b, "wgmma.mma operand b", loc);
        let sb = shared_shape(c, b);
        let sd = p.register(*d).shape.clone();
        let tb = p.shared(b.tensor).dtype;
        let td = p.register(*d).dtype;
        if sa.len() != 2 || sb.len() != 2 || sd.len() != 2 {
            c.err(loc, "wgmma.mma takes 2-D tiles");
            return;
        }
        match target.window {
            None => {
                if sa[1] != sb[0] || sa[0] != sd[0] || sb[1] != sd[1] {
                    c.err(loc, format!("wgmma.mma: shapes do not agree: a {sa:?} @ b {sb:?} + d {sd:?} (need [M, K] @ [K, N] + [M, N])"));
                }
            }
            Some(start) => {
                if sa[1] != sb[0] || sa[0] != sd[0] {
                    c.err(loc, format!("wgmma.mma: shapes do not agree: a {sa:?} @ b {sb:?} into d {sd:?} (need [M, K] @ [K, N] into [M, N'])"));
                }
                if start < 0 || start % 8 != 0 || start.saturating_add(sb[1]) > sd[1] {
                    c.err(loc, format!("wgmma.mma: the window of columns {start} .. {} is not within the accumulator's {} columns, starting at a multiple of 8", start.saturating_add(sb[1]), sd[1]));
                }
            }
        }
        let fp8 = |t: DType| t == DType::F8E4M3 || t == DType::F8E5M2;
        if fp8(ta) && fp8(tb) {
            // FP8: K-major shared operands only, f32 accumulation
            let a_ok = matches!(a, WgmmaA::Shared(_)) && !a.mn_major();
            if !a_ok || b_mn_major(b) {
                c.err(
                    loc,
                    "wgmma.mma: FP8 operands must be K-major tiles in shared memory: a [M, K] \
                     as stored, b an [N, K] tile seen through .transpose() (the hardware has no \
                     transpose or register operand for 8-bit types)",
                );
            }
            if td != DType::F32 {
                c.err(
                    loc,
                    format!("wgmma.mma: FP8 products accumulate in f32, not {td}"),
                );
            }
            return;
        }
        if ta != tb || !matches!(ta, DType::F16 | DType::BF16) {
            c.err(
                loc,
                format!(
                    "wgmma.mma: operands must both be f16, both bf16, or each f8e4m3 or f8e5m2; got {ta} and {tb}"
                ),
            );
        }
        // f32 accumulation always; f16 accumulation as an explicit choice (an f16
        // accumulator), for f16 inputs only.
        if !(td == DType::F32 || (td == DType::F16 && ta == DType::F16)) {
            c.err(
                loc,
                format!("wgmma.mma: the accumulator must be f32 (or f16 with f16 inputs), got {td} with {ta} inputs"),
            );
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        let WgmmaInst::Mma { a, b, plan, .. } = self else {
            return;
        };
        let mut tiles = vec![(b, b_mn_major(b))];
        if let WgmmaA::Shared(v) = a {
            tiles.push((v, a.mn_major()));
        }
        for (t, mn_major) in tiles {
            if let Some(l) = c.p.sview_layout(t) {
                if let Err(why) = crate::layout::wgmma::check_operand_layout(&l, mn_major) {
                    let msg = format!("wgmma.mma: tile `{}`: {why}", c.p.sview_name(t));
                    c.err(loc, msg);
                }
                // an MN-major B's instructions start at column blocks (each a whole span of N)
                if let (true, Some(p), Some(cb)) = (mn_major && t == b, plan, l.col_block) {
                    if p.n_chunks > 1 && p.n % cb != 0 {
                        let msg = format!(
                            "wgmma.mma: MN-major operand b `{}` is cut into instructions of {} \
                             columns, which do not start at its {cb}-column blocks",
                            c.p.sview_name(t),
                            p.n
                        );
                        c.err(loc, msg);
                    }
                }
                if t.rows.is_some() && l.col_block.is_some() {
                    let msg = format!(
                        "wgmma.mma: rows() of `{}`, a tile stored in column blocks (MN-major): \
                         take a stage or the whole tile",
                        c.p.sview_name(t)
                    );
                    c.err(loc, msg);
                }
            }
            c.check_async_sview(t, "wgmma.mma", loc);
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        let WgmmaInst::Mma {
            a,
            b,
            d,
            target,
            plan,
        } = self
        else {
            return;
        };
        let dshape = &cx.p.register(*d).shape;
        let bshape = cx.p.sview_shape(b);
        if dshape.len() != 2 || bshape.len() != 2 {
            return;
        }
        // b is [K, N] as seen (an [N, K] tile transposed, or a [K, N] tile); a window's
        // product covers N of the accumulator's columns, whose layout is the whole
        // accumulator's
        let (k, n) = (bshape[0], bshape[1]);
        // 32 bytes of K per instruction: 16 of 16-bit elements, 32 of FP8
        let deep = if cx.p.shared(b.tensor).dtype.bits() == 8 {
            crate::layout::wgmma::WGMMA_K_FP8
        } else {
            crate::layout::wgmma::WGMMA_K
        };
        let plans = WgmmaPlan::choose_deep(dshape[0], dshape[1], k, deep).and_then(|whole| {
            let product = match target.window {
                Some(_) => WgmmaPlan::choose_deep(dshape[0], n, k, deep)?,
                None => whole,
            };
            Ok((product, whole))
        });
        match plans {
            Ok((pl, whole)) => {
                *plan = Some(pl);
                cx.require(*d, whole.d_layout(), loc, "wgmma accumulator");
                if let WgmmaA::Register(v) = a {
                    let group = cx.p.register(*d).group_threads;
                    cx.wish_operand(*v, pl.a_layout(), group, loc, "wgmma operand a");
                }
            }
            Err(why) => cx.error(loc, format!("wgmma.mma: {why}")),
        }
    }
}
