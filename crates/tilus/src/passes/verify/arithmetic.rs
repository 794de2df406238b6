//! Rules for elementwise register operations.

use super::memory::{check_group, view_shape};
use super::{Checker, Scope};
use crate::ir::{ArithInst, Loc, RegView};

pub(super) fn check(c: &mut Checker, i: &ArithInst, loc: Loc, scope: &Scope) {
    let ArithInst::Cast { src, out } = i;
    check_group(c, src, "cast", loc, scope);
    let (s, o) = (view_shape(c.p, src), view_shape(c.p, &RegView::plain(*out)));
    if s != o {
        c.err(loc, format!("cast: shapes differ ({s:?} -> {o:?})"));
    }
    let (from, to) = (c.p.register(src.tensor).dtype, c.p.register(*out).dtype);
    let supported = from == to
        || (from == crate::ir::DType::F32 && to.is_float())
        || (from.is_float() && to == crate::ir::DType::F32)
        || (!from.is_float() && !to.is_float())
        || (from == crate::ir::DType::F32 && to.is_int());
    if !supported {
        c.err(
            loc,
            format!("cast from {from} to {to} is not supported; go through f32"),
        );
    }
}
