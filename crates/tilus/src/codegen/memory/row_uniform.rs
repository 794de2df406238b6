//! Which boolean tiles hold one value per row: masks computed from tiles of one column, row
//! indices and scalars (a `[rows, 1]` mask of real rows, broadcast over a `[rows, cols]`
//! store). A masked store reads such a mask once per vector and needs no element-by-element
//! fallback for it: the vector is kept or dropped whole.

use crate::ir::facts::{Access, Memory};
use crate::ir::{ArithInst, Inst, Program, RegId, StmtKind, TileExpr};
use std::collections::HashSet;

/// The register tiles whose every element equals the others of its row (along the last
/// dimension): each is defined by one `compute` of such an expression and written by nothing
/// else.
pub(in crate::codegen) fn row_uniform_tiles(p: &Program) -> HashSet<RegId> {
    let mut uniform = HashSet::new();
    let mut other = HashSet::new();
    p.walk(&mut |s| {
        let StmtKind::Inst(inst) = &s.kind else {
            return;
        };
        let defined = match inst {
            Inst::Arith(ArithInst::Map { expr, out }) => {
                uniform_along_rows(p, expr).then_some(*out)
            }
            _ => None,
        };
        for effect in inst.facts(p).effects {
            let Memory::Register(r) = effect.memory else {
                continue;
            };
            if matches!(
                effect.access,
                Access::Declare | Access::Write | Access::Update
            ) {
                if defined == Some(r) && !uniform.contains(&r) {
                    uniform.insert(r);
                } else {
                    other.insert(r);
                }
            }
        }
    });
    uniform.retain(|r| !other.contains(r));
    uniform
}

/// Whether `x`, broadcast to its output, has one value along the output's last dimension.
fn uniform_along_rows(p: &Program, x: &TileExpr) -> bool {
    let one_column = |shape: &[i64]| shape.last().is_none_or(|&n| n == 1);
    match x {
        TileExpr::Scalar(_) => true,
        // a tile of lower rank lines up with the output's last dimensions
        TileExpr::Tile(v) => one_column(&p.view_shape(v)),
        TileExpr::Index { shape, dim } => *dim + 1 != shape.len() || one_column(shape),
        TileExpr::Random { .. } => false,
        TileExpr::Unary(_, a) | TileExpr::Cast(_, a) | TileExpr::Bitcast(_, a) => {
            uniform_along_rows(p, a)
        }
        TileExpr::Binary(_, a, b) => uniform_along_rows(p, a) && uniform_along_rows(p, b),
        TileExpr::Select(a, b, c) | TileExpr::MulAdd(a, b, c) => {
            [a, b, c].iter().all(|x| uniform_along_rows(p, x))
        }
    }
}
