//! The arithmetic family: elementwise operations on register tiles (with broadcasting),
//! reductions along a dimension, and conversions.

use super::facts::{Access, Effect, Facts, Memory, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{DType, Expr, Program, RegId, RegView, SharedId};
use std::fmt::Write;

/// An elementwise function of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x` (IEEE-accurate `expf`).
    Exp,
    /// `2^x`.
    Exp2,
    /// `e^x` through the hardware's approximate `ex2.approx` (fast math, asked for).
    ExpApprox,
    /// `2^x` through the hardware's `ex2.approx.ftz.f32` alone (fast math, asked for: a
    /// relative error of about 2^-22; subnormals flush to zero). [`UnaryOp::ExpApprox`] is this
    /// after a multiplication by log2(e), which a script that folds log2(e) into its own
    /// constants saves.
    Exp2Approx,
    /// Natural logarithm.
    Log,
    /// Square root (correctly rounded).
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Rounding to the nearest integer, ties to even.
    Round,
    /// `x * x`.
    Square,
    /// `tanh(x)`.
    Tanh,
    /// `tanh(x)` through the hardware's `tanh.approx.f32` (fast math, asked for: a relative
    /// error up to about 2^-11, the precision of f16).
    TanhApprox,
    /// `1 / x` through the hardware's `rcp.approx.ftz.f32` (fast math, asked for: about one
    /// ulp; subnormals flush to zero).
    RecipApprox,
    /// Logical not of a boolean.
    Not,
}

impl UnaryOp {
    /// How scripts write it.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::ExpApprox => "exp_approx",
            UnaryOp::Exp2Approx => "exp2_approx",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Round => "round",
            UnaryOp::Square => "square",
            UnaryOp::Tanh => "tanh",
            UnaryOp::TanhApprox => "tanh_approx",
            UnaryOp::RecipApprox => "recip_approx",
            UnaryOp::Not => "not",
        }
    }

    /// Whether the operation is defined on floating-point values only.
    pub fn float_only(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Square | UnaryOp::Not
        )
    }
}

/// An elementwise function of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (IEEE division for floats; truncating for integers).
    Div,
    /// The larger.
    Max,
    /// The smaller.
    Min,
    /// `a < b` (a boolean).
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// Logical and of booleans.
    And,
    /// Logical or of booleans.
    Or,
}

impl BinaryOp {
    /// How scripts and the printer write it.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Max => "maximum",
            BinaryOp::Min => "minimum",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }

    /// Whether the result is a boolean.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne
        )
    }

    /// Whether the operands are booleans.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }
}

/// An elementwise expression over register tiles and scalars. Tiles broadcast NumPy's way to
/// the shape of the instruction's output: a tile of lower rank is aligned with the output's
/// last dimensions, and a dimension of extent 1 repeats along the output's. Arithmetic on 16-bit
/// floats runs in f32; the result is rounded once, to the output's type. Every float operation
/// rounds as written (the generated code never contracts a product and a sum into an FMA by
/// itself; a script asks for one with [`TileExpr::MulAdd`]), so the interpreter gives the GPU's
/// bits for everything but the transcendental functions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TileExpr {
    /// A register tile (or a transposed view of one).
    Tile(RegView),
    /// A scalar, the same for every element.
    Scalar(Expr),
    /// A function of one operand.
    Unary(UnaryOp, Box<TileExpr>),
    /// A function of two operands.
    Binary(BinaryOp, Box<TileExpr>, Box<TileExpr>),
    /// `cond ? a : b` for each element.
    Select(Box<TileExpr>, Box<TileExpr>, Box<TileExpr>),
    /// `a * b + c` for each element, rounded once for floats (a fused multiply-add: `fma.rn`),
    /// wrapping for integers.
    MulAdd(Box<TileExpr>, Box<TileExpr>, Box<TileExpr>),
    /// A conversion of each element to another type.
    Cast(DType, Box<TileExpr>),
    /// The same bits read as another type of the same width (`f32`, `i32` and `u32`; `f16`
    /// and `bf16`): `view`.
    Bitcast(DType, Box<TileExpr>),
    /// The index along `dim` of each element of a tile of `shape` (`i32`): `arange` along one
    /// dimension, broadcast like a tile of that shape. It has no registers: each thread
    /// computes it from the coordinates its layout gives the output's elements, so it fits
    /// any layout.
    Index {
        /// The extents it broadcasts as.
        shape: Vec<i64>,
        /// The dimension whose index it holds.
        dim: usize,
    },
    /// Philox4x32-10 random numbers ([`crate::ir::philox`]): for each element, the words the
    /// generator gives `seed` (the key) at the element's `counter` (an integer expression:
    /// offsets), as `kind` says.
    Random {
        /// What the words become.
        kind: RandomKind,
        /// The key: a scalar, its low and high 32 bits as a 64-bit value.
        seed: Expr,
        /// The counter's first word, per element.
        counter: Box<TileExpr>,
    },
}

