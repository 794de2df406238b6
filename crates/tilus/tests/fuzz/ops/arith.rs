//! Arithmetic: casts, elementwise expressions (`compute`, and `assign_tile` into an existing
//! tile: operators, `maximum`/`minimum`,
//! unary functions, `where_`, `mul_add`, comparisons, conversions, broadcasting of tiles and
//! scalars) and reductions (`sum`, `max`, `min`, `any`, `all`).
//!
//! An expression ([`Ex`]) is replayed as a `Tile<E>` for the element type `E` of the
//! `compute` (or comparison) around it: its tile leaves are register tiles of that type, or of
//! any type cast to it; boolean tiles (the results of `compute` of a condition, and of `any`
//! and `all`) are kept apart, in `Replay::masks`, for conditions. Wild expressions combine
//! anything (shapes that do not broadcast, float functions of integers, expressions without a
//! tile); [`snippet_arith`] builds blocks of arithmetic that are valid by construction, from
//! a model of the tiles it creates (their types and shapes).

use proptest::prelude::*;
use tilus::ir::DType;
use tilus::prelude::*;

use crate::model::{plain, Dt, Op, Sc, T};
use crate::replay::{by_dt, on, pick, El, Replay, R};
use crate::strategies::{dt, sc, t, Mode, Tame, Wild};

use super::control::Control;
use super::memory::{Init, Memory};

/// A number in an expression (a literal of the expression's type).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Num {
    Zero,
    One,
    Half,
    MinusTwo,
    Big,
    Nan,
    Inf,
}

impl Num {
    fn value(self) -> f64 {
        match self {
            Num::Zero => 0.0,
            Num::One => 1.0,
            Num::Half => 0.5,
            Num::MinusTwo => -2.0,
            Num::Big => 1e30,
            Num::Nan => f64::NAN,
            Num::Inf => f64::INFINITY,
        }
    }
}

/// A function of one operand.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Un {
    Neg,
    Abs,
    Square,
    Exp,
    Sqrt,
    Log,
    Tanh,
    TanhApprox,
    RecipApprox,
    Exp2Approx,
    Round,
}

impl Un {
    /// Whether it needs floating-point values.
    fn float_only(self) -> bool {
        !matches!(self, Un::Neg | Un::Abs | Un::Square)
    }
}

/// A function of two operands.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Bn {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
}

/// A comparison.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// An elementwise expression of the type `E` it is replayed for.
#[derive(Clone, Debug, Hash)]
pub enum Ex {
    /// A register tile of type `E`, counted back among the tiles of that type (a literal 1
    /// when there is none).
    Tile(T),
    /// A register tile of any type, counted back among all tiles, cast to `E`.
    Cast(T),
    /// A literal.
    Lit(Num),
    /// A scalar of the script, converted to `E`.
    Scalar(Sc),
    Un(Un, Box<Ex>),
    Bin(Bn, Box<Ex>, Box<Ex>),
    /// `where_(cond, a, b)`.
    Where(Box<Cond>, Box<Ex>, Box<Ex>),
    /// `a.mul_add(b, c)`.
    MulAdd(Box<Ex>, Box<Ex>, Box<Ex>),
    /// The expression evaluated in another type, then cast to `E`.
    In(Dt, Box<Ex>),
    /// `k.arange(shape, dim)`, cast to `E`.
    Index(Vec<i32>, usize),
    /// `rand` (0), `randn` (1) or `randint` (2) at the offsets of an `i32` expression, cast to
    /// `E`.
    Rand(u8, Box<Ex>),
    /// `view::<E>()` of an expression of the type of `E`'s width that is not `E` (i32 for f32,
    /// f32 for i32, bf16 for f16, f16 for bf16).
    View(Box<Ex>),
}

/// The type of the same width a view of type `dt` reads (see [`Ex::View`]).
fn view_partner(dt: Dt) -> Dt {
    match dt {
        Dt::F32 => Dt::I32,
        Dt::I32 => Dt::F32,
        Dt::F16 => Dt::Bf16,
        Dt::Bf16 => Dt::F16,
    }
}

/// A boolean expression.
#[derive(Clone, Debug, Hash)]
pub enum Cond {
    /// `a op b`, both of type `Dt`.
    Cmp(Cmp, Dt, Ex, Ex),
    /// A boolean tile of `Replay::masks`, counted back (a literal `true` when there is none).
    Mask(usize),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// A reduction of a numeric tile.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Red {
    Sum,
    Max,
    Min,
}

