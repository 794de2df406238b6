//! 32-bit index arithmetic that cannot overflow. The generated code computes offsets, loop
//! counters and grid sizes in `i32` (fast, and what the hardware's coordinates take), where
//! overflow is undefined behaviour: NVRTC may delete a loop whose counter would pass
//! `i32::MAX` and the product would be silently wrong. So every signed 32-bit value the kernel
//! computes gets a range, as a function of the runtime arguments, from the ranges of what it
//! is computed from (arguments exactly, block indices from the grid, loop counters from their
//! bounds, `let`s from their value; variables that are assigned are not tracked). A value whose
//! range leaves `i32` for constants alone is an error now; one that depends on runtime
//! arguments becomes an [`IndexGuard`] of the launch plan, checked before every launch (on the
//! GPU and in the interpreter).
//!
//! Besides the script's own expressions, the code adds a tile's extent to its offset when it
//! indexes a global view and a step to a loop counter after the last iteration; both are
//! checked too.

use crate::ir::facts::Memory;
use crate::ir::{
    BinOp, Bound, DType, Expr, ExprPrinter, IndexGuard, Loc, ParamKind, Program, Stmt, StmtKind,
    VarId, VarKind,
};
use crate::{Diagnostic, Error, Result};

/// The values an integer may take: `lo..=hi`.
#[derive(Clone, Debug)]
struct Range {
    lo: Bound,
    hi: Bound,
}

fn int(v: i128) -> Bound {
    Bound::Int(v)
}

fn add(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (Bound::Int(x), Bound::Int(y)) => int(x.saturating_add(*y)),
        (_, Bound::Int(0)) => a,
        (Bound::Int(0), _) => b,
        _ => Bound::Add(Box::new(a), Box::new(b)),
    }
}

fn sub(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (Bound::Int(x), Bound::Int(y)) => int(x.saturating_sub(*y)),
        (_, Bound::Int(0)) => a,
        _ => Bound::Sub(Box::new(a), Box::new(b)),
    }
}

fn mul(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (Bound::Int(x), Bound::Int(y)) => int(x.saturating_mul(*y)),
        (_, Bound::Int(1)) => a,
        (Bound::Int(1), _) => b,
        (_, Bound::Int(0)) | (Bound::Int(0), _) => int(0),
        _ => Bound::Mul(Box::new(a), Box::new(b)),
    }
}

fn div(a: Bound, c: i128) -> Bound {
    match &a {
        Bound::Int(x) => int(x / c),
        _ if c == 1 => a,
        _ => Bound::Div(Box::new(a), Box::new(int(c))),
    }
}

fn min(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (Bound::Int(x), Bound::Int(y)) => int(*x.min(y)),
        _ if a == b => a,
        _ => Bound::Min(Box::new(a), Box::new(b)),
    }
}

fn max(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (Bound::Int(x), Bound::Int(y)) => int(*x.max(y)),
        _ if a == b => a,
        _ => Bound::Max(Box::new(a), Box::new(b)),
    }
}

/// A constant's sign, when the bound is a constant.
fn konst(b: &Bound) -> Option<i128> {
    match b {
        Bound::Int(v) => Some(*v),
        _ => None,
    }
}

struct Ranges<'p> {
    p: &'p Program,
    /// Ranges of variables (`None`: not tracked).
    vars: Vec<Option<Range>>,
    /// Ranges of the block index per axis.
    block_idx: [Option<Range>; 3],
    guards: Vec<IndexGuard>,
    /// Values that leave `i32` for constants alone.
    errors: Vec<Diagnostic>,
    /// The values each runtime argument's type allows (by argument position).
    domains: Vec<(i128, i128)>,
}

