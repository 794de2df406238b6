//! Arithmetic on register tiles: Rust's operators and methods build a [`Tile`] expression,
//! which [`Kernel::compute`] turns into a register tile with one instruction (the whole
//! expression is evaluated element for element, in registers: nothing in between is stored).
//! Tiles broadcast the NumPy way (a tile of lower rank lines up with the last dimensions, an
//! extent of 1 repeats), scalars broadcast everywhere. Reductions (`k.sum`, `k.max`, ...) run
//! along one dimension.
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Scale;
//!
//! impl Script for Scale {
//!     type Args = (PtrMut<f32>,);
//!     fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
//!         k.blocks([1]);
//!         k.warps(1);
//!         let x = k.register_tensor::<f32>([32, 4], Some(2.0));
//!         let y = k.compute((x * 3.0 + 1.0).maximum(6.5)); // 7 everywhere
//!         let rows = k.sum(&y, 1, true);                   // [32, 1]: 28 each
//!         let z = k.compute(y / rows);                     // broadcast: 0.25 everywhere
//!         let g = k.global_view::<f32>(out, [32, 4]);
//!         k.store_global(&g, &z, [0, 0]);
//!     }
//! }
//!
//! let mut out = vec![0.0f32; 128];
//! tilus::interpret(&Scale, (&mut out[..],)).unwrap();
//! assert!(out.iter().all(|&v| v == 0.25));
//! ```

use super::{Dims, Element, Kernel, RegisterTensor, Scalar, Val};
use crate::ir::{
    ArithInst, BinaryOp, DType, Expr, Inst, Loc, RandomKind, ReduceOp, ScanOp, StmtKind, TileExpr,
    UnaryOp,
};
use std::marker::PhantomData;
use std::ops;

/// An elementwise expression whose elements have type `T`, evaluated where it is used
/// ([`Kernel::compute`]).
#[derive(Debug)]
pub struct Tile<T> {
    pub(crate) e: TileExpr,
    _t: PhantomData<T>,
}

impl<T> Clone for Tile<T> {
    fn clone(&self) -> Self {
        Tile::new(self.e.clone())
    }
}

impl<T> Tile<T> {
    fn new(e: TileExpr) -> Tile<T> {
        Tile { e, _t: PhantomData }
    }

    /// The IR expression.
    pub fn expr(&self) -> &TileExpr {
        &self.e
    }
}

/// Anything that can stand for a tile of `T` in an expression: register tiles, expressions,
/// and scalars (broadcast to every element).
///
/// An operand of another element type is refused with a message that says to cast it:
///
/// ```compile_fail,E0277
/// # use tilus::prelude::*;
/// # fn body(k: &mut Kernel, x: RegisterTensor<f32>, i: RegisterTensor<i32>) {
/// let y = k.compute(x + i); // an i32 tile in an f32 expression
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot stand for a tile of `{T}` in this expression",
    label = "not a `{T}` tile, expression or scalar",
    note = "the operands of an expression share one element type; convert the others first: \
            `x.cast::<f32>()` (a tile or expression), `Scalar::from(..)` for a scalar"
)]
pub trait IntoTile<T> {
    /// The expression.
    fn into_tile(self) -> Tile<T>;
}

impl<T> IntoTile<T> for Tile<T> {
    fn into_tile(self) -> Tile<T> {
        self
    }
}

impl<T> IntoTile<T> for &Tile<T> {
    fn into_tile(self) -> Tile<T> {
        self.clone()
    }
}

impl<T> IntoTile<T> for RegisterTensor<T> {
    fn into_tile(self) -> Tile<T> {
        Tile::new(TileExpr::Tile(self.view))
    }
}

impl<T> IntoTile<T> for &RegisterTensor<T> {
    fn into_tile(self) -> Tile<T> {
        Tile::new(TileExpr::Tile(self.view))
    }
}

/// A Rust number as a scalar of element type `T`.
fn literal<T: Element>(v: f64) -> Tile<T> {
    let t = T::DTYPE;
    Tile::new(TileExpr::Scalar(if t.is_float() {
        Expr::Float(v.to_bits(), t)
    } else {
        Expr::Int(v as i64, t)
    }))
}