/// A reduction of a condition.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Logic {
    Any,
    All,
}

#[derive(Clone, Debug, Hash)]
pub enum Arith {
    /// `cast::<dt>(tile)`.
    Cast(T, Dt),
    /// `compute::<dt>(expr)`: a new register tile.
    Compute(Dt, Ex),
    /// `assign_tile(tile, expr)`: the expression written into an existing tile (of its type).
    Assign(T, Ex),
    /// `compute(cond)`: a new boolean tile.
    Mask(Cond),
    /// `sum`/`max`/`min(tile, dim, keepdim)` of a tile of any type.
    Reduce(Red, T, usize, bool),
    /// `any`/`all(cond, dim, keepdim)`: a new boolean tile.
    ReduceMask(Logic, Cond, usize, bool),
    /// `cumsum` (0), `cumprod` (1), `cummax` (2) or `cummin` (3) of a tile along `dim`,
    /// exclusive or not.
    Scan(u8, T, usize, bool),
}

fn num(m: Mode) -> BoxedStrategy<Num> {
    let tame = vec![Num::Zero, Num::One, Num::Half, Num::MinusTwo];
    match m {
        Tame => prop::sample::select(tame).boxed(),
        Wild => prop_oneof![
            4 => prop::sample::select(tame),
            1 => prop::sample::select(vec![Num::Big, Num::Nan, Num::Inf]),
        ]
        .boxed(),
    }
}

fn un() -> impl Strategy<Value = Un> {
    prop::sample::select(vec![
        Un::Neg,
        Un::Abs,
        Un::Square,
        Un::Exp,
        Un::Sqrt,
        Un::Log,
        Un::Tanh,
        Un::TanhApprox,
        Un::RecipApprox,
        Un::Exp2Approx,
        Un::Round,
    ])
}

fn bn() -> impl Strategy<Value = Bn> {
    prop::sample::select(vec![Bn::Add, Bn::Sub, Bn::Mul, Bn::Div, Bn::Max, Bn::Min])
}

fn cmp() -> impl Strategy<Value = Cmp> {
    prop::sample::select(vec![Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne])
}

fn red() -> impl Strategy<Value = Red> {
    prop::sample::select(vec![Red::Sum, Red::Max, Red::Min])
}

fn logic() -> impl Strategy<Value = Logic> {
    prop::sample::select(vec![Logic::Any, Logic::All])
}

/// A reduced dimension: of a 2-D tile in tame mode, past the rank too in wild mode.
fn dim(m: Mode) -> impl Strategy<Value = usize> {
    match m {
        Tame => 0usize..2,
        Wild => 0usize..4,
    }
}

/// A condition over expressions drawn from `ex`.
fn cond_of(m: Mode, ex: BoxedStrategy<Ex>) -> BoxedStrategy<Cond> {
    let compare = (cmp(), dt(m), ex.clone(), ex)
        .prop_map(|(o, d, a, b)| Cond::Cmp(o, d, a, b))
        .boxed();
    let leaf = prop_oneof![3 => compare, 1 => (0usize..4).prop_map(Cond::Mask)];
    leaf.prop_recursive(1, 4, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Cond::Not(Box::new(a))),
        ]
    })
    .boxed()
}

