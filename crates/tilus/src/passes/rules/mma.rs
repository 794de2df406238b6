//! Rules for mma.sync products: shapes and dtypes; layout inference cuts the product into
//! m16n8k16 instructions over the group's warps and fixes its operands' fragment layouts.

use super::Rules;
use crate::ir::{DType, Loc, MmaInst, RegView};
use crate::layout::MmaPlan;
use crate::passes::context::{Checker, LayoutCx, Scope};

impl Rules for MmaInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let p = c.p;
        match self {
            MmaInst::Dot {
                a, b, c: acc, out, ..
            } => {
                let outv = RegView::plain(*out);
                for (v, n) in [(a, "a"), (b, "b"), (acc, "c")] {
                    c.check_view(v, &format!("dot operand {n}"), loc);
                }
                let (sa, sb, sc, so) = (
                    c.view_shape(a),
                    c.view_shape(b),
                    c.view_shape(acc),
                    c.view_shape(&outv),
                );
                if sa.len() != 2 || sb.len() != 2 || sc.len() != 2 {
                    c.err(loc, "dot takes 2-D tiles");
                    return;
                }
                if sa[1] != sb[0] || sa[0] != sc[0] || sb[1] != sc[1] || sc != so {
                    c.err(
                        loc,
                        format!("dot: shapes do not agree: a {sa:?} @ b {sb:?} + c {sc:?} -> out {so:?} (need [M, K] @ [K, N] + [M, N])"),
                    );
                }
                let (ta, tb) = (p.register(a.tensor).dtype, p.register(b.tensor).dtype);
                let (tc, to) = (p.register(acc.tensor).dtype, p.register(*out).dtype);
                if ta != tb || !matches!(ta, DType::F16 | DType::BF16) {
                    c.err(
                        loc,
                        format!("dot: operands must both be f16 or both bf16, got {ta} and {tb}"),
                    );
                }
                if tc != DType::F32 || to != DType::F32 {
                    c.err(
                        loc,
                        format!("dot: mma.sync accumulates in f32; c and out are {tc} and {to}"),
                    );
                }
            }
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            MmaInst::Dot { a, b, c, out, plan } => {
                let (sa, sc) = (cx.p.view_shape(a), cx.p.view_shape(c));
                if sa.len() != 2 || sc.len() != 2 {
                    return;
                }
                let warps = cx.p.register(*out).group_threads as i64 / 32;
                let Some(pl) = MmaPlan::choose(sa[0], sc[1], sa[1], warps) else {
                    cx.error(
                        loc,
                        format!(
                            "dot: [{}, {}] x [{}, {}] cannot be cut into m16n8k16 tiles over {warps} warps \
                             (M must split into multiples of 16 per warp, N into multiples of 8, K into multiples of 16)",
                            sa[0], sa[1], sa[1], sc[1]
                        ),
                    );
                    return;
                };
                *plan = Some(pl);
                let group = cx.p.register(*out).group_threads;
                cx.wish_operand(*a, pl.a_layout(), group, loc, "dot operand a");
                cx.wish_operand(*b, pl.b_layout(), group, loc, "dot operand b");
                cx.wish_operand(*c, pl.c_layout(), group, loc, "dot accumulator c");
                cx.require(*out, pl.c_layout(), loc, "dot output");
            }
        }
    }
}