impl<T: Element> IntoTile<T> for f64 {
    fn into_tile(self) -> Tile<T> {
        literal(self)
    }
}

impl<T: Element> IntoTile<T> for f32 {
    fn into_tile(self) -> Tile<T> {
        literal(self as f64)
    }
}

impl<T: Element> IntoTile<T> for i32 {
    fn into_tile(self) -> Tile<T> {
        literal(self as f64)
    }
}

/// A scalar of the script (an argument, a `let`, an expression), converted to `T`.
fn scalar<T: Element>(s: Scalar) -> Tile<T> {
    let e = s.0;
    let e = if e.dtype() == T::DTYPE {
        e
    } else {
        Expr::Cast(T::DTYPE, Box::new(e))
    };
    Tile::new(TileExpr::Scalar(e))
}

impl<T: Element> IntoTile<T> for Val {
    fn into_tile(self) -> Tile<T> {
        scalar(self.into())
    }
}

impl<T: Element> IntoTile<T> for Scalar {
    fn into_tile(self) -> Tile<T> {
        scalar(self)
    }
}

impl<T: Element> IntoTile<T> for &Scalar {
    fn into_tile(self) -> Tile<T> {
        scalar(self.clone())
    }
}

fn unary<T>(op: UnaryOp, x: Tile<T>) -> Tile<T> {
    Tile::new(TileExpr::Unary(op, Box::new(x.e)))
}

fn binary<T, U>(op: BinaryOp, a: Tile<T>, b: Tile<T>) -> Tile<U> {
    Tile::new(TileExpr::Binary(op, Box::new(a.e), Box::new(b.e)))
}

macro_rules! tile_ops {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<T: Element, R: IntoTile<T>> ops::$tr<R> for Tile<T> {
            type Output = Tile<T>;
            fn $method(self, rhs: R) -> Tile<T> {
                binary(BinaryOp::$op, self, rhs.into_tile())
            }
        }
        impl<T: Element, R: IntoTile<T>> ops::$tr<R> for &Tile<T> {
            type Output = Tile<T>;
            fn $method(self, rhs: R) -> Tile<T> {
                binary(BinaryOp::$op, self.clone(), rhs.into_tile())
            }
        }
        impl<T: Element, R: IntoTile<T>> ops::$tr<R> for RegisterTensor<T> {
            type Output = Tile<T>;
            fn $method(self, rhs: R) -> Tile<T> {
                binary(BinaryOp::$op, self.into_tile(), rhs.into_tile())
            }
        }
        impl<T: Element, R: IntoTile<T>> ops::$tr<R> for &RegisterTensor<T> {
            type Output = Tile<T>;
            fn $method(self, rhs: R) -> Tile<T> {
                binary(BinaryOp::$op, self.into_tile(), rhs.into_tile())
            }
        }
        impl<T: Element> ops::$tr<Tile<T>> for f64 {
            type Output = Tile<T>;
            fn $method(self, rhs: Tile<T>) -> Tile<T> {
                binary(BinaryOp::$op, literal(self), rhs)
            }
        }
        impl<T: Element> ops::$tr<RegisterTensor<T>> for f64 {
            type Output = Tile<T>;
            fn $method(self, rhs: RegisterTensor<T>) -> Tile<T> {
                binary(BinaryOp::$op, literal(self), rhs.into_tile())
            }
        }
        impl<T: Element> ops::$tr<&RegisterTensor<T>> for f64 {
            type Output = Tile<T>;
            fn $method(self, rhs: &RegisterTensor<T>) -> Tile<T> {
                binary(BinaryOp::$op, literal(self), rhs.into_tile())
            }
        }
    )*};
}

tile_ops!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

impl<T: Element> ops::Neg for Tile<T> {
    type Output = Tile<T>;
    fn neg(self) -> Tile<T> {
        unary(UnaryOp::Neg, self)
    }
}