/// An expression: tile leaves mostly, nested a few levels.
pub fn ex(m: Mode) -> BoxedStrategy<Ex> {
    let leaf = prop_oneof![
        5 => t(m).prop_map(Ex::Tile),
        1 => t(m).prop_map(Ex::Cast),
        2 => num(m).prop_map(Ex::Lit),
        1 => sc(m).prop_map(Ex::Scalar),
        1 => (prop::collection::vec(prop::sample::select(vec![1, 2, 8, 32, 64]), 1..=3), 0..4usize)
            .prop_map(|(s, d)| Ex::Index(s, d)),
    ];
    let (depth, size) = match m {
        Tame => (2, 6),
        Wild => (3, 12),
    };
    leaf.prop_recursive(depth, size, 2, move |inner| {
        let simple = inner
            .clone()
            .prop_map(|e| Ex::Un(Un::Abs, Box::new(e)))
            .boxed();
        prop_oneof![
            2 => (un(), inner.clone()).prop_map(|(o, a)| Ex::Un(o, Box::new(a))),
            4 => (bn(), inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| Ex::Bin(o, Box::new(a), Box::new(b))),
            1 => (cond_of(m, simple), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| Ex::Where(Box::new(c), Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| Ex::MulAdd(Box::new(a), Box::new(b), Box::new(c))),
            1 => (dt(m), inner.clone()).prop_map(|(d, a)| Ex::In(d, Box::new(a))),
            1 => (0..3u8, inner.clone()).prop_map(|(r, a)| Ex::Rand(r, Box::new(a))),
            1 => inner.prop_map(|a| Ex::View(Box::new(a))),
        ]
    })
    .boxed()
}

impl Arith {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![
            (
                2,
                (t(m), dt(m))
                    .prop_map(|(r, d)| Arith::Cast(r, d).into())
                    .boxed(),
            ),
            (
                4,
                (dt(m), ex(m))
                    .prop_map(|(d, e)| Arith::Compute(d, e).into())
                    .boxed(),
            ),
            (
                2,
                (t(m), ex(m))
                    .prop_map(|(t, e)| Arith::Assign(t, e).into())
                    .boxed(),
            ),
            (
                1,
                cond_of(m, ex(m))
                    .prop_map(|c| Arith::Mask(c).into())
                    .boxed(),
            ),
            (
                3,
                (red(), t(m), dim(m), prop::bool::ANY)
                    .prop_map(|(o, r, d, k)| Arith::Reduce(o, r, d, k).into())
                    .boxed(),
            ),
            (
                1,
                (logic(), cond_of(m, ex(m)), dim(m), prop::bool::ANY)
                    .prop_map(|(o, c, d, k)| Arith::ReduceMask(o, c, d, k).into())
                    .boxed(),
            ),
            (
                1,
                (0..4u8, t(m), dim(m), prop::bool::ANY)
                    .prop_map(|(o, r, d, x)| Arith::Scan(o, r, d, x).into())
                    .boxed(),
            ),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Arith::Cast(t, dt) => {
                if let Some(t) = r.reg(*t) {
                    let out = on!(t, R, |x: E| by_dt!(dt, |U| U::r(k.cast::<U>(&x))));
                    r.regs.push(out);
                }
            }
            Arith::Compute(dt, e) => {
                let out = by_dt!(dt, |E| {
                    let x = tile::<E>(r, k, e);
                    E::r(k.compute(x))
                });
                r.regs.push(out);
            }
            Arith::Assign(t, e) => {
                if let Some(t) = r.reg(*t) {
                    on!(t, R, |x: E| {
                        let v = tile::<E>(r, k, e);
                        k.assign_tile(&x, v)
                    });
                }
            }
            Arith::Mask(c) => {
                let c = cond(r, k, c);
                let out = k.compute(c);
                r.masks.push(out);
            }
            Arith::Reduce(op, t, d, keep) => {
                if let Some(t) = r.reg(*t) {
                    let out = on!(t, R, |x: E| E::r(match op {
                        Red::Sum => k.sum(x, *d, *keep),
                        Red::Max => k.max(x, *d, *keep),
                        Red::Min => k.min(x, *d, *keep),
                    }));
                    r.regs.push(out);
                }
            }
            Arith::Scan(which, t, d, excl) => {
                if let Some(t) = r.reg(*t) {
                    let out = on!(t, R, |x: E| E::r(match which {
                        0 => k.cumsum(x, *d, *excl),
                        1 => k.cumprod(x, *d, *excl),
                        2 => k.cummax(x, *d, *excl),
                        _ => k.cummin(x, *d, *excl),
                    }));
                    r.regs.push(out);
                }
            }
            Arith::ReduceMask(op, c, d, keep) => {
                let c = cond(r, k, c);
                let out = match op {
                    Logic::Any => k.any(c, *d, *keep),
                    Logic::All => k.all(c, *d, *keep),
                };
                r.masks.push(out);
            }
        }
    }
}

