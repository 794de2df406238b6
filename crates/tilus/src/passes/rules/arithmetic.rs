//! Rules for elementwise expressions, reductions and conversions: shapes that broadcast, types
//! each operation takes, and the layouts that pass between operands (a broadcast operand holds,
//! in each thread, the elements that thread's output needs: the output's layout collapsed along
//! the broadcast dimensions); a reduction's result has its operand's layout collapsed along
//! the reduced dimension, and threads that split that dimension combine through shuffles, or
//! through a shared scratch tile when they are in different warps.

use super::Rules;
use crate::ir::{
    ArithInst, DType, Inst, Loc, Program, ReduceOp, RegId, RegView, SharedId, StmtKind, TileExpr,
    UnaryOp,
};
use crate::layout::RegisterLayout;
use crate::passes::context::{Checker, LayoutCx, Scope};

/// Checks the types of an expression; returns its type.
fn check_types(c: &mut Checker, e: &TileExpr, loc: Loc) -> DType {
    let p = c.p;
    match e {
        TileExpr::Tile(v) => {
            c.check_view(v, "compute", loc);
            p.register(v.tensor).dtype
        }
        TileExpr::Scalar(s) => s.dtype(),
        TileExpr::Index { shape, dim } => {
            if *dim >= shape.len() || shape.iter().any(|&n| n < 1) {
                c.err(
                    loc,
                    format!("arange: dimension {dim} of a tile of extents {shape:?}"),
                );
            }
            DType::I32
        }
        TileExpr::Random {
            kind,
            seed,
            counter,
        } => {
            let t = check_types(c, counter, loc);
            if !matches!(t, DType::I32 | DType::U32) {
                let msg = format!("{}: the offsets are {t}, not i32 or u32", kind.name());
                c.err(loc, msg);
            }
            if seed.dtype().is_float() {
                c.err(
                    loc,
                    format!("{}: the seed is a float, not an integer", kind.name()),
                );
            }
            e.dtype(c.p)
        }
        TileExpr::Unary(op, x) => {
            let t = check_types(c, x, loc);
            if op.float_only() && !t.is_float() {
                c.err(
                    loc,
                    format!("{} needs floating-point values, got {t}", op.name()),
                );
            }
            if (*op == UnaryOp::Not) != (t == DType::Bool) {
                c.err(loc, format!("{} of a {t} tile", op.name()));
            }
            t
        }
        TileExpr::Binary(op, a, b) => {
            let (ta, tb) = (check_types(c, a, loc), check_types(c, b, loc));
            if ta != tb {
                c.err(
                    loc,
                    format!("`{}` of {ta} and {tb}; cast one of them first", op.name()),
                );
            }
            if op.is_logical() != (ta == DType::Bool) {
                c.err(loc, format!("`{}` of {ta} values", op.name()));
            }
            if op.is_comparison() {
                DType::Bool
            } else {
                ta
            }
        }
        TileExpr::Select(cond, a, b) => {
            let tc = check_types(c, cond, loc);
            let (ta, tb) = (check_types(c, a, loc), check_types(c, b, loc));
            if tc != DType::Bool {
                c.err(loc, format!("where: the condition is {tc}, not bool"));
            }
            if ta != tb {
                c.err(loc, format!("where: the branches are {ta} and {tb}"));
            }
            ta
        }
        TileExpr::MulAdd(a, b, d) => {
            let (ta, tb, td) = (
                check_types(c, a, loc),
                check_types(c, b, loc),
                check_types(c, d, loc),
            );
            if ta != tb || ta != td {
                c.err(
                    loc,
                    format!("mul_add of {ta}, {tb} and {td}; cast them to one type first"),
                );
            }
            if ta == DType::Bool {
                c.err(loc, "mul_add of bool values");
            }
            ta
        }
        TileExpr::Cast(t, x) => {
            check_types(c, x, loc);
            *t
        }
        TileExpr::Bitcast(t, x) => {
            let from = check_types(c, x, loc);
            if from.is_lowp() || t.is_lowp() {
                let msg = format!(
                    "view: {from} as {t}: the low-precision types' codes are not viewed \
                     element by element; cast them (their values convert exactly to f32)"
                );
                c.err(loc, msg);
            } else if from.bits() != t.bits() || from == DType::Bool || *t == DType::Bool {
                let msg = format!(
                    "view: {from} ({} bits) as {t} ({} bits): a view keeps the bits, so both \
                     must be numeric types of one width",
                    from.bits(),
                    t.bits()
                );
                c.err(loc, msg);
            }
            *t
        }
    }
}