impl<T: Element> ops::Neg for RegisterTensor<T> {
    type Output = Tile<T>;
    fn neg(self) -> Tile<T> {
        unary(UnaryOp::Neg, self.into_tile())
    }
}

impl<T: Element> ops::Neg for &RegisterTensor<T> {
    type Output = Tile<T>;
    fn neg(self) -> Tile<T> {
        unary(UnaryOp::Neg, self.into_tile())
    }
}

/// The elementwise methods of tiles and expressions (`x.exp()`, `x.maximum(y)`,
/// `x.lt(y)`, ...), for [`RegisterTensor`], [`Tile`] and references to them.
pub trait TileMath<T: Element>: IntoTile<T> + Sized {
    /// `e^x`, accurate (`expf`).
    fn exp(self) -> Tile<T> {
        unary(UnaryOp::Exp, self.into_tile())
    }
    /// `e^x` through the hardware's approximation (`ex2.approx`): fast math, asked for.
    fn exp_approx(self) -> Tile<T> {
        unary(UnaryOp::ExpApprox, self.into_tile())
    }
    /// `2^x`.
    fn exp2(self) -> Tile<T> {
        unary(UnaryOp::Exp2, self.into_tile())
    }
    /// `2^x` through the hardware's approximation (`ex2.approx.ftz.f32`, one instruction,
    /// relative error about 2^-22, subnormals flushed to zero): fast math, asked for.
    /// [`TileMath::exp_approx`] multiplies by log2(e) first; a script whose exponent has a
    /// constant factor folds log2(e) into it and saves that multiplication.
    fn exp2_approx(self) -> Tile<T> {
        unary(UnaryOp::Exp2Approx, self.into_tile())
    }
    /// `self * m + c` with one rounding for floats (a fused multiply-add, `fma.rn`; Rust's
    /// `f32::mul_add`), wrapping for integers. Products and sums written with `*` and `+` are
    /// rounded one by one and never contracted, so that the interpreter's bits are the GPU's;
    /// `mul_add` is how a script asks for the FMA, which is one instruction instead of two and
    /// more accurate.
    fn mul_add(self, m: impl IntoTile<T>, c: impl IntoTile<T>) -> Tile<T> {
        Tile::new(TileExpr::MulAdd(
            Box::new(self.into_tile().e),
            Box::new(m.into_tile().e),
            Box::new(c.into_tile().e),
        ))
    }
    /// The natural logarithm.
    fn log(self) -> Tile<T> {
        unary(UnaryOp::Log, self.into_tile())
    }
    /// The square root, correctly rounded.
    fn sqrt(self) -> Tile<T> {
        unary(UnaryOp::Sqrt, self.into_tile())
    }
    /// `1 / sqrt(x)`.
    fn rsqrt(self) -> Tile<T> {
        unary(UnaryOp::Rsqrt, self.into_tile())
    }
    /// The sine.
    fn sin(self) -> Tile<T> {
        unary(UnaryOp::Sin, self.into_tile())
    }
    /// The cosine.
    fn cos(self) -> Tile<T> {
        unary(UnaryOp::Cos, self.into_tile())
    }
    /// The hyperbolic tangent.
    fn tanh(self) -> Tile<T> {
        unary(UnaryOp::Tanh, self.into_tile())
    }
    /// The hyperbolic tangent through the hardware's approximation (`tanh.approx.f32`, one
    /// instruction; relative error up to about 2^-11): fast math, asked for.
    fn tanh_approx(self) -> Tile<T> {
        unary(UnaryOp::TanhApprox, self.into_tile())
    }
    /// `1 / x` through the hardware's approximation (`rcp.approx.ftz.f32`, one instruction,
    /// about one ulp, subnormals flushed to zero): fast math, asked for.
    fn recip_approx(self) -> Tile<T> {
        unary(UnaryOp::RecipApprox, self.into_tile())
    }
    /// Rounding to the nearest integer, ties to even.
    fn round(self) -> Tile<T> {
        unary(UnaryOp::Round, self.into_tile())
    }
    /// `|x|`.
    fn abs(self) -> Tile<T> {
        unary(UnaryOp::Abs, self.into_tile())
    }
    /// `x * x`.
    fn square(self) -> Tile<T> {
        unary(UnaryOp::Square, self.into_tile())
    }
    /// The larger of the two, element for element.
    fn maximum(self, other: impl IntoTile<T>) -> Tile<T> {
        binary(BinaryOp::Max, self.into_tile(), other.into_tile())
    }
    /// The smaller of the two, element for element.
    fn minimum(self, other: impl IntoTile<T>) -> Tile<T> {
        binary(BinaryOp::Min, self.into_tile(), other.into_tile())
    }
    /// `min(max(x, lo), hi)`.
    fn clip(self, lo: impl IntoTile<T>, hi: impl IntoTile<T>) -> Tile<T> {
        self.maximum(lo).minimum(hi)
    }
    /// `x < y`.
    fn lt(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Lt, self.into_tile(), other.into_tile())
    }
    /// `x <= y`.
    fn le(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Le, self.into_tile(), other.into_tile())
    }
    /// `x > y`.
    fn gt(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Gt, self.into_tile(), other.into_tile())
    }
    /// `x >= y`.
    fn ge(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Ge, self.into_tile(), other.into_tile())
    }
    /// `x == y`.
    fn eq_(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Eq, self.into_tile(), other.into_tile())
    }
    /// `x != y`.
    fn ne_(self, other: impl IntoTile<T>) -> Tile<bool> {
        binary(BinaryOp::Ne, self.into_tile(), other.into_tile())
    }
    /// Each element converted to `U` (round to nearest even).
    fn cast<U: Element>(self) -> Tile<U> {
        Tile::new(TileExpr::Cast(U::DTYPE, Box::new(self.into_tile().e)))
    }
    /// Each element's bits read as a `U` of the same width (`f32`, `i32`, `u32`; `f16`,
    /// `bf16`): `x.view::<u32>()` is the f32 bit pattern, for sign tricks, packing and
    /// hashing.
    fn view<U: Element>(self) -> Tile<U> {
        Tile::new(TileExpr::Bitcast(U::DTYPE, Box::new(self.into_tile().e)))
    }
}