/// The expression `e` as a tile expression of type `E`.
fn tile<E: El>(r: &Replay, k: &mut Kernel, e: &Ex) -> Tile<E> {
    let one = || IntoTile::<E>::into_tile(1.0);
    match e {
        Ex::Tile(t) => r.reg_of::<E>(*t).map_or_else(one, |x| x.into_tile()),
        Ex::Cast(t) => match r.reg(*t) {
            Some(x) => on!(x, R, |x: U| x.cast::<E>()),
            None => one(),
        },
        Ex::Lit(n) => n.value().into_tile(),
        Ex::Scalar(s) => r.scalar(s).into_tile(),
        Ex::Un(op, a) => {
            let a = tile::<E>(r, k, a);
            match op {
                Un::Neg => -a,
                Un::Abs => a.abs(),
                Un::Square => a.square(),
                Un::Exp => a.exp(),
                Un::Sqrt => a.sqrt(),
                Un::Log => a.log(),
                Un::Tanh => a.tanh(),
                Un::TanhApprox => a.tanh_approx(),
                Un::RecipApprox => a.recip_approx(),
                Un::Exp2Approx => a.exp2_approx(),
                Un::Round => a.round(),
            }
        }
        Ex::Bin(op, a, b) => {
            let (a, b) = (tile::<E>(r, k, a), tile::<E>(r, k, b));
            match op {
                Bn::Add => a + b,
                Bn::Sub => a - b,
                Bn::Mul => a * b,
                Bn::Div => a / b,
                Bn::Max => a.maximum(b),
                Bn::Min => a.minimum(b),
            }
        }
        Ex::Where(c, a, b) => {
            let c = cond(r, k, c);
            let (a, b) = (tile::<E>(r, k, a), tile::<E>(r, k, b));
            where_(c, a, b)
        }
        Ex::MulAdd(a, b, c) => {
            let (a, b) = (tile::<E>(r, k, a), tile::<E>(r, k, b));
            a.mul_add(b, tile::<E>(r, k, c))
        }
        Ex::In(dt, a) => by_dt!(dt, |U| tile::<U>(r, k, a).cast::<E>()),
        Ex::Index(shape, dim) => k.arange(shape.clone(), *dim).cast::<E>(),
        Ex::View(a) => match E::DTYPE {
            DType::F32 => tile::<i32>(r, k, a).view::<E>(),
            DType::I32 | DType::U32 => tile::<f32>(r, k, a).view::<E>(),
            DType::F16 => tile::<bf16>(r, k, a).view::<E>(),
            DType::BF16 => tile::<f16>(r, k, a).view::<E>(),
            _ => tile::<E>(r, k, a),
        },
        Ex::Rand(which, a) => {
            let offsets = tile::<i32>(r, k, a);
            match which {
                0 => rand(7, offsets).cast::<E>(),
                1 => randn(7, offsets).cast::<E>(),
                _ => randint(7, offsets).cast::<E>(),
            }
        }
    }
}

/// The condition `c` as a boolean tile expression.
fn cond(r: &Replay, k: &mut Kernel, c: &Cond) -> Tile<bool> {
    match c {
        Cond::Cmp(op, dt, a, b) => by_dt!(dt, |U| {
            let (a, b) = (tile::<U>(r, k, a), tile::<U>(r, k, b));
            match op {
                Cmp::Lt => a.lt(b),
                Cmp::Le => a.le(b),
                Cmp::Gt => a.gt(b),
                Cmp::Ge => a.ge(b),
                Cmp::Eq => a.eq_(b),
                Cmp::Ne => a.ne_(b),
            }
        }),
        Cond::Mask(i) => {
            pick(&r.masks, *i).map_or_else(|| IntoTile::<bool>::into_tile(1.0), |m| m.into_tile())
        }
        Cond::And(a, b) => {
            let a = cond(r, k, a);
            a.and(cond(r, k, b))
        }
        Cond::Or(a, b) => {
            let a = cond(r, k, a);
            a.or(cond(r, k, b))
        }
        Cond::Not(a) => !cond(r, k, a),
    }
}

// ------------------------------------------------------------------------------------------
// The typed model: arithmetic that is valid by construction.
// ------------------------------------------------------------------------------------------

/// The tiles a snippet has created so far, in order: their element types and shapes, and the
/// boolean tiles' shapes; from them, the handles (counted back from the most recent) that
/// name each one in an operation.
#[derive(Default)]
struct Model {
    tiles: Vec<(Dt, Vec<i32>)>,
    masks: Vec<Vec<i32>>,
}