/// For an output whose operands all broadcast (none has its shape): a layout that the
/// operands laid out so far fit, among those a tile of its shape gets by default or for a
/// vectorized access (the layouts the operands' own sources most likely had, before a
/// reduction collapsed them). `None` when no operand has a layout yet, or none fits.
/// Whether a cast whose source (laid out `have`) and result (laid out `ol`) were both laid
/// out by other instructions, differently, gets its source converted to the result's layout.
fn cast_converts(
    cx: &LayoutCx,
    src: &RegView,
    out: RegId,
    (have, ol): (&RegisterLayout, &RegisterLayout),
) -> bool {
    let p = cx.p;
    let d = p.register(src.tensor);
    let seen = src.layout_of(have);
    !crate::passes::exceeds_registers(have, d.dtype)
        && !seen.same_mapping(ol)
        && crate::passes::convertible(ol, &seen, p.register(out).group_threads, p.threads())
}

fn fitting_layout(
    cx: &LayoutCx,
    tiles: &[RegView],
    out: crate::ir::RegId,
) -> Option<RegisterLayout> {
    use crate::passes::infer_layout::{default_layout, masked_layout, vectorized_layout};
    let p = cx.p;
    let d = p.register(out);
    let known: Vec<(Vec<i64>, RegisterLayout)> = tiles
        .iter()
        .filter_map(|v| cx.get(v.tensor).map(|l| (p.view_shape(v), v.layout_of(&l))))
        .collect();
    if known.is_empty() || d.shape.iter().any(|&n| n <= 0) {
        return None;
    }
    let threads = d.group_threads.max(1) as i64;
    // masked operands (a width that does not divide among the threads) meet a masked result
    let masked = [1, 2, 4, 8]
        .into_iter()
        .filter(|_| cx.maskable[out.0 as usize])
        .filter_map(|eb| masked_layout(&d.shape, threads, eb));
    let candidates = std::iter::once(default_layout(&d.shape, threads))
        .chain([2, 4, 8].map(|eb| vectorized_layout(&d.shape, threads, eb)))
        .chain(masked);
    candidates.into_iter().find(|c| {
        known
            .iter()
            .all(|(shape, l)| c.broadcast_operand(shape).same_mapping(l))
    })
}

/// Whether a tile of `shape` broadcasts into `out`.
fn broadcasts(shape: &[i64], out: &[i64]) -> bool {
    shape.len() <= out.len()
        && shape
            .iter()
            .zip(&out[out.len() - shape.len()..])
            .all(|(&a, &b)| a == b || a == 1)
}