impl<T: Element> TileMath<T> for Tile<T> {}
impl<T: Element> TileMath<T> for &Tile<T> {}
impl<T: Element> TileMath<T> for RegisterTensor<T> {}
impl<T: Element> TileMath<T> for &RegisterTensor<T> {}

impl Tile<bool> {
    /// Logical and.
    pub fn and(self, other: impl IntoTile<bool>) -> Tile<bool> {
        binary(BinaryOp::And, self, other.into_tile())
    }
    /// Logical or.
    pub fn or(self, other: impl IntoTile<bool>) -> Tile<bool> {
        binary(BinaryOp::Or, self, other.into_tile())
    }
}

impl ops::Not for Tile<bool> {
    type Output = Tile<bool>;
    /// Logical not.
    fn not(self) -> Tile<bool> {
        unary(UnaryOp::Not, self)
    }
}

impl ops::Not for RegisterTensor<bool> {
    type Output = Tile<bool>;
    /// Logical not.
    fn not(self) -> Tile<bool> {
        unary(UnaryOp::Not, self.into_tile())
    }
}

/// `cond ? a : b`, element for element.
pub fn where_<T: Element>(
    cond: impl IntoTile<bool>,
    a: impl IntoTile<T>,
    b: impl IntoTile<T>,
) -> Tile<T> {
    Tile::new(TileExpr::Select(
        Box::new(cond.into_tile().e),
        Box::new(a.into_tile().e),
        Box::new(b.into_tile().e),
    ))
}

