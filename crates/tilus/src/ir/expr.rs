//! Scalar expressions: arithmetic over constants, variables and the block index.

use super::DType;
use std::fmt;

/// Index of a scalar variable in [`crate::ir::Program::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// What a scalar variable is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    /// A runtime kernel argument: position in the script's argument list.
    Param(usize),
    /// An immutable value computed once (`let_i32`).
    Let,
    /// A mutable variable (`var_u32` + `assign`).
    Mutable,
    /// The induction variable of a `for_range`.
    LoopIndex,
    /// The index of the thread group a thread runs in, inside `thread_groups`.
    GroupIndex,
    /// A kernel parameter the host derives at launch from the runtime arguments: the packed
    /// multiplier and shift for dividing by this expression (see [`crate::ir::fast_divisor_bits`]).
    FastDivisor(Box<Expr>),
    /// The number of blocks the launch runs along x (`gridDim.x`): for a persistent grid, the
    /// work capped at the device's multiprocessors.
    LaunchedBlocks,
    /// A pointer to a global workspace the kernel owns (`global_tensor`): the host allocates
    /// it (zeroed) and passes it at launch, the same buffer launch after launch.
    Workspace(Box<Workspace>),
}

/// A kernel-lifetime global buffer ([`VarKind::Workspace`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Workspace {
    /// Elements it holds, over runtime arguments and constants.
    pub elems: Expr,
    /// Whether the kernel promises to leave it all zeros when it ends (`zeroed`), so that
    /// each launch finds it zeroed without a memset; otherwise its contents at a launch's
    /// start are whatever the last launch left.
    pub zeroed: bool,
    /// Where it was declared.
    pub loc: super::Loc,
}

impl VarKind {
    /// Whether the host passes the variable's value at launch (an argument or a value derived
    /// from the arguments): defined before the body, the same in every thread.
    pub fn is_parameter(&self) -> bool {
        matches!(
            self,
            VarKind::Param(_)
                | VarKind::FastDivisor(_)
                | VarKind::LaunchedBlocks
                | VarKind::Workspace(_)
        )
    }
}

/// A scalar variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarDecl {
    /// Name in printed IR and generated CUDA.
    pub name: String,
    /// Its type (pointers are [`DType::U64`] with [`VarDecl::pointee`] set).
    pub dtype: DType,
    /// Element type when the variable is a pointer argument.
    pub pointee: Option<DType>,
    /// What kind of variable it is.
    pub kind: VarKind,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// Integer division rounding toward zero, as in C.
    Div,
    /// Remainder with the sign of the dividend, as in C.
    Rem,
    /// `a & b`
    BitAnd,
    /// `a | b`
    BitOr,
    /// `a ^ b`
    BitXor,
    /// `a << b`
    Shl,
    /// `a >> b` (arithmetic for signed types)
    Shr,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// logical and
    And,
    /// logical or
    Or,
}

impl BinOp {
    /// The C spelling of the operator.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// Whether the result is a predicate rather than the operand type.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or
        )
    }

    /// Applies the operator to integers the way 32/64-bit C arithmetic would, given the type.
    pub fn apply(self, a: i64, b: i64, dtype: DType) -> Option<i64> {
        // 64-bit unsigned values are held as their bit patterns: divide, shift and compare
        // them as unsigned
        if dtype == DType::U64 {
            let (x, y) = (a as u64, b as u64);
            let unsigned = match self {
                BinOp::Div => Some(x.checked_div(y)? as i64),
                BinOp::Rem => Some(x.checked_rem(y)? as i64),
                BinOp::Shr => Some(x.checked_shr(u32::try_from(y).ok()?)? as i64),
                BinOp::Lt => Some((x < y) as i64),
                BinOp::Le => Some((x <= y) as i64),
                _ => None,
            };
            if unsigned.is_some() {
                return unsigned;
            }
        }
        let v = match self {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => a.checked_div(b)?,
            BinOp::Rem => a.checked_rem(b)?,
            BinOp::BitAnd => a & b,
            BinOp::BitOr => a | b,
            BinOp::BitXor => a ^ b,
            BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
            BinOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
            BinOp::Lt => (a < b) as i64,
            BinOp::Le => (a <= b) as i64,
            BinOp::Eq => (a == b) as i64,
            BinOp::Ne => (a != b) as i64,
            BinOp::And => (a != 0 && b != 0) as i64,
            BinOp::Or => (a != 0 || b != 0) as i64,
        };
        Some(wrap_to(
            v,
            if self.is_comparison() {
                DType::Bool
            } else {
                dtype
            },
        ))
    }

    /// [`BinOp::apply`] where the result is exact: `None` when signed arithmetic would
    /// overflow its type (undefined behaviour in C) as well as when `apply` has no result.
    /// Constants fold only this way, so that an overflow stays visible to the checks.
    pub fn apply_exact(self, a: i64, b: i64, dtype: DType) -> Option<i64> {
        let v = self.apply(a, b, dtype)?;
        if self.is_comparison() || !matches!(dtype, DType::I32 | DType::I64) {
            return Some(v);
        }
        let (a, b) = (a as i128, b as i128);
        let exact = match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
            _ => return Some(v),
        };
        (exact == v as i128).then_some(v)
    }
}

