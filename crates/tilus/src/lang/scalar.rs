//! Scalar handles: compile-time and runtime integers, and runtime floats, in a script, with
//! Rust operators.
//!
//! [`Val`] is a leaf (a variable or a constant) and is `Copy`, so it can be used freely inside
//! closures; [`Scalar`] is any expression. Operators on either build [`Scalar`]s and fold
//! constants, so `self.block_m * 2` stays a plain number in the generated code.

use crate::ir::{BinOp, DType, Expr, VarId};
use std::ops;

/// A scalar variable or constant of a script. `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Val(pub(crate) ValRepr);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ValRepr {
    Var(VarId, DType),
    Const(i64, DType),
}

impl Val {
    pub(crate) fn var(id: VarId, dtype: DType) -> Val {
        Val(ValRepr::Var(id, dtype))
    }

    /// An `i32` constant.
    pub fn constant(v: i32) -> Val {
        Val(ValRepr::Const(v as i64, DType::I32))
    }

    /// The constant's value, when this is a constant.
    pub fn as_const(&self) -> Option<i64> {
        match self.0 {
            ValRepr::Const(v, _) => Some(v),
            ValRepr::Var(..) => None,
        }
    }

    /// The variable, when this is one.
    pub(crate) fn var_id(&self) -> Option<VarId> {
        match self.0 {
            ValRepr::Var(v, _) => Some(v),
            ValRepr::Const(..) => None,
        }
    }
}

/// A scalar expression of a script.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scalar(pub(crate) Expr);

impl Scalar {
    /// The IR expression.
    pub fn expr(&self) -> &Expr {
        &self.0
    }

    /// The value, when the expression is a compile-time constant.
    pub fn as_const(&self) -> Option<i64> {
        self.0.as_int()
    }
}

impl From<Val> for Scalar {
    fn from(v: Val) -> Scalar {
        Scalar(match v.0 {
            ValRepr::Var(id, t) => Expr::Var(id, t),
            ValRepr::Const(c, t) => Expr::Int(c, t),
        })
    }
}

impl From<&Val> for Scalar {
    fn from(v: &Val) -> Scalar {
        Scalar::from(*v)
    }
}

impl From<&Scalar> for Scalar {
    fn from(v: &Scalar) -> Scalar {
        v.clone()
    }
}

impl From<i32> for Scalar {
    fn from(v: i32) -> Scalar {
        Scalar(Expr::Int(v as i64, DType::I32))
    }
}

impl From<u32> for Scalar {
    fn from(v: u32) -> Scalar {
        Scalar(Expr::Int(v as i64, DType::U32))
    }
}

impl From<f32> for Scalar {
    fn from(v: f32) -> Scalar {
        Scalar(Expr::Float((v as f64).to_bits(), DType::F32))
    }
}

impl From<f64> for Scalar {
    /// An `f32` constant (Rust's float literals are `f64`; kernels compute in f32).
    fn from(v: f64) -> Scalar {
        Scalar(Expr::Float(v.to_bits(), DType::F32))
    }
}

impl Scalar {
    /// The value converted to `T`: integers to the nearest float, floats toward zero to
    /// integers, to 16-bit floats rounded to nearest even.
    pub fn cast<T: super::Element>(self) -> Scalar {
        if self.0.dtype() == T::DTYPE {
            return self;
        }
        Scalar(Expr::Cast(T::DTYPE, Box::new(self.0)))
    }
}

impl Val {
    /// The value converted to `T` (see [`Scalar::cast`]).
    pub fn cast<T: super::Element>(self) -> Scalar {
        Scalar::from(self).cast::<T>()
    }
}

/// A literal retyped to `t`, the type of the other operand: an integer literal beside a
/// float becomes that float, a float literal takes the other float's width.
fn retype(e: Expr, t: DType) -> Expr {
    match e {
        Expr::Int(v, _) if t.is_float() => Expr::Float((v as f64).to_bits(), t),
        Expr::Int(v, _) => Expr::Int(v, t),
        Expr::Float(bits, _) if t.is_float() => Expr::Float(bits, t),
        e => e,
    }
}

