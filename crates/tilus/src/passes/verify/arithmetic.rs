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
}