/// Truncates an integer to the range of `dtype`, as a C cast would.
pub fn wrap_to(v: i64, dtype: DType) -> i64 {
    match dtype {
        DType::I32 => v as i32 as i64,
        DType::U32 => v as u32 as i64,
        DType::Bool => (v != 0) as i64,
        // two's complement in `b` bits: shift the low bits to the top and back
        DType::Int(b) => (v << (64 - b as u32)) >> (64 - b as u32),
        DType::UInt(b) => v & ((1i64 << b) - 1),
        _ => v,
    }
}

/// A scalar expression. Plain data: printable, hashable, comparable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// An integer constant of the given type.
    Int(i64, DType),
    /// A floating-point constant, stored as the bits of an `f64`.
    Float(u64, DType),
    /// A variable.
    Var(VarId, DType),
    /// `blockIdx.x|y|z` (axis 0, 1, 2).
    BlockIdx(u8),
    /// A binary operation; the result has the type of the left operand (or bool).
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A conversion to another scalar type.
    Cast(DType, Box<Expr>),
}

impl Expr {
    /// An `i32` constant.
    pub fn i32(v: i64) -> Expr {
        Expr::Int(wrap_to(v, DType::I32), DType::I32)
    }

    /// The type of the expression's value.
    pub fn dtype(&self) -> DType {
        match self {
            Expr::Int(_, t) | Expr::Float(_, t) | Expr::Var(_, t) | Expr::Cast(t, _) => *t,
            Expr::BlockIdx(_) => DType::I32,
            Expr::Binary(op, a, _) => {
                if op.is_comparison() {
                    DType::Bool
                } else {
                    a.dtype()
                }
            }
        }
    }

    /// The value, when the expression is an integer constant.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v, _) => Some(*v),
            _ => None,
        }
    }

    /// Builds `a op b`, folding constants and giving untyped literals the other side's type.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        let dtype = a.dtype();
        match (&a, &b) {
            (Expr::Int(x, _), Expr::Int(y, _)) => match op.apply_exact(*x, *y, dtype) {
                Some(v) => Expr::Int(
                    v,
                    if op.is_comparison() {
                        DType::Bool
                    } else {
                        dtype
                    },
                ),
                None => Expr::Binary(op, Box::new(a), Box::new(b)),
            },
            (_, Expr::Int(0, _)) if matches!(op, BinOp::Add | BinOp::Sub | BinOp::BitXor) => a,
            (Expr::Int(0, _), _) if op == BinOp::Add => b,
            (_, Expr::Int(1, _)) if matches!(op, BinOp::Mul | BinOp::Div) => a,
            (Expr::Int(1, _), _) if op == BinOp::Mul => b,
            _ => Expr::Binary(op, Box::new(a), Box::new(b)),
        }
    }

    /// `ceil(a / b)` for non-negative integers.
    pub fn cdiv(a: Expr, b: Expr) -> Expr {
        let one = Expr::Int(1, b.dtype());
        let bm1 = Expr::binary(BinOp::Sub, b.clone(), one);
        Expr::binary(BinOp::Div, Expr::binary(BinOp::Add, a, bm1), b)
    }

    /// Evaluates an integer expression; `var` gives variable values (None: unknown).
    /// The block index is unknown here.
    pub fn eval(&self, var: &dyn Fn(VarId) -> Option<i64>) -> Option<i64> {
        match self {
            Expr::Int(v, _) => Some(*v),
            Expr::Float(..) | Expr::BlockIdx(_) => None,
            Expr::Var(id, t) => var(*id).map(|v| wrap_to(v, *t)),
            Expr::Binary(op, a, b) => op.apply(a.eval(var)?, b.eval(var)?, a.dtype()),
            Expr::Cast(t, x) => x.eval(var).map(|v| wrap_to(v, *t)),
        }
    }

    /// Every variable the expression reads, in order of appearance.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        match self {
            Expr::Var(id, _) => out.push(*id),
            Expr::Binary(_, a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Expr::Cast(_, x) => x.vars(out),
            _ => {}
        }
    }

    /// Whether the expression reads the block index.
    pub fn uses_block_idx(&self) -> bool {
        match self {
            Expr::BlockIdx(_) => true,
            Expr::Binary(_, a, b) => a.uses_block_idx() || b.uses_block_idx(),
            Expr::Cast(_, x) => x.uses_block_idx(),
            _ => false,
        }
    }

    /// The largest power of two known to divide the value (capped at 2^30), given the same
    /// fact for variables. Used to prove alignment of vector accesses at compile time.
    pub fn divisibility(&self, var: &dyn Fn(VarId) -> i64) -> i64 {
        const CAP: i64 = 1 << 30;
        let pow2 = |v: i64| -> i64 {
            if v == 0 {
                CAP
            } else {
                (v.unsigned_abs() & v.unsigned_abs().wrapping_neg()).min(CAP as u64) as i64
            }
        };
        match self {
            Expr::Int(v, _) => pow2(*v),
            Expr::Var(id, _) => var(*id),
            Expr::Binary(BinOp::Add | BinOp::Sub, a, b) => {
                a.divisibility(var).min(b.divisibility(var))
            }
            Expr::Binary(BinOp::Mul, a, b) => {
                (a.divisibility(var).saturating_mul(b.divisibility(var))).min(CAP)
            }
            Expr::Binary(BinOp::Shl, a, b) => match b.as_int() {
                Some(s) if (0..31).contains(&s) => (a.divisibility(var) << s).min(CAP),
                _ => 1,
            },
            // integer conversions keep the low 32 bits or more, which hold every power of two
            // up to the cap
            Expr::Cast(t, x) if t.is_int() && t.bits() >= 32 && x.dtype().is_int() => {
                x.divisibility(var)
            }
            _ => 1,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Variables print as `%id`; printers that know names use `ExprPrinter`.
        ExprPrinter {
            expr: self,
            names: &|id| format!("%{}", id.0),
        }
        .fmt(f)
    }
}