/// Builds `a op b`; a Rust literal on one side takes the other side's type.
fn bin(op: BinOp, a: Scalar, b: Scalar) -> Scalar {
    let (mut a, mut b) = (a.0, b.0);
    let literal = |e: &Expr| matches!(e, Expr::Int(..) | Expr::Float(..));
    if literal(&b) && !literal(&a) {
        b = retype(b, a.dtype());
    } else if literal(&a) && !literal(&b) {
        a = retype(a, b.dtype());
    }
    Scalar(Expr::binary(op, a, b))
}

macro_rules! binops {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<R: Into<Scalar>> ops::$tr<R> for Scalar {
            type Output = Scalar;
            fn $method(self, rhs: R) -> Scalar { bin(BinOp::$op, self, rhs.into()) }
        }
        impl<R: Into<Scalar>> ops::$tr<R> for &Scalar {
            type Output = Scalar;
            fn $method(self, rhs: R) -> Scalar { bin(BinOp::$op, self.clone(), rhs.into()) }
        }
        impl<R: Into<Scalar>> ops::$tr<R> for Val {
            type Output = Scalar;
            fn $method(self, rhs: R) -> Scalar { bin(BinOp::$op, self.into(), rhs.into()) }
        }
        impl ops::$tr<Scalar> for i32 {
            type Output = Scalar;
            fn $method(self, rhs: Scalar) -> Scalar { bin(BinOp::$op, self.into(), rhs) }
        }
        impl ops::$tr<Val> for i32 {
            type Output = Scalar;
            fn $method(self, rhs: Val) -> Scalar { bin(BinOp::$op, self.into(), rhs.into()) }
        }
        impl ops::$tr<Val> for u32 {
            type Output = Scalar;
            fn $method(self, rhs: Val) -> Scalar { bin(BinOp::$op, self.into(), rhs.into()) }
        }
        impl ops::$tr<Val> for f64 {
            type Output = Scalar;
            fn $method(self, rhs: Val) -> Scalar { bin(BinOp::$op, self.into(), rhs.into()) }
        }
        impl ops::$tr<Scalar> for f64 {
            type Output = Scalar;
            fn $method(self, rhs: Scalar) -> Scalar { bin(BinOp::$op, self.into(), rhs) }
        }
    )*};
}

binops!(
    Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem,
    BitAnd bitand BitAnd, BitOr bitor BitOr, BitXor bitxor BitXor, Shl shl Shl, Shr shr Shr
);

/// `-x`: `x * -1` for floats (an exact sign flip, `-0.0` included), `0 - x` for integers.
fn neg(x: Scalar) -> Scalar {
    let t = x.0.dtype();
    if t.is_float() {
        bin(BinOp::Mul, x, Scalar(Expr::Float((-1.0f64).to_bits(), t)))
    } else {
        bin(BinOp::Sub, Scalar(Expr::Int(0, t)), x)
    }
}

impl ops::Neg for Scalar {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        neg(self)
    }
}

impl ops::Neg for &Scalar {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        neg(self.clone())
    }
}

impl ops::Neg for Val {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        neg(self.into())
    }
}

/// A list of scalars: shapes of global views, offsets, grid sizes. An array of one kind
/// (`[om, on]`, `[64, 64]`), or a tuple that mixes variables and integer literals
/// (`(om, 0)`, `(m, 64, k)`), as Rust arrays cannot.
///
/// ```compile_fail,E0277
/// # use tilus::prelude::*;
/// # fn body(k: &mut Kernel, g: GlobalTensor<f32>) {
/// let t = k.load_global(&g, &[0, 0], [16, 64]); // a reference to offsets, not offsets
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of integer scalars (offsets, extents, grid sizes)",
    label = "expected `[a, b]` of one kind, or a tuple `(a, 0, ..)` mixing kinds",
    note = "an array takes one kind of element: `[om, on]` or `[64, 64]`; to mix variables, \
            `Const` values and integer literals write a tuple: `(om, 0)`, `(m, 64, k)` (rustc's \
            hint to write `[x; n]` repeats one value and is not what is meant)"
)]
pub trait Scalars {
    /// The expressions.
    fn into_exprs(self) -> Vec<Expr>;
}