/// What a [`TileExpr::Random`] makes of the generator's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RandomKind {
    /// A float in `[0, 1)`: the first word's top 24 bits times 2^-24 (`rand`).
    Uniform,
    /// A standard normal float by Box-Muller from the first two words (`randn`).
    Normal,
    /// The first word (`u32`: `randint`).
    Int,
}

impl RandomKind {
    /// How scripts write it.
    pub fn name(self) -> &'static str {
        match self {
            RandomKind::Uniform => "rand",
            RandomKind::Normal => "randn",
            RandomKind::Int => "randint",
        }
    }
}

impl TileExpr {
    /// The element type of the value, given the program's tiles.
    pub fn dtype(&self, p: &Program) -> DType {
        match self {
            TileExpr::Tile(v) => p.register(v.tensor).dtype,
            TileExpr::Scalar(e) => e.dtype(),
            TileExpr::Unary(_, x) => x.dtype(p),
            TileExpr::Binary(op, a, _) => {
                if op.is_comparison() {
                    DType::Bool
                } else {
                    a.dtype(p)
                }
            }
            TileExpr::Select(_, a, _) | TileExpr::MulAdd(a, _, _) => a.dtype(p),
            TileExpr::Cast(t, _) | TileExpr::Bitcast(t, _) => *t,
            TileExpr::Index { .. } => DType::I32,
            TileExpr::Random { kind, .. } => match kind {
                RandomKind::Int => DType::U32,
                _ => DType::F32,
            },
        }
    }

    /// The shapes of the expression's tiles and indices, in order of appearance: each must
    /// broadcast to the output's.
    pub fn shapes(&self, p: &Program) -> Vec<Vec<i64>> {
        let mut out = vec![];
        self.visit(&mut |x| match x {
            TileExpr::Tile(v) => out.push(p.view_shape(v)),
            TileExpr::Index { shape, .. } => out.push(shape.clone()),
            _ => {}
        });
        out
    }

    /// Whether the expression reads an index ([`TileExpr::Index`]).
    pub fn has_index(&self) -> bool {
        let mut found = false;
        self.visit(&mut |x| found |= matches!(x, TileExpr::Index { .. }));
        found
    }

    /// Calls `f` on every node, parents first.
    fn visit(&self, f: &mut impl FnMut(&TileExpr)) {
        f(self);
        match self {
            TileExpr::Tile(_) | TileExpr::Scalar(_) | TileExpr::Index { .. } => {}
            TileExpr::Unary(_, x) | TileExpr::Cast(_, x) | TileExpr::Bitcast(_, x) => x.visit(f),
            TileExpr::Random { counter, .. } => counter.visit(f),
            TileExpr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            TileExpr::Select(a, b, c) | TileExpr::MulAdd(a, b, c) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
        }
    }

    /// Every tile the expression reads, in order of appearance.
    pub fn tiles(&self, out: &mut Vec<RegView>) {
        match self {
            TileExpr::Tile(v) => out.push(*v),
            TileExpr::Scalar(_) | TileExpr::Index { .. } => {}
            TileExpr::Unary(_, x) | TileExpr::Cast(_, x) | TileExpr::Bitcast(_, x) => x.tiles(out),
            TileExpr::Random { counter, .. } => counter.tiles(out),
            TileExpr::Binary(_, a, b) => {
                a.tiles(out);
                b.tiles(out);
            }
            TileExpr::Select(c, a, b) | TileExpr::MulAdd(c, a, b) => {
                c.tiles(out);
                a.tiles(out);
                b.tiles(out);
            }
        }
    }