/// The smallest and largest value of a bound when every argument ranges over its domain.
fn extremes(b: &Bound, dom: &[(i128, i128)]) -> (i128, i128) {
    let two = |x: &Bound, y: &Bound| (extremes(x, dom), extremes(y, dom));
    match b {
        Bound::Int(v) => (*v, *v),
        Bound::Arg(i) => dom.get(*i).copied().unwrap_or((i128::MIN, i128::MAX)),
        Bound::Add(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            (a.saturating_add(c), b.saturating_add(d))
        }
        Bound::Sub(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            (a.saturating_sub(d), b.saturating_sub(c))
        }
        Bound::Mul(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            let p = [
                a.saturating_mul(c),
                a.saturating_mul(d),
                b.saturating_mul(c),
                b.saturating_mul(d),
            ];
            (
                p.iter().copied().min().unwrap_or(0),
                p.iter().copied().max().unwrap_or(0),
            )
        }
        Bound::Div(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            // divisors are positive constants
            if c == d && c > 0 {
                (a / c, b / c)
            } else {
                (i128::MIN, i128::MAX)
            }
        }
        Bound::Min(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            (a.min(c), b.min(d))
        }
        Bound::Max(x, y) => {
            let ((a, b), (c, d)) = two(x, y);
            (a.max(c), b.max(d))
        }
    }
}

/// Whether some arguments of the arguments' types take the bound out of `i32`.
fn can_fail(b: &Bound, upper: bool, dom: &[(i128, i128)]) -> bool {
    let (lo, hi) = extremes(b, dom);
    if upper {
        hi > i32::MAX as i128
    } else {
        lo < i32::MIN as i128
    }
}