/// Philox4x32-10 random numbers ([`crate::ir::philox`]), uniform in `[0, 1)`: for each element,
/// the generator's first word for `seed` at the element's offset (an integer expression, such as
/// `k.arange(..) + base`), its top 24 bits times 2^-24. The same seed and offsets give the same
/// bits on the GPU and the interpreter, in any layout; different offsets give independent
/// numbers, so a kernel draws `rand(seed, global_index)` and needs no state.
///
/// ```
/// # use tilus::prelude::*;
/// # fn body(k: &mut Kernel, x: RegisterTensor<f32>, seed: Val, row0: Val) {
/// // dropout with p = 0.1 on a [64, 128] tile whose first row is `row0` of a 128-wide matrix
/// let offsets = (k.arange([64, 1], 0) + row0) * 128 + k.arange([1, 128], 1);
/// let kept = k.compute(where_(rand(seed, offsets).ge(0.1), x / 0.9, 0.0));
/// # }
/// ```
pub fn rand(seed: impl Into<Scalar>, offsets: impl IntoTile<i32>) -> Tile<f32> {
    random(RandomKind::Uniform, seed.into(), offsets.into_tile())
}

/// Standard normal random numbers from the generator's first two words for `seed` at each
/// offset (Box-Muller, as [`crate::ir::philox::normal`] computes it). The logarithm and cosine
/// are the GPU's on the GPU and the host's in the interpreter: the values agree within a few
/// ulps.
pub fn randn(seed: impl Into<Scalar>, offsets: impl IntoTile<i32>) -> Tile<f32> {
    random(RandomKind::Normal, seed.into(), offsets.into_tile())
}

/// The generator's first word for `seed` at each offset, as a `u32` (uniform over all 2^32
/// values; bit for bit the same on the GPU and the interpreter).
pub fn randint(seed: impl Into<Scalar>, offsets: impl IntoTile<i32>) -> Tile<u32> {
    random(RandomKind::Int, seed.into(), offsets.into_tile())
}

fn random<T>(kind: RandomKind, seed: Scalar, offsets: Tile<i32>) -> Tile<T> {
    Tile::new(TileExpr::Random {
        kind,
        seed: seed.0,
        counter: Box::new(offsets.e),
    })
}