    /// Calls `f` on every register tile the expression reads, to change it.
    pub fn tiles_mut(&mut self, f: &mut dyn FnMut(&mut RegView)) {
        match self {
            TileExpr::Tile(v) => f(v),
            TileExpr::Scalar(_) | TileExpr::Index { .. } => {}
            TileExpr::Unary(_, x) | TileExpr::Cast(_, x) | TileExpr::Bitcast(_, x) => {
                x.tiles_mut(f)
            }
            TileExpr::Random { counter, .. } => counter.tiles_mut(f),
            TileExpr::Binary(_, a, b) => {
                a.tiles_mut(f);
                b.tiles_mut(f);
            }
            TileExpr::Select(c, a, b) | TileExpr::MulAdd(c, a, b) => {
                c.tiles_mut(f);
                a.tiles_mut(f);
                b.tiles_mut(f);
            }
        }
    }

    /// Every scalar the expression reads.
    pub fn scalars<'a>(&'a self, out: &mut Vec<&'a Expr>) {
        match self {
            TileExpr::Tile(_) | TileExpr::Index { .. } => {}
            TileExpr::Scalar(e) => out.push(e),
            TileExpr::Unary(_, x) | TileExpr::Cast(_, x) | TileExpr::Bitcast(_, x) => {
                x.scalars(out)
            }
            // the seed first: evaluation takes the scalars in this order
            TileExpr::Random { seed, counter, .. } => {
                out.push(seed);
                counter.scalars(out);
            }
            TileExpr::Binary(_, a, b) => {
                a.scalars(out);
                b.scalars(out);
            }
            TileExpr::Select(c, a, b) | TileExpr::MulAdd(c, a, b) => {
                c.scalars(out);
                a.scalars(out);
                b.scalars(out);
            }
        }
    }

    /// For each tile the expression reads (in order), the local element of that tile that each
    /// local element of `out` reads in the same thread: how a planned program's threads meet
    /// broadcast operands. `None` when a layout is missing or a tile's layout does not hold,
    /// in each thread, the elements that thread's part of `out` needs.
    pub(crate) fn operand_locals(&self, p: &Program, out: RegId) -> Option<Vec<Vec<usize>>> {
        let ol = p.register(out).layout.as_ref()?;
        let mut tiles = vec![];
        self.tiles(&mut tiles);
        tiles
            .iter()
            .map(|v| {
                let l = v.layout_of(p.register(v.tensor).layout.as_ref()?);
                let lead = ol.rank().checked_sub(l.rank())?;
                let lifted = l.insert_dims(&(0..lead).collect::<Vec<_>>());
                ol.broadcast_locals(&lifted)
            })
            .collect()
    }

    fn describe(&self, n: &Names) -> String {
        match self {
            TileExpr::Tile(v) => n.view(v),
            TileExpr::Scalar(e) => n.e(e),
            TileExpr::Unary(UnaryOp::Neg, x) => format!("-{}", x.describe(n)),
            TileExpr::Unary(op, x) => format!("{}({})", op.name(), x.describe(n)),
            TileExpr::Binary(op @ (BinaryOp::Max | BinaryOp::Min), a, b) => {
                format!("{}({}, {})", op.name(), a.describe(n), b.describe(n))
            }
            TileExpr::Binary(op, a, b) => {
                format!("({} {} {})", a.describe(n), op.name(), b.describe(n))
            }
            TileExpr::Select(c, a, b) => format!(
                "where({}, {}, {})",
                c.describe(n),
                a.describe(n),
                b.describe(n)
            ),
            TileExpr::MulAdd(a, b, c) => format!(
                "mul_add({}, {}, {})",
                a.describe(n),
                b.describe(n),
                c.describe(n)
            ),
            TileExpr::Cast(t, x) => format!("{t}({})", x.describe(n)),
            TileExpr::Bitcast(t, x) => format!("view<{t}>({})", x.describe(n)),
            TileExpr::Index { shape, dim } => format!("arange({shape:?}, {dim})"),
            TileExpr::Random {
                kind,
                seed,
                counter,
            } => format!("{}({}, {})", kind.name(), n.e(seed), counter.describe(n)),
        }
    }
}

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (in f32 for 16-bit floats).
    Sum,
    /// The largest element.
    Max,
    /// The smallest element.
    Min,
    /// Whether any element is true.
    Any,
    /// Whether every element is true.
    All,
}

impl ReduceOp {
    /// How scripts write it.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }
}

