//! The program model: what a generated script is made of, apart from the operations
//! themselves (which live with their families in `ops/`).
//!
//! Operations name the handles they use (scalars, global views, shared and register tiles,
//! barrier arrays) by an index counted back from the most recent handle of that kind, modulo
//! the number created so far (see `replay::pick`), so that every program can be replayed,
//! including the invalid ones.

pub use super::ops::Op;

/// An element type.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Dt {
    F16,
    Bf16,
    F32,
    I32,
}

/// A binary operator on scalars.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Lt,
    Eq,
    Le,
    Gt,
    Ge,
    Ne,
    /// Logical and.
    LAnd,
    /// Logical or.
    LOr,
}

/// A scalar expression.
#[derive(Clone, Debug, Hash)]
pub enum Sc {
    /// An `i32` literal.
    Lit(i32),
    /// A `u32` literal.
    LitU(u32),
    /// Runtime `i32` argument 0 or 1.
    Runtime(u8),
    /// Compile-time constant argument 0 or 1.
    Const(u8),
    /// A scalar handle (`let_*`, `var_*`, a loop variable, a scalar argument); indices count
    /// back from the most recent handle.
    Val(usize),
    /// `blockIdx.x|y|z`.
    BlockIdx(u8),
    Bin(Bin, Box<Sc>, Box<Sc>),
    Cdiv(Box<Sc>, Box<Sc>),
    /// Logical not.
    Not(Box<Sc>),
    /// An `f32` literal (its bits, so that the model stays `Hash`).
    LitF(u32),
    /// Unary minus.
    Neg(Box<Sc>),
    /// `.cast::<f32>()` (`true`) or `.cast::<i32>()` (`false`).
    Cast(bool, Box<Sc>),
}

/// A tile handle (counting back from the most recent one), possibly seen through
/// `.transpose()`.
#[derive(Clone, Copy, Debug, Hash)]
pub struct T {
    pub idx: usize,
    pub transposed: bool,
}

/// The `idx`-th most recent tile, not transposed.
pub const fn plain(idx: usize) -> T {
    T {
        idx,
        transposed: false,
    }
}

/// Which barrier of an array.
#[derive(Clone, Debug, Hash)]
pub enum BarIx {
    /// `bars[i]` (past the end gives an out-of-range barrier).
    Index(usize),
    /// `bars.at(v)` with a scalar handle.
    At(usize),
    /// `bars.at(Val::constant(i))`.
    Lit(i32),
}

/// A barrier: an array (counting back from the most recent one) and an index into it.
#[derive(Clone, Debug, Hash)]
pub struct BarRef {
    pub arr: usize,
    pub ix: BarIx,
}

/// Barrier 0 of the most recent array.
pub const BAR0: BarRef = BarRef {
    arr: 0,
    ix: BarIx::Index(0),
};

/// A change to the traced program, for what the typed API cannot express.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Edit {
    /// Changes the element type of a register tile.
    Register(usize, Dt),
    /// Changes the element type of a shared tile.
    Shared(usize, Dt),
    /// Changes the element type of a global view.
    Global(usize, Dt),
}

/// A generated test case: the script's operations, the values passed for its `Const`
/// arguments, and edits of the traced program.
#[derive(Clone, Debug, Hash)]
pub struct Case {
    pub ops: Vec<Op>,
    pub consts: Vec<i64>,
    pub edits: Vec<Edit>,
}

/// `ops![a, b, ..]`: a list of operations of any families (each converted into an [`Op`]).
macro_rules! ops {
    ($($op:expr),* $(,)?) => {
        vec![$($crate::model::Op::from($op)),*]
    };
}
pub(crate) use ops;