impl Model {
    /// Tile `j` (in creation order) as `Replay::reg` finds it: among all tiles.
    fn any(&self, j: usize) -> T {
        plain(self.tiles.len() - 1 - j)
    }

    /// Tile `j` as `Replay::reg_of` finds it: among the tiles of its type.
    fn typed(&self, j: usize) -> T {
        let d = self.tiles[j].0;
        plain(self.tiles[j + 1..].iter().filter(|t| t.0 == d).count())
    }

    /// Boolean tile `j` as `Replay::masks` is searched.
    fn mask(&self, j: usize) -> usize {
        self.masks.len() - 1 - j
    }

    fn push(&mut self, dt: Dt, shape: Vec<i32>) -> usize {
        self.tiles.push((dt, shape));
        self.tiles.len() - 1
    }
}

/// Whether `k.cast` converts between the two types (a conversion inside an expression
/// converts between any two).
fn cast_supported(from: Dt, to: Dt) -> bool {
    match (from, to) {
        (a, b) if a == b => true,
        (Dt::F32, _) => true,
        (Dt::F16 | Dt::Bf16, Dt::F32) => true,
        _ => false,
    }
}

/// The shape tiles of shapes `a` and `b` broadcast to (NumPy's way).
fn broadcast(a: &[i32], b: &[i32]) -> Vec<i32> {
    let n = a.len().max(b.len());
    let at = |s: &[i32], d: usize| {
        if d < n - s.len() {
            1
        } else {
            s[d - (n - s.len())]
        }
    };
    (0..n).map(|d| at(a, d).max(at(b, d))).collect()
}

/// Binds a generated expression to the model's tiles.
struct Binder<'a> {
    m: &'a Model,
    /// The tiles leaves may read (creation indices).
    pool: &'a [usize],
    /// The boolean tiles conditions may read (creation indices).
    masks: &'a [usize],
    /// The broadcast shape of the leaves bound so far (`None`: no tile yet).
    shape: Option<Vec<i32>>,
}

impl Binder<'_> {
    fn read(&mut self, shape: &[i32]) {
        self.shape = Some(match &self.shape {
            None => shape.to_vec(),
            Some(s) => broadcast(s, shape),
        });
    }

    /// Binds the leaves of an expression of type `dt`: `Tile(slot)` becomes tile
    /// `slot % n` of the pool (its own type's handle when the types agree, a cast of it
    /// otherwise); scalars become literals (the fuzzer's scalars may be anything); functions
    /// integers do not have become `abs`.
    fn ex(&mut self, e: &Ex, dt: Dt) -> Ex {
        match e {
            Ex::Tile(t) | Ex::Cast(t) => {
                let j = self.pool[t.idx % self.pool.len()];
                let (d, shape) = self.m.tiles[j].clone();
                self.read(&shape);
                if d == dt {
                    Ex::Tile(self.m.typed(j))
                } else {
                    Ex::Cast(self.m.any(j))
                }
            }
            Ex::Lit(n) => Ex::Lit(*n),
            Ex::Scalar(_) => Ex::Lit(Num::Half),
            Ex::Un(op, a) if dt == Dt::I32 && op.float_only() => {
                Ex::Un(Un::Abs, Box::new(self.ex(a, dt)))
            }
            Ex::Un(op, a) => Ex::Un(*op, Box::new(self.ex(a, dt))),
            Ex::Bin(op, x, y) => {
                let x = self.ex(x, dt);
                Ex::Bin(*op, Box::new(x), Box::new(self.ex(y, dt)))
            }
            Ex::Where(c, x, y) => {
                let c = self.cond(c);
                let x = self.ex(x, dt);
                Ex::Where(Box::new(c), Box::new(x), Box::new(self.ex(y, dt)))
            }
            Ex::MulAdd(x, y, z) => {
                let x = self.ex(x, dt);
                let y = self.ex(y, dt);
                Ex::MulAdd(Box::new(x), Box::new(y), Box::new(self.ex(z, dt)))
            }
            Ex::In(d, a) => Ex::In(*d, Box::new(self.ex(a, *d))),
            Ex::Rand(which, a) => Ex::Rand(*which, Box::new(self.ex(a, Dt::I32))),
            Ex::View(a) => Ex::View(Box::new(self.ex(a, view_partner(dt)))),
            Ex::Index(_, dim) => {
                let (_, shape) = self.m.tiles[self.pool[0]].clone();
                self.read(&shape);
                let dim = dim % shape.len();
                Ex::Index(shape, dim)
            }
        }
    }

    /// Binds a condition: its comparisons as expressions, `Mask(slot)` to the pool's
    /// boolean tiles (a comparison with zero when there is none).
    fn cond(&mut self, c: &Cond) -> Cond {
        match c {
            Cond::Cmp(op, d, x, y) => {
                let x = self.ex(x, *d);
                Cond::Cmp(*op, *d, x, self.ex(y, *d))
            }
            Cond::Mask(i) if self.masks.is_empty() => {
                let d = self.m.tiles[self.pool[0]].0;
                let x = self.ex(&Ex::Tile(plain(*i)), d);
                Cond::Cmp(Cmp::Gt, d, x, Ex::Lit(Num::Zero))
            }
            Cond::Mask(i) => {
                let j = self.masks[i % self.masks.len()];
                let shape = self.m.masks[j].clone();
                self.read(&shape);
                Cond::Mask(self.m.mask(j))
            }
            Cond::And(x, y) => {
                let x = self.cond(x);
                Cond::And(Box::new(x), Box::new(self.cond(y)))
            }
            Cond::Or(x, y) => {
                let x = self.cond(x);
                Cond::Or(Box::new(x), Box::new(self.cond(y)))
            }
            Cond::Not(x) => Cond::Not(Box::new(self.cond(x))),
        }
    }
}