macro_rules! tuple_scalars {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Into<Scalar>),+> Scalars for ($($name,)+) {
            fn into_exprs(self) -> Vec<Expr> {
                vec![$(self.$idx.into().0),+]
            }
        }
    };
}

impl Scalars for () {
    /// No scalars (`k.printf("done", ())`).
    fn into_exprs(self) -> Vec<Expr> {
        vec![]
    }
}

tuple_scalars!(A 0);
tuple_scalars!(A 0, B 1);
tuple_scalars!(A 0, B 1, C 2);
tuple_scalars!(A 0, B 1, C 2, D 3);
tuple_scalars!(A 0, B 1, C 2, D 3, E 4);

impl From<i32> for Val {
    /// An `i32` constant: `[om, 0.into()]` in an array of values.
    fn from(v: i32) -> Val {
        Val::constant(v)
    }
}

impl<T: Into<Scalar>, const N: usize> Scalars for [T; N] {
    fn into_exprs(self) -> Vec<Expr> {
        self.into_iter().map(|x| x.into().0).collect()
    }
}

impl<T: Into<Scalar>> Scalars for Vec<T> {
    fn into_exprs(self) -> Vec<Expr> {
        self.into_iter().map(|x| x.into().0).collect()
    }
}

/// A compile-time shape (an array of `i32`).
///
/// ```compile_fail,E0277
/// # use tilus::prelude::*;
/// # fn body(k: &mut Kernel, n: Val) {
/// let t = k.register_tensor::<f32>([n, 64], 0.0); // a tile's extents are known when traced
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tile shape",
    label = "expected compile-time `i32` extents: `[64, 128]` or a `Vec<i32>`",
    note = "a tile's extents are fixed when the script is traced; a runtime extent is covered \
            by tiles of a fixed size (`cdiv(n, 64)` blocks) whose tails the loads and stores \
            mask, or a `Const` argument read with `.value()`"
)]
pub trait Dims {
    /// The extents.
    fn into_dims(self) -> Vec<i32>;
}

impl<const N: usize> Dims for [i32; N] {
    fn into_dims(self) -> Vec<i32> {
        self.to_vec()
    }
}

impl Dims for Vec<i32> {
    fn into_dims(self) -> Vec<i32> {
        self
    }
}

/// `ceil(a / b)`, folded when both are constants.
pub fn cdiv(a: impl Into<Scalar>, b: impl Into<Scalar>) -> Scalar {
    let (a, b) = (a.into(), b.into());
    let b = match b.0 {
        Expr::Int(v, _) => Expr::Int(v, a.0.dtype()),
        e => e,
    };
    Scalar(Expr::cdiv(a.0, b))
}

/// Comparison and logical helpers (Rust's comparison operators cannot build expressions, and
/// `&&`, `||`, `!` cannot be overloaded). Each builds a boolean [`Scalar`], for conditions of
/// [`crate::lang::Kernel::if_`] and [`crate::lang::Kernel::while_`]: `i.lt(n).and(flag.ne_(0))`.
impl Scalar {
    /// `self < rhs`.
    pub fn lt(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Lt, self, rhs.into())
    }

    /// `self <= rhs`.
    pub fn le(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Le, self, rhs.into())
    }

    /// `self > rhs` (built as `rhs < self`).
    pub fn gt(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Lt, rhs.into(), self)
    }

    /// `self >= rhs` (built as `rhs <= self`).
    pub fn ge(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Le, rhs.into(), self)
    }

    /// `self == rhs`.
    pub fn eq_(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Eq, self, rhs.into())
    }

    /// `self != rhs`.
    pub fn ne_(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Ne, self, rhs.into())
    }

    /// Logical and (`self && rhs`; integers are true when nonzero).
    pub fn and(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::And, self, rhs.into())
    }

    /// Logical or (`self || rhs`; integers are true when nonzero).
    pub fn or(self, rhs: impl Into<Scalar>) -> Scalar {
        bin(BinOp::Or, self, rhs.into())
    }

    /// Logical not (`!self`, built as `self == 0`; integers are true when nonzero).
    pub fn not_(self) -> Scalar {
        let zero = Expr::Int(0, self.0.dtype());
        Scalar(Expr::binary(BinOp::Eq, self.0, zero))
    }
}