/// Prints an expression with variable names supplied by the caller.
pub struct ExprPrinter<'a> {
    /// The expression.
    pub expr: &'a Expr,
    /// Names of variables.
    pub names: &'a dyn Fn(VarId) -> String,
}

impl<'a> fmt::Display for ExprPrinter<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |e: &'a Expr| ExprPrinter {
            expr: e,
            names: self.names,
        };
        match self.expr {
            Expr::Int(v, DType::U32) => write!(f, "{v}u"),
            Expr::Int(v, DType::Bool) => write!(f, "{}", *v != 0),
            Expr::Int(v, _) => write!(f, "{v}"),
            Expr::Float(bits, _) => write!(f, "{:?}", f64::from_bits(*bits)),
            Expr::Var(id, _) => f.write_str(&(self.names)(*id)),
            Expr::BlockIdx(a) => write!(f, "blockIdx.{}", ["x", "y", "z"][*a as usize]),
            Expr::Binary(op, a, b) => write!(f, "({} {} {})", sub(a), op.symbol(), sub(b)),
            Expr::Cast(t, x) => write!(f, "{}({})", t.name(), sub(x)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_constants_and_keeps_types() {
        let e = Expr::binary(BinOp::Mul, Expr::i32(6), Expr::i32(7));
        assert_eq!(e, Expr::Int(42, DType::I32));
        let v = Expr::Var(VarId(0), DType::U32);
        let x = Expr::binary(BinOp::BitXor, v.clone(), Expr::Int(1, DType::U32));
        assert_eq!(x.dtype(), DType::U32);
        assert_eq!(x.eval(&|_| Some(3)), Some(2));
    }

    #[test]
    fn unsigned_64_bit_values_divide_shift_and_compare_as_unsigned() {
        let big = (0xf000_0000_0000_0010u64) as i64;
        let t = DType::U64;
        assert_eq!(BinOp::Shr.apply(big, 60, t), Some(0xf));
        assert_eq!(BinOp::Div.apply(big, 16, t), Some(0x0f00_0000_0000_0001));
        assert_eq!(BinOp::Lt.apply(1, big, t), Some(1));
        assert_eq!(BinOp::Shr.apply(big, 60, DType::I64), Some(-1));
    }

    #[test]
    fn cdiv_rounds_up() {
        for (a, b) in [(1000, 64), (1024, 64), (1, 128), (0, 8)] {
            let e = Expr::cdiv(Expr::Var(VarId(0), DType::I32), Expr::i32(b));
            assert_eq!(e.eval(&|_| Some(a)), Some((a + b - 1) / b));
        }
    }

    #[test]
    fn divisibility_of_products() {
        let bx = Expr::BlockIdx(0);
        let e = Expr::binary(BinOp::Mul, Expr::i32(128), bx);
        assert_eq!(e.divisibility(&|_| 1), 128);
        let s = Expr::binary(BinOp::Add, e, Expr::i32(8));
        assert_eq!(s.divisibility(&|_| 1), 8);
    }
}