/// The shape of a reduction's result (`k.sum` and friends).
fn reduced(shape: &[i32], dim: usize, keep: bool) -> Vec<i32> {
    let mut s = shape.to_vec();
    if keep {
        s[dim] = 1;
    } else {
        s.remove(dim);
    }
    if s.is_empty() {
        s.push(1);
    }
    s
}

/// The writable pointer argument of each element type (see `replay::Args`).
fn out_ptr(d: Dt) -> usize {
    match d {
        Dt::F16 => 1,
        Dt::Bf16 => 3,
        Dt::F32 => 5,
        Dt::I32 => 7,
    }
}

/// What a snippet does, drawn before the model binds it.
#[derive(Clone, Debug)]
struct Plan {
    rows: i32,
    cols: i32,
    dt: Dt,
    inits: (Init, Init),
    second: bool,
    row_red: Red,
    col_red: Red,
    col_keep: bool,
    cast_to: Option<Dt>,
    mask: Option<(Cmp, usize, usize)>,
    row_mask: Option<Logic>,
    out: Dt,
    expr: Ex,
    then_reduce: Option<(Red, usize, bool)>,
    store: bool,
}

fn plan() -> impl Strategy<Value = Plan> {
    let init = || prop::sample::select(vec![Init::Zero, Init::One, Init::MinusHalf]);
    let base = prop_oneof![3 => Just(Dt::F32), 2 => Just(Dt::F16), 1 => Just(Dt::Bf16), 1 => Just(Dt::I32)];
    (
        (
            prop::sample::select(vec![16, 32]),
            prop::sample::select(vec![16, 32, 64]),
            base,
            (init(), init()),
            prop::bool::ANY,
            red(),
            red(),
            prop::bool::ANY,
        ),
        (
            prop::option::of(dt(Tame)),
            prop::option::of((cmp(), 0usize..8, 0usize..8)),
            prop::option::of(logic()),
            prop::option::weighted(0.3, dt(Wild)),
            ex(Tame),
            prop::option::of((red(), 0usize..2, prop::bool::ANY)),
            prop::bool::ANY,
        ),
    )
        .prop_map(
            |(
                (rows, cols, dt, inits, second, row_red, col_red, col_keep),
                (cast_to, mask, row_mask, out, expr, then_reduce, store),
            )| Plan {
                rows,
                cols,
                dt,
                inits,
                second,
                row_red,
                col_red,
                col_keep,
                cast_to,
                mask,
                row_mask,
                out: out.unwrap_or(dt),
                expr,
                then_reduce,
                store,
            },
        )
}

/// A block of arithmetic on a `[rows, cols]` tile `x` (and maybe a second one, `y`), valid by
/// construction: its row and column reductions (`[rows, 1]`, and `[1, cols]` or `[cols]`), a
/// cast copy, a boolean mask and its row-wise `any`/`all`, then one `compute` of a random
/// expression over them, with literals, which broadcasts them back to the tile's shape,
/// maybe reduced again and stored.
pub fn snippet_arith() -> BoxedStrategy<Vec<Op>> {
    plan().prop_map(|p| arith_ops(&p)).boxed()
}