macro_rules! val_helpers {
    ($($(#[$doc:meta])* $name:ident),*) => {
        /// The comparison and logical helpers of [`Scalar`], on variables and constants:
        /// `counter.lt(n)`.
        impl Val {
            $($(#[$doc])* pub fn $name(self, rhs: impl Into<Scalar>) -> Scalar {
                Scalar::from(self).$name(rhs)
            })*

            /// Logical not (`!self`, built as `self == 0`).
            pub fn not_(self) -> Scalar {
                Scalar::from(self).not_()
            }
        }
    };
}

val_helpers!(
    /// `self < rhs`.
    lt,
    /// `self <= rhs`.
    le,
    /// `self > rhs`.
    gt,
    /// `self >= rhs`.
    ge,
    /// `self == rhs`.
    eq_,
    /// `self != rhs`.
    ne_,
    /// Logical and.
    and,
    /// Logical or.
    or
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_take_the_variable_type() {
        let phase = Val::var(VarId(3), DType::U32);
        let e = phase ^ 1;
        assert_eq!(e.0.dtype(), DType::U32);
        assert_eq!(
            e.0,
            Expr::binary(
                BinOp::BitXor,
                Expr::Var(VarId(3), DType::U32),
                Expr::Int(1, DType::U32)
            )
        );
    }

    #[test]
    fn offsets_mix_variables_and_literals() {
        let om = Val::var(VarId(0), DType::I32);
        let e = (om, 0).into_exprs();
        assert_eq!(
            e,
            vec![Expr::Var(VarId(0), DType::I32), Expr::Int(0, DType::I32)]
        );
        let f = [om, 0.into()].into_exprs();
        assert_eq!(e, f);
        assert_eq!((om, 64, om * 2).into_exprs().len(), 3);
    }

    #[test]
    fn comparisons_and_logic() {
        let i = Val::var(VarId(0), DType::I32);
        let e = i.gt(3);
        assert_eq!(e.0.dtype(), DType::Bool);
        let x = |v: i64, e: &Scalar| e.0.eval(&|_| Some(v));
        for v in [-1i64, 3, 4] {
            assert_eq!(x(v, &i.lt(4)), Some((v < 4) as i64));
            assert_eq!(x(v, &i.le(3)), Some((v <= 3) as i64));
            assert_eq!(x(v, &i.gt(3)), Some((v > 3) as i64));
            assert_eq!(x(v, &i.ge(4)), Some((v >= 4) as i64));
            assert_eq!(x(v, &i.eq_(3)), Some((v == 3) as i64));
            assert_eq!(x(v, &i.ne_(3)), Some((v != 3) as i64));
            assert_eq!(x(v, &i.gt(0).and(i.lt(4))), Some((v > 0 && v < 4) as i64));
            assert_eq!(x(v, &i.lt(0).or(i.eq_(4))), Some((v < 0 || v == 4) as i64));
            assert_eq!(x(v, &i.lt(4).not_()), Some((v >= 4) as i64));
        }
        assert_eq!(Scalar::from(2).gt(1).as_const(), Some(1));
    }

    #[test]
    fn constants_fold() {
        let e = cdiv(4096, 128) * 2;
        assert_eq!(e.as_const(), Some(64));
    }
}