/// The shape of `to` when a tile of shape `shape` broadcasts into it: `None` when it does not.
pub(crate) fn broadcast_shape(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let at = |s: &[i64], d: usize| {
        let off = rank - s.len();
        if d < off {
            1
        } else {
            s[d - off]
        }
    };
    (0..rank)
        .map(|d| match (at(a, d), at(b, d)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

impl Kernel {
    /// The shape an expression broadcasts to, or a diagnostic-ready description of why not.
    fn tile_shape(&self, e: &TileExpr) -> Result<Vec<i64>, String> {
        Ok(match e {
            TileExpr::Tile(v) => self.prog.view_shape(v),
            TileExpr::Scalar(_) => vec![],
            TileExpr::Index { shape, .. } => shape.clone(),
            TileExpr::Random { counter, .. } => self.tile_shape(counter)?,
            TileExpr::Unary(_, x) | TileExpr::Cast(_, x) | TileExpr::Bitcast(_, x) => {
                self.tile_shape(x)?
            }
            TileExpr::Binary(_, a, b) => {
                let (sa, sb) = (self.tile_shape(a)?, self.tile_shape(b)?);
                broadcast_shape(&sa, &sb)
                    .ok_or_else(|| format!("shapes {sa:?} and {sb:?} do not broadcast"))?
            }
            TileExpr::Select(c, a, b) | TileExpr::MulAdd(c, a, b) => {
                let (sc, sa, sb) = (
                    self.tile_shape(c)?,
                    self.tile_shape(a)?,
                    self.tile_shape(b)?,
                );
                let ab = broadcast_shape(&sa, &sb)
                    .ok_or_else(|| format!("shapes {sa:?} and {sb:?} do not broadcast"))?;
                broadcast_shape(&sc, &ab)
                    .ok_or_else(|| format!("shapes {sc:?} and {ab:?} do not broadcast"))?
            }
        })
    }

    /// The index along `dim` of each element of a tile of `shape`, as an `i32` expression that
    /// broadcasts like a tile of that shape: `arange([1, 64], 1)` is `0, 1, .., 63` along a
    /// row, repeated down the columns of whatever it meets. It takes no registers of its own:
    /// each thread computes it from the coordinates its layout gives the result's elements, so
    /// it fits any layout. Masks are comparisons of it:
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, s: RegisterTensor<f32>, q0: Val, k0: Val, len: Val) {
    /// // causal attention: key k0 + j is visible to query q0 + i when k0 + j <= q0 + i,
    /// // and exists when k0 + j < len
    /// let (i, j) = (k.arange([64, 1], 0), k.arange([1, 64], 1));
    /// let keep = (j.clone() + k0).le(i + q0).and((j + k0).lt(len));
    /// let masked = k.compute(where_(keep, s, f32::NEG_INFINITY));
    /// # }
    /// ```
    #[track_caller]
    pub fn arange(&mut self, shape: impl Dims, dim: usize) -> Tile<i32> {
        let loc = Loc::caller();
        let shape = super::tensors::dims(self, loc, "arange", &shape.into_dims());
        if dim >= shape.len() {
            self.error(
                loc,
                format!(
                    "arange: dimension {dim} of a tile of {} dimension(s)",
                    shape.len()
                ),
            );
        }
        let dim = dim.min(shape.len() - 1);
        Tile::new(TileExpr::Index { shape, dim })
    }

    /// Evaluates an elementwise expression into a new register tile of the current group (the
    /// shape the expression's tiles broadcast to), with one instruction.
    #[track_caller]
    pub fn compute<T: Element>(&mut self, x: impl IntoTile<T>) -> RegisterTensor<T> {
        self.materialize(x.into_tile().e, Loc::caller())
    }

    /// Evaluates an elementwise expression into `dst`, a tile that already exists (defined
    /// before, here or in an enclosing scope, by the current group): every value is computed
    /// before any is written, so the expression may read `dst` itself. This is how a loop
    /// carries a tile from one iteration to the next:
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, x: RegisterTensor<f32>, n: Val) {
    /// let acc = k.register_tensor::<f32>([4, 32], 0.0);
    /// k.for_range(0, n, 1, |k, _| {
    ///     k.assign_tile(&acc, acc + x);
    /// });
    /// # }
    /// ```
    ///
    /// The expression broadcasts to `dst`'s shape and is converted to its type, as in
    /// [`Kernel::compute`]. `dst` must be a tile itself, not a transposed view, nor the result
    /// of a `slice` or `reshape` (a tile of its own: writing it would leave its source as it
    /// was); each is a diagnostic at the caller's line.
    #[track_caller]
    pub fn assign_tile<T: Element>(&mut self, dst: &RegisterTensor<T>, x: impl IntoTile<T>) {
        let loc = Loc::caller();
        if dst.view.transposed {
            self.error(
                loc,
                "assign_tile: the destination is a transposed view; assign to the tile itself",
            );
            return;
        }
        let out = dst.view.tensor;
        let expr = self.converted(x.into_tile().e, T::DTYPE);
        self.push(
            StmtKind::Inst(Inst::Arith(ArithInst::Assign { expr, out })),
            loc,
        );
    }

    /// `e` converted to `t` where its type is another (the conversion at the top of the
    /// expression, as the result's store does it).
    fn converted(&self, e: TileExpr, t: DType) -> TileExpr {
        if self.tile_dtype(&e) == t {
            e
        } else {
            TileExpr::Cast(t, Box::new(e))
        }
    }

    fn tile_dtype(&self, e: &TileExpr) -> DType {
        e.dtype(&self.prog)
    }

    fn reduce<T: Element>(
        &mut self,
        op: ReduceOp,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
        loc: Loc,
    ) -> RegisterTensor<T> {
        let src = match x.into_tile().e {
            TileExpr::Tile(v) => v,
            e => {
                // an expression is computed first; the script's name is the result's
                let t: RegisterTensor<T> = self.without_pending_name(|k| k.materialize(e, loc));
                t.view
            }
        };
        let mut shape = self.prog.view_shape(&src);
        if dim >= shape.len() {
            self.error(
                loc,
                format!(
                    "{}: dimension {dim} of a tile of {} dimension(s)",
                    op.name(),
                    shape.len()
                ),
            );
        } else if keepdim {
            shape[dim] = 1;
        } else {
            shape.remove(dim);
        }
        if shape.is_empty() {
            // a reduction to a single element keeps one dimension
            shape = vec![1];
        }
        let out = self.new_register::<T>(shape, loc);
        let scratch = self.scratch_for(out, loc);
        let inst = ArithInst::Reduce {
            src,
            op,
            dim,
            keepdim,
            out,
            scratch: Some(scratch),
        };
        self.push(StmtKind::Inst(Inst::Arith(inst)), loc);
        RegisterTensor::plain(out)
    }

    fn materialize<T: Element>(&mut self, e: TileExpr, loc: Loc) -> RegisterTensor<T> {
        let shape = match self.tile_shape(&e) {
            Ok(s) if s.is_empty() => {
                self.error(loc, "compute: the expression has no tile, only scalars");
                vec![1]
            }
            Ok(s) => s,
            Err(why) => {
                self.error(loc, format!("compute: {why}"));
                vec![1]
            }
        };
        let out = self.new_register::<T>(shape, loc);
        let expr = self.converted(e, T::DTYPE);
        self.push(
            StmtKind::Inst(Inst::Arith(ArithInst::Map { expr, out })),
            loc,
        );
        RegisterTensor::plain(out)
    }

    /// The sum along dimension `dim` (kept with extent 1 when `keepdim`). 16-bit floats are
    /// summed in f32 and the result rounded once.
    #[track_caller]
    pub fn sum<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
    ) -> RegisterTensor<T> {
        self.reduce(ReduceOp::Sum, x, dim, keepdim, Loc::caller())
    }

    /// The largest element along dimension `dim`.
    #[track_caller]
    pub fn max<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
    ) -> RegisterTensor<T> {
        self.reduce(ReduceOp::Max, x, dim, keepdim, Loc::caller())
    }

    /// The smallest element along dimension `dim`.
    #[track_caller]
    pub fn min<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
    ) -> RegisterTensor<T> {
        self.reduce(ReduceOp::Min, x, dim, keepdim, Loc::caller())
    }

    /// Whether any element along dimension `dim` is true.
    #[track_caller]
    pub fn any(
        &mut self,
        x: impl IntoTile<bool>,
        dim: usize,
        keepdim: bool,
    ) -> RegisterTensor<bool> {
        self.reduce(ReduceOp::Any, x, dim, keepdim, Loc::caller())
    }

    /// Whether every element along dimension `dim` is true.
    #[track_caller]
    pub fn all(
        &mut self,
        x: impl IntoTile<bool>,
        dim: usize,
        keepdim: bool,
    ) -> RegisterTensor<bool> {
        self.reduce(ReduceOp::All, x, dim, keepdim, Loc::caller())
    }

    /// Running sums along `dim`: element `i` of each line is the sum of elements `0 ..= i`
    /// (`exclusive`: `0 .. i`, the first 0), in the tile's shape and layout. Each line is
    /// summed in order, element after element (in f32 for floats, 16-bit results rounded once;
    /// wrapping for integers), so the GPU and the interpreter give the same bits. Where every
    /// thread holds whole lines it runs in registers; otherwise the tile goes through a shared
    /// scratch tile, one thread per line, behind block barriers (`tilus ir` says which), and
    /// must then run in the whole block.
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, p: RegisterTensor<f32>) {
    /// let cdf = k.cumsum(&p, 1, false); // running probability mass along each row
    /// # }
    /// ```
    #[track_caller]
    pub fn cumsum<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        exclusive: bool,
    ) -> RegisterTensor<T> {
        self.scan(ScanOp::Sum, x, dim, exclusive, Loc::caller())
    }

    /// Running products along `dim`, as [`Kernel::cumsum`] (the exclusive first is 1).
    #[track_caller]
    pub fn cumprod<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        exclusive: bool,
    ) -> RegisterTensor<T> {
        self.scan(ScanOp::Prod, x, dim, exclusive, Loc::caller())
    }

    /// Running maxima along `dim`, as [`Kernel::cumsum`] (the exclusive first is the type's
    /// lowest value, −∞ for floats).
    #[track_caller]
    pub fn cummax<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        exclusive: bool,
    ) -> RegisterTensor<T> {
        self.scan(ScanOp::Max, x, dim, exclusive, Loc::caller())
    }

    /// Running minima along `dim`, as [`Kernel::cumsum`] (the exclusive first is the type's
    /// highest value, +∞ for floats).
    #[track_caller]
    pub fn cummin<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        exclusive: bool,
    ) -> RegisterTensor<T> {
        self.scan(ScanOp::Min, x, dim, exclusive, Loc::caller())
    }

    fn scan<T: Element>(
        &mut self,
        op: ScanOp,
        x: impl IntoTile<T>,
        dim: usize,
        exclusive: bool,
        loc: Loc,
    ) -> RegisterTensor<T> {
        let src = match x.into_tile().e {
            TileExpr::Tile(v) => v,
            e => {
                let t: RegisterTensor<T> = self.without_pending_name(|k| k.materialize(e, loc));
                t.view
            }
        };
        let shape = self.prog.view_shape(&src);
        if dim >= shape.len() {
            self.error(
                loc,
                format!(
                    "{}: dimension {dim} of a tile of {} dimension(s)",
                    op.name(),
                    shape.len()
                ),
            );
        }
        let out = self.new_register::<T>(shape, loc);
        let scratch = self.scratch_for(out, loc);
        let dim = dim.min(self.prog.view_shape(&src).len().saturating_sub(1));
        let inst = ArithInst::Scan {
            src,
            op,
            dim,
            exclusive,
            out,
            scratch,
        };
        self.push(StmtKind::Inst(Inst::Arith(inst)), loc);
        RegisterTensor::plain(out)
    }

    /// The largest element along `dim` and the index of its first occurrence, as two tiles
    /// (the index `i32`): a maximum, then the smallest index along `dim` where the element
    /// equals it (an index tile, [`Kernel::arange`], and a minimum). NaNs are skipped, as the
    /// maximum skips them; a line of NaNs only gives index `i32::MAX`.
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, scores: RegisterTensor<f32>) {
    /// let (best, at) = k.argmax(&scores, 1, true); // [rows, 1] each
    /// # }
    /// ```
    #[track_caller]
    pub fn argmax<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
    ) -> (RegisterTensor<T>, RegisterTensor<i32>) {
        self.arg_extreme(ReduceOp::Max, x, dim, keepdim, Loc::caller())
    }

    /// The smallest element along `dim` and the index of its first occurrence, as
    /// [`Kernel::argmax`] finds the largest.
    #[track_caller]
    pub fn argmin<T: Element>(
        &mut self,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
    ) -> (RegisterTensor<T>, RegisterTensor<i32>) {
        self.arg_extreme(ReduceOp::Min, x, dim, keepdim, Loc::caller())
    }

    fn arg_extreme<T: Element>(
        &mut self,
        op: ReduceOp,
        x: impl IntoTile<T>,
        dim: usize,
        keepdim: bool,
        loc: Loc,
    ) -> (RegisterTensor<T>, RegisterTensor<i32>) {
        let src: RegisterTensor<T> = match x.into_tile().e {
            TileExpr::Tile(view) => RegisterTensor::of_view(view),
            e => self.without_pending_name(|k| k.materialize(e, loc)),
        };
        let best = self.reduce(op, src, dim, true, loc);
        let shape: Vec<i32> = self
            .prog
            .view_shape(&src.view)
            .iter()
            .map(|&n| n.clamp(1, i64::from(i32::MAX)) as i32)
            .collect();
        let index = if dim < shape.len() {
            self.arange(shape, dim)
        } else {
            // the reduction reported the dimension; any index keeps the trace going
            self.arange(vec![1], 0)
        };
        let first = where_(src.eq_(best), index, i32::MAX);
        let at = self.reduce(ReduceOp::Min, first, dim, keepdim, loc);
        let best = if keepdim || dim >= self.prog.view_shape(&best.view).len() {
            best
        } else {
            self.squeeze(&best, dim)
        };
        (best, at)
    }
}