/// Reports an `assign_tile` into a tile that a reshape or a slice defined: such a tile is a
/// copy of its source's registers (which the CUDA compiler removes), so writing it would not
/// change the source, which is what the script means.
fn check_assigned(c: &mut Checker, out: RegId, loc: Loc) {
    let mut from = None;
    c.p.walk(&mut |s| {
        if let StmtKind::Inst(Inst::Shape(i)) = &s.kind {
            let (src, o) = i.operands();
            if o == out {
                from = Some((i.name(), src.tensor));
            }
        }
    });
    if let Some((how, src)) = from {
        let (out, src) = (&c.p.register(out).name, &c.p.register(src).name);
        let msg = format!(
            "assign_tile: `{out}` is a {how} of `{src}`, a tile of its own; writing it would \
             leave `{src}` as it was: assign to `{src}` (whole), or compute the part and keep it"
        );
        c.err(loc, msg);
    }
}

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
                    || (from == DType::F32 && to.is_int())
                    // the low-precision types convert to and from every numeric type
                    || ((from.is_lowp() || to.is_lowp())
                        && from != DType::Bool
                        && to != DType::Bool);
                if !supported {
                    c.err(
                        loc,
                        format!("cast from {from} to {to} is not supported; go through f32"),
                    );
                }
            }
            ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
                let name = self.name();
                let t = check_types(c, expr, loc);
                let d = c.p.register(*out);
                if t != d.dtype {
                    let msg = format!("{name}: a {t} expression into a {} tile", d.dtype);
                    c.err(loc, msg);
                }
                let oshape = d.shape.clone();
                for s in expr.shapes(c.p) {
                    if !broadcasts(&s, &oshape) {
                        c.err(
                            loc,
                            format!("{name}: a {s:?} tile does not broadcast to {oshape:?}"),
                        );
                    }
                }
                if matches!(self, ArithInst::Assign { .. }) {
                    check_assigned(c, *out, loc);
                }
            }
            ArithInst::Scan {
                src, op, dim, out, ..
            } => {
                let name = op.name();
                c.check_view(src, name, loc);
                let s = c.view_shape(src);
                if *dim >= s.len() {
                    let msg = format!(
                        "{name}: dimension {dim} of a tile of {} dimension(s)",
                        s.len()
                    );
                    c.err(loc, msg);
                }
                let (t, o) = (c.p.register(src.tensor).dtype, c.p.register(*out).dtype);
                if t == DType::Bool || t.bits() > 32 {
                    c.err(loc, format!("{name} of a {t} tile"));
                }
                if o != t || c.p.register(*out).shape != s {
                    let msg = format!("{name}: the result's type or shape differs from the tile's");
                    c.err(loc, msg);
                }
            }
            ArithInst::Reduce {
                src, op, dim, out, ..
            } => {
                c.check_view(src, op.name(), loc);
                let s = c.view_shape(src);
                if *dim >= s.len() {
                    c.err(
                        loc,
                        format!(
                            "{}: dimension {dim} of a tile of {} dimension(s)",
                            op.name(),
                            s.len()
                        ),
                    );
                }
                let t = c.p.register(src.tensor).dtype;
                let logical = matches!(op, ReduceOp::Any | ReduceOp::All);
                if logical != (t == DType::Bool) {
                    c.err(loc, format!("{} of a {t} tile", op.name()));
                }
                if c.p.register(*out).dtype != t {
                    let msg = format!("{}: the result's type differs from the tile's", op.name());
                    c.err(loc, msg);
                }
            }
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        let p = c.p;
        if let ArithInst::Scan { op, out, .. } = self {
            let d = p.register(*out);
            if self.scans_through_shared(p) && d.group_threads != p.threads() {
                let msg = format!(
                    "{}: the lines of `{}` along the scanned dimension span several threads, which \
                     meet in shared memory behind block-wide barriers; scan in the whole block, \
                     or keep each line in one thread",
                    op.name(),
                    d.name
                );
                c.err(loc, msg);
            }
            return;
        }
        let (src, op, dim, out) = match self {
            ArithInst::Cast { src, out } => {
                let (Some(l), Some(ol)) =
                    (&p.register(src.tensor).layout, &p.register(*out).layout)
                else {
                    return;
                };
                if !src.layout_of(l).same_mapping(ol) {
                    let msg = format!(
                        "cast: `{}` is laid out as {} and its cast `{}` as {ol}, which no \
                         conversion here can join (a conversion through shared memory needs the \
                         whole block); convert it first where the whole block runs",
                        p.register(src.tensor).name,
                        src.layout_of(l),
                        p.register(*out).name
                    );
                    c.err(loc, msg);
                }
                return;
            }
            ArithInst::Scan { .. } => return,
            ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
                if expr.operand_locals(p, *out).is_none() {
                    let msg = format!(
                        "{}: the layouts of the operands do not give each thread the elements \
                         its part of `{}` needs; convert an operand to the result's layout first",
                        self.name(),
                        p.register(*out).name
                    );
                    c.err(loc, msg);
                }
                return;
            }
            ArithInst::Reduce {
                src, op, dim, out, ..
            } => (src, op, dim, out),
        };
        let d = p.register(src.tensor);
        let (Some(l), Some(ol)) = (&d.layout, &p.register(*out).layout) else {
            return;
        };
        let l = src.layout_of(l);
        if *dim < l.rank() {
            let want = l.collapse(&[*dim]);
            let mine = if ol.rank() == want.rank() {
                ol.clone()
            } else {
                ol.insert_dims(&[*dim])
            };
            if !mine.same_mapping(&want) {
                let msg = format!(
                    "{}: the result `{}` has layout {ol}, not the operand's layout reduced along \
                     dimension {dim} ({want})",
                    op.name(),
                    p.register(*out).name
                );
                c.err(loc, msg);
            }
        }
        match l.thread_bits(*dim) {
            None => {
                let msg = format!(
                    "{}: the layout of `{}` ({l}) spreads dimension {dim} over threads in steps that \
                     are not powers of two, which the reduction cannot combine",
                    op.name(),
                    d.name
                );
                c.err(loc, msg);
            }
            Some(bits) if bits >= 32 && d.group_threads != p.threads() => {
                let msg = format!(
                    "{}: dimension {dim} of `{}` is spread over several warps, whose partial results \
                     meet in shared memory behind a block-wide barrier; reduce in the whole block, \
                     or keep the dimension within warps",
                    op.name(),
                    d.name
                );
                c.err(loc, msg);
            }
            Some(bits) if bits >= 32 && d.dtype.bits() == 64 => {
                let msg = format!(
                    "{}: 64-bit integers are combined within warps only; dimension {dim} of `{}` \
                     is spread over several warps",
                    op.name(),
                    d.name
                );
                c.err(loc, msg);
            }
            Some(_) => {}
        }
    }

    fn propagate_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            ArithInst::Scan { src, out, op, .. } => {
                if let Some(l) = cx.get(src.tensor) {
                    cx.require(*out, src.layout_of(&l), loc, op.name());
                } else if let Some(l) = cx.get(*out) {
                    cx.require(src.tensor, src.layout_of(&l), loc, op.name());
                }
            }
            ArithInst::Cast { src, out } => match (cx.get(src.tensor), cx.get(*out)) {
                // both laid out otherwise: the source is converted just before the cast
                // (`passes/convert_operands.rs`)
                (Some(have), Some(ol)) if cast_converts(cx, src, *out, (&have, &ol)) => {}
                (Some(l), _) => cx.require(*out, src.layout_of(&l), loc, "cast"),
                (None, Some(l)) => cx.require(src.tensor, src.layout_of(&l), loc, "cast"),
                (None, None) => {}
            },
            ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
                let p = cx.p;
                let oshape = p.register(*out).shape.clone();
                let mut tiles = vec![];
                expr.tiles(&mut tiles);
                if cx.get(*out).is_none() {
                    // a tile of the output's own shape gives the output its layout
                    let full = tiles.iter().find_map(|v| {
                        (p.view_shape(v) == oshape)
                            .then(|| cx.get(v.tensor).map(|l| v.layout_of(&l)))
                            .flatten()
                    });
                    if let Some(l) = full {
                        cx.require(*out, l, loc, "compute");
                    } else if let Some(l) = fitting_layout(cx, &tiles, *out) {
                        cx.require(*out, l, loc, "compute");
                    }
                }
                if let Some(l) = cx.get(*out) {
                    for v in &tiles {
                        let need = l.broadcast_operand(&p.view_shape(v));
                        // back through the view: transposes are involutions
                        let need = v.layout_of(&need);
                        // an operand of the output's shape that something else laid out
                        // otherwise is converted just before the expression
                        // (`passes/convert_operands.rs`)
                        let dtype = p.register(v.tensor).dtype;
                        let other = cx.get(v.tensor).filter(|have| {
                            !crate::passes::exceeds_registers(have, dtype)
                                && !have.same_mapping(&need)
                        });
                        if other.is_some() && p.view_shape(v) == oshape {
                            continue;
                        }
                        cx.require(v.tensor, need, loc, "compute");
                    }
                }
            }
            ArithInst::Reduce {
                src,
                dim,
                keepdim,
                out,
                op,
                ..
            } => {
                if let Some(l) = cx.get(src.tensor) {
                    let l = src.layout_of(&l);
                    if *dim < l.rank() {
                        cx.require(*out, l.reduced(*dim, *keepdim), loc, op.name());
                    }
                }
            }
        }
    }

    fn internal_shared(&self, p: &Program) -> Vec<(SharedId, Vec<i64>)> {
        if let ArithInst::Scan {
            src, dim, scratch, ..
        } = self
        {
            let Some(l) = p.register(src.tensor).layout.as_ref() else {
                return vec![(*scratch, vec![0])];
            };
            let l = src.layout_of(l);
            // whole lines in each thread: no thread holds part of another's line
            let in_registers = *dim >= l.rank() || l.thread_bits(*dim) == Some(0);
            let elements: i64 = p.view_shape(src).iter().product();
            return vec![(*scratch, vec![if in_registers { 0 } else { elements }])];
        }
        let ArithInst::Reduce {
            src,
            dim,
            out,
            scratch: Some(s),
            ..
        } = self
        else {
            return vec![];
        };
        let (d, o) = (p.register(src.tensor), p.register(*out));
        let (Some(l), Some(ol)) = (&d.layout, &o.layout) else {
            return vec![(*s, vec![0])];
        };
        let l = src.layout_of(l);
        match l.thread_bits(*dim) {
            // one f32 partial per thread and element it holds, for the warps to meet
            Some(bits) if bits >= 32 => vec![(*s, vec![d.group_threads as i64, ol.local_size()])],
            _ => vec![(*s, vec![0])],
        }
    }
}