/// Elementwise register operations and reductions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArithInst {
    /// Converts each element to `out`'s element type (round to nearest even).
    Cast {
        /// Source.
        src: RegView,
        /// Destination, same shape and layout.
        out: RegId,
    },
    /// `out = expr`, element for element (tiles in `expr` broadcast to `out`'s shape).
    Map {
        /// The expression.
        expr: TileExpr,
        /// The result.
        out: RegId,
    },
    /// `out = expr` into a tile that already exists (defined earlier, in this scope or an
    /// enclosing one), element for element as [`ArithInst::Map`]: the values are all computed
    /// before any is written, so `expr` may read `out`. How a loop carries a tile from one
    /// iteration to the next (`acc = acc + x`).
    Assign {
        /// The expression.
        expr: TileExpr,
        /// The tile written.
        out: RegId,
    },
    /// `out = op(src)` along dimension `dim`: each thread reduces the elements it holds,
    /// then the threads that split the dimension combine theirs (warp shuffles within a warp,
    /// a shared scratch tile across warps). Every thread ends with the result of each
    /// element of `out` it holds.
    Reduce {
        /// The tile.
        src: RegView,
        /// The reduction.
        op: ReduceOp,
        /// The dimension reduced.
        dim: usize,
        /// Whether `out` keeps the dimension (with extent 1).
        keepdim: bool,
        /// The result.
        out: RegId,
        /// The shared scratch tile of a reduction across warps; chosen by layout inference.
        scratch: Option<SharedId>,
    },
    /// `out` = the running `op` of `src` along `dim` (inclusive: element `i` combines elements
    /// `0 ..= i`; exclusive: `0 .. i`, the first the identity), in the same shape and layout.
    /// Each line along `dim` is combined in order, element after element, in f32 for floats
    /// (16-bit results rounded once) and wrapping for integers: where each thread holds whole
    /// lines, in its registers; otherwise the tile goes through the shared `scratch`, one
    /// thread scans each line there, and the block meets before and after.
    Scan {
        /// The tile.
        src: RegView,
        /// The combination.
        op: ScanOp,
        /// The dimension scanned.
        dim: usize,
        /// Whether element `i` leaves itself out.
        exclusive: bool,
        /// The result.
        out: RegId,
        /// The scratch: sized by layout inference, empty when the threads hold whole lines.
        scratch: SharedId,
    },
}

/// A running combination ([`ArithInst::Scan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    /// Running sums.
    Sum,
    /// Running products.
    Prod,
    /// Running maxima.
    Max,
    /// Running minima.
    Min,
}

impl ScanOp {
    /// How scripts write it.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Max => "cummax",
            ScanOp::Min => "cummin",
        }
    }

    /// The elementwise operation it runs.
    pub fn binary(self) -> BinaryOp {
        match self {
            ScanOp::Sum => BinaryOp::Add,
            ScanOp::Prod => BinaryOp::Mul,
            ScanOp::Max => BinaryOp::Max,
            ScanOp::Min => BinaryOp::Min,
        }
    }
}

/// For each local element of a reduction's operand (seen through its view), the local element
/// of the result it folds into, in the same thread; `None` before layouts are inferred.
pub(crate) fn reduce_locals(p: &Program, src: &RegView, dim: usize) -> Option<Vec<usize>> {
    let l = src.layout_of(p.register(src.tensor).layout.as_ref()?);
    l.broadcast_locals(&l.collapse(&[dim]))
}

/// Whether a reduction's partial results meet across warps, through its scratch tile (a
/// planned scratch holds elements).
pub(crate) fn reduce_crosses_warps(p: &Program, scratch: Option<SharedId>) -> bool {
    scratch.is_some_and(|s| p.shared(s).shape.iter().product::<i64>() > 0)
}

/// Every subset of the bits of `mask`, in increasing order: the thread-index offsets of the
/// partners a reduction combines.
pub(crate) fn subsets(mask: u64) -> Vec<u64> {
    let mut out = vec![];
    let mut s = 0u64;
    loop {
        out.push(s);
        if s == mask {
            break;
        }
        s = (s.wrapping_sub(mask)) & mask;
    }
    out
}