impl Ranges<'_> {
    fn text(&self, e: &Expr) -> String {
        let names = |v: VarId| self.p.var(v).name.clone();
        format!(
            "`{}`",
            ExprPrinter {
                expr: e,
                names: &names
            }
        )
    }

    /// Requires `r` to stay within `i32`: now when it is constant, at launch otherwise.
    fn require(&mut self, r: &Range, what: String, loc: Loc) {
        for (bound, upper) in [(&r.hi, true), (&r.lo, false)] {
            match konst(bound) {
                Some(v) => {
                    let ok = if upper {
                        v <= i32::MAX as i128
                    } else {
                        v >= i32::MIN as i128
                    };
                    if !ok {
                        let d = Diagnostic {
                            loc,
                            message: format!(
                                "{what} reaches {v}, outside the 32-bit integers the kernel computes with"
                            ),
                        };
                        if !self.errors.contains(&d) {
                            self.errors.push(d);
                        }
                    }
                }
                // a guard no argument of its type can fail is not worth a check per launch
                None if !can_fail(bound, upper, &self.domains) => {}
                None => {
                    let g = IndexGuard {
                        bound: bound.clone(),
                        upper,
                        what: what.clone(),
                        loc,
                    };
                    if !self
                        .guards
                        .iter()
                        .any(|h| h.bound == g.bound && h.upper == g.upper)
                    {
                        self.guards.push(g);
                    }
                }
            }
        }
    }

    /// The range of `e` (checking every signed 32-bit value in it); `None` when untracked.
    fn range(&mut self, e: &Expr, loc: Loc) -> Option<Range> {
        let r = match e {
            Expr::Int(v, _) => Some(Range {
                lo: int(*v as i128),
                hi: int(*v as i128),
            }),
            Expr::Float(..) => None,
            Expr::Var(v, _) => self.vars[v.0 as usize].clone(),
            Expr::BlockIdx(a) => self.block_idx[*a as usize].clone(),
            Expr::Cast(t, x) => {
                let r = self.range(x, loc);
                if *t == DType::I32 && x.dtype() != DType::I32 {
                    if let Some(r) = &r {
                        let what = self.text(e);
                        self.require(r, what, loc);
                    }
                }
                r
            }
            Expr::Binary(op, a, b) => {
                let (ra, rb) = (self.range(a, loc), self.range(b, loc));
                if op.is_comparison() {
                    return Some(Range {
                        lo: int(0),
                        hi: int(1),
                    });
                }
                let r = binary(*op, ra, rb);
                if e.dtype() == DType::I32 {
                    if let Some(r) = &r {
                        let what = self.text(e);
                        self.require(r, what, loc);
                    }
                }
                r
            }
        };
        // unsigned values wrap by definition and are not tracked
        r.filter(|_| matches!(e.dtype(), DType::I32 | DType::I64))
    }

    fn walk(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            let loc = s.loc;
            match &s.kind {
                StmtKind::Let { var, value } => {
                    let r = self.range(value, loc);
                    if self.p.var(*var).kind == VarKind::Let {
                        self.vars[var.0 as usize] = r;
                    }
                }
                StmtKind::Assign { value, .. } => {
                    self.range(value, loc);
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    step,
                    unroll: _,
                    body,
                } => {
                    let (rs, re, rt) = (
                        self.range(start, loc),
                        self.range(end, loc),
                        self.range(step, loc),
                    );
                    if let (Some(rs), Some(re)) = (&rs, &re) {
                        let hi = sub(re.hi.clone(), int(1));
                        self.vars[var.0 as usize] = Some(Range {
                            lo: rs.lo.clone(),
                            hi: max(rs.lo.clone(), hi.clone()),
                        });
                        if let Some(rt) = &rt {
                            // the counter after the last iteration
                            let after = Range {
                                lo: rs.lo.clone(),
                                hi: add(hi, rt.hi.clone()),
                            };
                            let name = self.p.var(*var).name.clone();
                            let (end, step) = (self.text(end), self.text(step));
                            self.require(
                                &after,
                                format!("the counter `{name}` of the loop up to {end} by {step}"),
                                loc,
                            );
                        }
                    }
                    self.walk(body);
                }
                // A branch computes what straight-line code would (its `let`s exist only in
                // it); a `while`'s counters are assigned, so they are not tracked.
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.range(cond, loc);
                    self.walk(then_body);
                    self.walk(else_body);
                }
                StmtKind::While { cond, body } => {
                    self.range(cond, loc);
                    self.walk(body);
                }
                StmtKind::ThreadGroup { copies, body, .. } => {
                    if let Some(cp) = copies {
                        self.vars[cp.index.0 as usize] = Some(Range {
                            lo: int(0),
                            hi: int(i128::from(cp.copies) - 1),
                        });
                    }
                    self.walk(body)
                }
                StmtKind::Sync { .. } => {}
                StmtKind::Inst(i) => {
                    let facts = i.facts(self.p);
                    for e in &facts.scalars {
                        self.range(e, loc);
                    }
                    for e in &facts.effects {
                        let (Memory::Global(g), Some(region)) = (e.memory, &e.region) else {
                            continue;
                        };
                        for (d, (o, n)) in region.offsets.iter().zip(&region.extent).enumerate() {
                            let Some(r) = self.range(o, loc) else {
                                continue;
                            };
                            let last = Range {
                                lo: r.lo,
                                hi: add(r.hi, int(*n as i128 - 1)),
                            };
                            let view = self.p.global(g).name.clone();
                            let off = self.text(o);
                            self.require(
                                &last,
                                format!(
                                    "the last index {off} + {} in dimension {d} of `{view}`",
                                    n - 1
                                ),
                                loc,
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The range of `a op b` from the operands' ranges.
fn binary(op: BinOp, ra: Option<Range>, rb: Option<Range>) -> Option<Range> {
    let (a, b) = (ra?, rb?);
    let cb = konst(&b.lo).filter(|_| b.lo == b.hi);
    Some(match op {
        BinOp::Add => Range {
            lo: add(a.lo, b.lo),
            hi: add(a.hi, b.hi),
        },
        BinOp::Sub => Range {
            lo: sub(a.lo, b.hi),
            hi: sub(a.hi, b.lo),
        },
        BinOp::Mul => match (cb, konst(&a.lo).filter(|_| a.lo == a.hi)) {
            (Some(c), _) if c >= 0 => Range {
                lo: mul(a.lo, int(c)),
                hi: mul(a.hi, int(c)),
            },
            (_, Some(c)) if c >= 0 => Range {
                lo: mul(b.lo, int(c)),
                hi: mul(b.hi, int(c)),
            },
            _ => {
                let products = [
                    mul(a.lo.clone(), b.lo.clone()),
                    mul(a.lo.clone(), b.hi.clone()),
                    mul(a.hi.clone(), b.lo.clone()),
                    mul(a.hi, b.hi),
                ];
                let lo = products.iter().cloned().reduce(min)?;
                let hi = products.into_iter().reduce(max)?;
                Range { lo, hi }
            }
        },
        // truncating division by a positive constant is monotone
        BinOp::Div => match cb {
            Some(c) if c > 0 => Range {
                lo: div(a.lo, c),
                hi: div(a.hi, c),
            },
            _ => return None,
        },
        BinOp::Rem => match cb {
            Some(c) if c > 0 => Range {
                lo: int(-(c - 1)),
                hi: int(c - 1),
            },
            _ => return None,
        },
        BinOp::Shl => match cb {
            Some(c) if (0..63).contains(&c) => Range {
                lo: mul(a.lo, int(1 << c)),
                hi: mul(a.hi, int(1 << c)),
            },
            _ => return None,
        },
        BinOp::Shr => match cb {
            // an arithmetic shift floors; truncation is at most one above
            Some(c) if (0..63).contains(&c) => Range {
                lo: sub(div(a.lo, 1 << c), int(1)),
                hi: div(a.hi, 1 << c),
            },
            _ => return None,
        },
        BinOp::BitAnd => match cb {
            Some(c) if c >= 0 => Range {
                lo: int(0),
                hi: int(c),
            },
            _ => return None,
        },
        BinOp::BitOr | BinOp::BitXor => return None,
        BinOp::Lt | BinOp::Le | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or => Range {
            lo: int(0),
            hi: int(1),
        },
    })
}

/// The index guards of a program: what must hold at launch for its 32-bit arithmetic not to
/// overflow. Values that overflow for constants alone are an error: an argument error naming
/// the compile-time constants when the script has some, a script error otherwise.
pub fn guards(p: &Program) -> Result<Vec<IndexGuard>> {
    let mut r = Ranges {
        p,
        vars: vec![None; p.vars.len()],
        block_idx: [None, None, None],
        guards: vec![],
        errors: vec![],
        domains: p
            .params
            .iter()
            .map(|prm| match prm.kind {
                ParamKind::Scalar(DType::I32) => (i32::MIN as i128, i32::MAX as i128),
                ParamKind::Scalar(DType::U32) => (0, u32::MAX as i128),
                ParamKind::Scalar(DType::I64) => (i64::MIN as i128, i64::MAX as i128),
                ParamKind::Scalar(DType::U64) => (0, u64::MAX as i128),
                ParamKind::Const(_, v) => (v as i128, v as i128),
                _ => (0, 0),
            })
            .collect(),
    };
    for (i, prm) in p.params.iter().enumerate() {
        if let (ParamKind::Scalar(t), Some(v)) = (&prm.kind, prm.var) {
            if t.is_int() {
                r.vars[v.0 as usize] = Some(Range {
                    lo: Bound::Arg(i),
                    hi: Bound::Arg(i),
                });
            }
        }
    }
    // Every value a script computes is in terms of arguments, so the grid's are too: block
    // indices run from 0 to the grid's extent minus one.
    let loc = p
        .grid_loc
        .or_else(|| p.body.first().map(|s| s.loc))
        .unwrap_or(Loc {
            file: "<script>",
            line: 0,
            col: 0,
        });
    for (axis, g) in p.grid.iter().enumerate() {
        if let Some(gr) = r.range(g, loc) {
            r.block_idx[axis] = Some(Range {
                lo: int(0),
                hi: sub(gr.hi, int(1)),
            });
        }
    }
    r.walk(&p.body);
    if r.errors.is_empty() {
        return Ok(r.guards);
    }
    let consts: Vec<String> = p
        .params
        .iter()
        .filter_map(|prm| match prm.kind {
            ParamKind::Const(_, v) => Some(format!("{} = {v}", prm.name)),
            _ => None,
        })
        .collect();
    if consts.is_empty() {
        return Err(Error::Script(r.errors));
    }
    let names: Vec<String> = p
        .params
        .iter()
        .filter(|prm| matches!(prm.kind, ParamKind::Const(..)))
        .map(|prm| prm.name.clone())
        .collect();
    let first = &r.errors[0];
    Err(Error::Argument {
        arg: names.join(", "),
        message: format!(
            "with the compile-time constants {}, {}: {}; use smaller sizes",
            consts.join(", "),
            first.loc,
            first.message
        ),
    })
}