fn arith_ops(p: &Plan) -> Vec<Op> {
    let (rows, cols, dt) = (p.rows, p.cols, p.dt);
    let mut m = Model::default();
    let mut ops: Vec<Op> = vec![Memory::Register(dt, vec![rows, cols], p.inits.0).into()];
    let x = m.push(dt, vec![rows, cols]);
    let mut pool = vec![x];
    if p.second {
        ops.push(Memory::Register(dt, vec![rows, cols], p.inits.1).into());
        pool.push(m.push(dt, vec![rows, cols]));
    }
    ops.push(Arith::Reduce(p.row_red, m.any(x), 1, true).into());
    pool.push(m.push(dt, vec![rows, 1]));
    ops.push(Arith::Reduce(p.col_red, m.any(x), 0, p.col_keep).into());
    pool.push(m.push(dt, reduced(&[rows, cols], 0, p.col_keep)));
    if let Some(to) = p.cast_to.filter(|&to| cast_supported(dt, to)) {
        ops.push(Arith::Cast(m.any(x), to).into());
        pool.push(m.push(to, vec![rows, cols]));
    }
    let mut masks = vec![];
    if let Some((op, a, b)) = p.mask {
        let mut bd = Binder {
            m: &m,
            pool: &pool,
            masks: &[],
            shape: None,
        };
        let (a, b) = (Ex::Tile(plain(a)), Ex::Tile(plain(b)));
        let c = Cond::Cmp(op, dt, bd.ex(&a, dt), bd.ex(&b, dt));
        let shape = bd.shape.unwrap_or_else(|| vec![rows, cols]);
        ops.push(Arith::Mask(c).into());
        m.masks.push(shape.clone());
        masks.push(m.masks.len() - 1);
        if let Some(l) = p.row_mask {
            let d = shape.len() - 1;
            ops.push(Arith::ReduceMask(l, Cond::Mask(m.mask(0)), d, true).into());
            m.masks.push(reduced(&shape, d, true));
            masks.push(m.masks.len() - 1);
        }
    }
    let mut bd = Binder {
        m: &m,
        pool: &pool,
        masks: &masks,
        shape: None,
    };
    let mut expr = bd.ex(&p.expr, p.out);
    if bd.shape.is_none() {
        // `compute` of scalars alone has no shape: add the tile
        let t = bd.ex(&Ex::Tile(plain(0)), p.out);
        expr = Ex::Bin(Bn::Add, Box::new(t), Box::new(expr));
    }
    let zshape = bd.shape.clone().unwrap_or_else(|| vec![rows, cols]);
    ops.push(Arith::Compute(p.out, expr).into());
    let mut last = m.push(p.out, zshape.clone());
    // the result updated in place: `last <- last + 1`
    let bumped = Ex::Bin(
        Bn::Add,
        Box::new(Ex::Tile(plain(0))),
        Box::new(Ex::Lit(Num::One)),
    );
    ops.push(Arith::Assign(plain(0), bumped).into());
    if let Some((op, d, keep)) = p.then_reduce {
        let d = d % zshape.len();
        ops.push(Arith::Reduce(op, m.any(last), d, keep).into());
        last = m.push(p.out, reduced(&zshape, d, keep));
    }
    if p.store {
        // the result at the origin of a view as large as the constants say
        let rank = m.tiles[last].1.len();
        let view = [Sc::Const(0), Sc::Const(1)];
        ops.push(Memory::GlobalView(out_ptr(p.out), view[..rank].to_vec()).into());
        ops.push(Memory::StoreGlobal(0, m.typed(last), vec![Sc::Lit(0); rank]).into());
    }
    ops
}

/// A warp count and one arithmetic snippet: a script the verifier must accept.
pub fn valid_arith_case() -> BoxedStrategy<Vec<Op>> {
    (prop::sample::select(vec![1u32, 4, 8]), snippet_arith())
        .prop_map(|(w, body)| {
            let mut ops: Vec<Op> = vec![Control::Warps(w).into()];
            ops.extend(body);
            ops
        })
        .boxed()
}