impl ArithInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            ArithInst::Cast { .. } => "cast",
            ArithInst::Map { .. } => "compute",
            ArithInst::Assign { .. } => "assign_tile",
            ArithInst::Reduce { op, .. } => match op {
                ReduceOp::Sum => "sum",
                ReduceOp::Max => "max",
                ReduceOp::Min => "min",
                ReduceOp::Any => "any",
                ReduceOp::All => "all",
            },
            ArithInst::Scan { op, .. } => op.name(),
        }
    }

    /// For a scan: whether its scratch was given bytes (some line spans several threads).
    pub(crate) fn scans_through_shared(&self, p: &Program) -> bool {
        match self {
            ArithInst::Scan { scratch, .. } => p.shared(*scratch).shape.iter().product::<i64>() > 0,
            _ => false,
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        let read = |r: RegId| Effect::now(Memory::Register(r), Access::Read);
        let declare = |r: RegId| Effect::now(Memory::Register(r), Access::Declare);
        match self {
            ArithInst::Cast { src, out } => Facts::default()
                .effect(read(src.tensor))
                .effect(declare(*out)),
            ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
                let mut tiles = vec![];
                expr.tiles(&mut tiles);
                let mut scalars = vec![];
                expr.scalars(&mut scalars);
                let mut f = Facts::default();
                for v in tiles {
                    f = f.effect(read(v.tensor));
                }
                let written = if matches!(self, ArithInst::Map { .. }) {
                    declare(*out)
                } else {
                    Effect::now(Memory::Register(*out), Access::Write)
                };
                f.effect(written).reads(scalars)
            }
            ArithInst::Scan {
                src, out, scratch, ..
            } => {
                let mut f = if self.scans_through_shared(p) {
                    // one thread per line in shared memory, behind block-wide barriers
                    let mut f = Facts::scoped(ThreadScope::Block);
                    for access in [
                        Access::Declare,
                        Access::Write,
                        Access::Read,
                        Access::Release,
                    ] {
                        f = f.effect(Effect::now(Memory::Shared(*scratch), access));
                    }
                    f
                } else {
                    Facts::default()
                };
                f = f.effect(read(src.tensor)).effect(declare(*out));
                f
            }
            ArithInst::Reduce {
                src, out, scratch, ..
            } => {
                // lanes exchange values with warp shuffles: whole warps; across warps, partial
                // results meet in shared memory behind block-wide barriers: the whole block
                let scope = if reduce_crosses_warps(p, *scratch) {
                    ThreadScope::Block
                } else {
                    ThreadScope::Warps
                };
                let mut f = Facts::scoped(scope)
                    .effect(read(src.tensor))
                    .effect(declare(*out));
                if let Some(s) = scratch {
                    // a scratch tile that lives for this instruction only
                    for access in [
                        Access::Declare,
                        Access::Write,
                        Access::Read,
                        Access::Release,
                    ] {
                        f = f.effect(Effect::now(Memory::Shared(*s), access));
                    }
                }
                f
            }
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            ArithInst::Cast { src, out } => {
                let d = n.p.register(*out);
                format!("{} = cast<{}>({})", d.name, d.dtype, n.view(src))
            }
            ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
                let d = n.p.register(*out);
                let mut t = format!(
                    "{} {} {}<{}>{:?}({})",
                    d.name,
                    if matches!(self, ArithInst::Map { .. }) {
                        "="
                    } else {
                        "<-"
                    },
                    self.name(),
                    d.dtype,
                    d.shape,
                    expr.describe(n)
                );
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
            ArithInst::Reduce {
                src,
                op,
                dim,
                keepdim,
                out,
                scratch,
            } => {
                let d = n.p.register(*out);
                let mut t = format!(
                    "{} = {}({}, dim={dim}, keepdim={keepdim})",
                    d.name,
                    op.name(),
                    n.view(src)
                );
                if let Some(s) = scratch {
                    let _ = write!(t, " scratch={}", n.p.shared(*s).name);
                }
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
            ArithInst::Scan {
                src,
                op,
                dim,
                exclusive,
                out,
                scratch,
            } => {
                let d = n.p.register(*out);
                let how = if self.scans_through_shared(n.p) {
                    format!(
                        "through shared `{}` ({} B, 2 block barriers)",
                        n.p.shared(*scratch).name,
                        n.p.shared(*scratch).shape.iter().product::<i64>() * 4
                    )
                } else {
                    "in registers".to_string()
                };
                let mut t = format!(
                    "{} = {}({}, dim={dim}, exclusive={exclusive}) {how}",
                    d.name,
                    op.name(),
                    n.view(src)
                );
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
        }
    }
}
