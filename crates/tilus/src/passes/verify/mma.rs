//! Rules for tensor-core products.

use super::memory::{check_group, view_shape};
use super::{Checker, Scope};
use crate::ir::{DType, Loc, MmaInst, RegView};

pub(super) fn check(c: &mut Checker, i: &MmaInst, loc: Loc, scope: &Scope) {
    let p = c.p;
    let MmaInst::Dot {
        a, b, c: acc, out, ..
    } = i;
    let outv = RegView::plain(*out);
    for (v, n) in [(a, "a"), (b, "b"), (acc, "c"), (&outv, "out")] {
        check_group(c, v, &format!("dot operand {n}"), loc, scope);
    }
    if !scope.threads.is_multiple_of(32) {
        c.err(
            loc,
            format!(
                "dot runs on whole warps; the current group has {} threads",
                scope.threads
            ),
        );
    }
    let (sa, sb, sc, so) = (
        view_shape(p, a),
        view_shape(p, b),
        view_shape(p, acc),
        view_shape(p, &outv),
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
