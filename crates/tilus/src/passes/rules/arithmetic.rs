//! Rules for elementwise register operations: shapes and supported conversions; layouts pass
//! through in both directions.

use super::Rules;
use crate::ir::{ArithInst, DType, Loc, RegView};
use crate::passes::context::{through_view, Checker, LayoutCx, Scope};

impl Rules for ArithInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        match self {
            ArithInst::Cast { src, out } => {
                c.check_view(src, "cast", loc);
                let (s, o) = (c.view_shape(src), c.view_shape(&RegView::plain(*out)));
                if s != o {
                    c.err(loc, format!("cast: shapes differ ({s:?} -> {o:?})"));
                }
                let (from, to) = (c.p.register(src.tensor).dtype, c.p.register(*out).dtype);
                let supported = from == to
                    || (from == DType::F32 && to.is_float())
                    || (from.is_float() && to == DType::F32)
                    || (!from.is_float() && !to.is_float())
                    || (from == DType::F32 && to.is_int());
                if !supported {
                    c.err(
                        loc,
                        format!("cast from {from} to {to} is not supported; go through f32"),
                    );
                }
            }
        }
    }

    fn propagate_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            ArithInst::Cast { src, out } => {
                if let Some(l) = cx.get(src.tensor) {
                    cx.require(*out, through_view(&l, src), loc, "cast");
                } else if let Some(l) = cx.get(*out) {
                    cx.require(src.tensor, through_view(&l, src), loc, "cast");
                }
            }
        }
    }
}
