//! Scalar types: float scalars (arguments such as a scale or an epsilon, `let_f32`) compute
//! with floats only, and never stand where an integer is needed (a grid size, a loop bound,
//! an offset, a shape, an index). Integers and floats meet only through an explicit `cast`.

use crate::ir::{ArithInst, BinOp, DebugInst, Expr, Inst, Loc, MemoryInst, Program, StmtKind};
use crate::passes::context::Checker;

/// What an expression mixes that it must not: `None` when its types are consistent. The
/// low-precision types are element types of tiles only: no scalar holds one (a constant of a
/// tile's type, such as a load's fill value, is the tile's).
fn mixed(e: &Expr) -> Option<String> {
    let constant = matches!(e, Expr::Int(..) | Expr::Float(..));
    if e.dtype().is_lowp() && !constant {
        return Some(format!(
            "a {} scalar: the low-precision types are element types of tiles only; keep \
             scalars in i32, u32 or f32 (a tile converts with `k.cast`)",
            e.dtype()
        ));
    }
    match e {
        Expr::Binary(op, a, b) => {
            if let Some(m) = mixed(a).or_else(|| mixed(b)) {
                return Some(m);
            }
            let (ta, tb) = (a.dtype(), b.dtype());
            if ta.is_float() != tb.is_float() {
                return Some(format!(
                    "`{}` of {ta} and {tb}: convert one of them with `.cast::<T>()`",
                    op.symbol()
                ));
            }
            let int_only = matches!(
                op,
                BinOp::Rem
                    | BinOp::BitAnd
                    | BinOp::BitOr
                    | BinOp::BitXor
                    | BinOp::Shl
                    | BinOp::Shr
                    | BinOp::And
                    | BinOp::Or
            );
            (int_only && ta.is_float()).then(|| format!("`{}` of {ta} values", op.symbol()))
        }
        Expr::Cast(_, x) => mixed(x),
        Expr::Int(..) | Expr::Float(..) | Expr::Var(..) | Expr::BlockIdx(_) => None,
    }
}

/// Checks one expression; `integer` names the integer position it stands in, if any.
fn check_expr(c: &mut Checker, e: &Expr, integer: Option<&str>, loc: Loc) {
    if let Some(m) = mixed(e) {
        c.err_once(loc, format!("a scalar expression mixes types: {m}"));
    } else if let Some(what) = integer {
        let t = e.dtype();
        if t.is_float() {
            c.err_once(
                loc,
                format!(
                    "a {t} scalar where an integer is needed ({what}): convert it with \
                     `.cast::<i32>()`"
                ),
            );
        }
    }
}

pub(super) fn check(c: &mut Checker) {
    let p: &Program = c.p;
    if let Some(loc) = p.grid_loc {
        for g in &p.grid {
            check_expr(c, g, Some("a grid size"), loc);
        }
    }
    for g in &p.globals {
        for e in g.shape.iter().chain(&g.strides) {
            check_expr(c, e, Some("a view's extent or stride"), g.loc);
        }
    }
    p.walk(&mut |s| match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
            check_expr(c, value, None, s.loc)
        }
        StmtKind::For {
            start, end, step, ..
        } => {
            for e in [start, end, step] {
                check_expr(c, e, Some("a loop bound"), s.loc);
            }
        }
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => {
            check_expr(c, cond, None, s.loc)
        }
        StmtKind::Inst(i) => {
            // element values (a tile expression's scalars, a fill) may be floats; every other
            // scalar of an instruction is an offset, an index, a count or a phase
            let index_role = Some("an offset, index or count");
            match i {
                Inst::Arith(ArithInst::Map { .. } | ArithInst::Assign { .. })
                | Inst::Memory(MemoryInst::AllocRegister { .. }) => {
                    for e in i.facts(p).scalars {
                        check_expr(c, e, None, s.loc);
                    }
                }
                Inst::Memory(MemoryInst::LoadGlobal { offsets, fill, .. }) => {
                    for e in offsets {
                        check_expr(c, e, index_role, s.loc);
                    }
                    check_expr(c, fill, None, s.loc);
                }
                // printf prints values of any type
                Inst::Debug(DebugInst::Printf { args, .. }) => {
                    for e in args {
                        check_expr(c, e, None, s.loc);
                    }
                }
                Inst::Memory(MemoryInst::AtomicScalar {
                    index,
                    value,
                    compare,
                    ..
                }) => {
                    for e in index {
                        check_expr(c, e, index_role, s.loc);
                    }
                    for e in std::iter::once(value).chain(compare) {
                        check_expr(c, e, None, s.loc);
                    }
                }
                _ => {
                    for e in i.facts(p).scalars {
                        check_expr(c, e, index_role, s.loc);
                    }
                }
            }
        }
        StmtKind::ThreadGroup { .. } | StmtKind::Sync { .. } => {}
    });
}
