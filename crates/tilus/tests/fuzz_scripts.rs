//! Random small scripts never panic the library: they trace, check, plan and emit CUDA, or they
//! fail with an error.
//!
//! A program is a list of [`Op`]s, one per builder call (loops and thread groups hold nested
//! lists). [`Interp`] replays it inside the body of the script [`Fuzz`]: every handle it
//! creates (scalars, global views, shared and register tiles, barrier arrays) goes into a
//! vector, and operations name handles by an index counted back from the most recent one,
//! modulo the number created so far. So every generated program can be replayed, including
//! the invalid ones: tiles used after `free_shared` or outside the group they belong to, loop
//! variables used after their loop, transposed views of 1-D tiles, products of mismatched
//! shapes and element types, barrier indices past the end, TMA copies between tiles of
//! different ranks, zero, negative and huge extents, and so on.
//!
//! Generic builder methods are instantiated at run time from the handles' element types
//! (f16, bf16, f32, i32). The few combinations that the typed API rules out (e.g. the two
//! operands of a `dot` with different element types, a view of another type than its pointer)
//! are reached by an [`Edit`] of the traced program, as `tests/verifier.rs` does.
//!
//! Cases are *wild* (anything anywhere) or *tame* (a plausible kernel built from snippets, with
//! one or two wild operations inserted), so that many get through the verifier to layout
//! inference, planning and emission; see the strategies.
//!
//! For each program: `tilus::trace` (with random values for the script's `Const` arguments,
//! sometimes too few or too many), then `compile_program`, then `emit_cuda`. Nothing may
//! panic; a panic fails the property with its message and location and the program, shrunk by
//! proptest and then by [`minimize`]. NVRTC and the GPU are never used.
//!
//! `TILUS_FUZZ_CASES=100000` runs more cases; `TILUS_FUZZ_BACKTRACE=1` adds the panic's
//! backtrace to the report; the ignored `coverage_report` test shows how far programs get.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use tilus::ir::{DType, Program};
use tilus::lang::{Element, WgmmaOperand};
use tilus::prelude::*;

// ------------------------------------------------------------------------------------------
// Programs.
// ------------------------------------------------------------------------------------------

/// An element type.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Dt {
    F16,
    Bf16,
    F32,
    I32,
}

/// A binary operator on scalars.
#[derive(Clone, Copy, Debug, Hash)]
enum Bin {
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
}

/// A scalar expression.
#[derive(Clone, Debug, Hash)]
enum Sc {
    /// An `i32` literal.
    Lit(i32),
    /// A `u32` literal.
    LitU(u32),
    /// Runtime `i32` argument 0 or 1.
    Runtime(u8),
    /// Compile-time constant argument 0 or 1.
    Const(u8),
    /// A scalar handle (`let_*`, `var_*`, a loop variable, a scalar argument); indices count
    /// back from the most recent handle (see [`pick`]).
    Val(usize),
    /// `blockIdx.x|y|z`.
    BlockIdx(u8),
    Bin(Bin, Box<Sc>, Box<Sc>),
    Cdiv(Box<Sc>, Box<Sc>),
}

/// A tile handle (counting back from the most recent one), possibly seen through
/// `.transpose()`.
#[derive(Clone, Copy, Debug, Hash)]
struct T {
    idx: usize,
    transposed: bool,
}

/// Which barrier of an array.
#[derive(Clone, Debug, Hash)]
enum BarIx {
    /// `bars[i]` (past the end gives an out-of-range barrier).
    Index(usize),
    /// `bars.at(v)` with a scalar handle.
    At(usize),
    /// `bars.at(Val::constant(i))`.
    Lit(i32),
}

/// A barrier: an array (counting back from the most recent one) and an index into it.
#[derive(Clone, Debug, Hash)]
struct BarRef {
    arr: usize,
    ix: BarIx,
}

/// The transaction bytes of `arrive_and_expect_tx`.
#[derive(Clone, Debug, Hash)]
enum Bytes {
    Scalar(Sc),
    /// The sum of the `nbytes()` of these shared tiles.
    Nbytes(Vec<usize>),
}

/// The initial value of a register tile.
#[derive(Clone, Copy, Debug, Hash)]
enum Init {
    None,
    Zero,
    One,
    MinusHalf,
    Nan,
    Inf,
    Huge,
}

impl Init {
    fn value(self) -> Option<f64> {
        match self {
            Init::None => None,
            Init::Zero => Some(0.0),
            Init::One => Some(1.0),
            Init::MinusHalf => Some(-0.5),
            Init::Nan => Some(f64::NAN),
            Init::Inf => Some(f64::INFINITY),
            Init::Huge => Some(1e300),
        }
    }
}

/// Which scalar declaration.
#[derive(Clone, Copy, Debug, Hash)]
enum LetKind {
    LetI32,
    LetU32,
    VarI32,
    VarU32,
}

/// Which thread group.
#[derive(Clone, Copy, Debug, Hash)]
enum Group {
    Threads(u32, u32),
    SingleThread,
    SingleWarp(u32),
    /// `warp_group(first_warp)`.
    FourWarps(u32),
}

/// The `[M, K]` operand of `wgmma.mma`.
#[derive(Clone, Copy, Debug, Hash)]
enum WgA {
    Shared(T),
    Register(T),
}

/// One builder call.
#[derive(Clone, Debug, Hash)]
enum Op {
    Warps(u32),
    Blocks(Vec<Sc>),
    MinBlocks(u32),
    NameNext(&'static str),
    Let(LetKind, Sc),
    Assign(To, Sc),
    For(Sc, Sc, Sc, Vec<Op>),
    Group(Group, Vec<Op>),
    Sync,
    /// A view of pointer argument `ptr` (0..8: f16, mut f16, bf16, mut bf16, f32, ...).
    GlobalView(usize, Vec<Sc>),
    Shared(Dt, Vec<i32>),
    Register(Dt, Vec<i32>, Init),
    FreeShared(T),
    LoadShared(T),
    /// `store_shared(shared, register of the tile's type)`.
    StoreShared(T, T),
    FenceProxyAsync,
    /// `store_global(global, register of the view's type, offsets)`.
    StoreGlobal(usize, T, Vec<Sc>),
    Cast(T, Dt),
    /// `dot(a, b of a's type, c, out of c's type)`.
    Dot(T, T, T, T),
    BarAlloc(Vec<u32>),
    Arrive(BarRef),
    ExpectTx(BarRef, Bytes),
    Wait(BarRef, Sc),
    /// `tma.global_to_shared(global, shared tile of its type, offsets, barrier)`.
    Tma(usize, T, Vec<Sc>, BarRef),
    WgFence,
    /// `wgmma.mma(a, b: a shared tile of a's type, d)`.
    WgMma(WgA, T, T),
    WgCommit,
    WgWait(u32),
}

/// The target of `assign`.
#[derive(Clone, Copy, Debug, Hash)]
enum To {
    /// A `var_*` scalar (any scalar when there is none).
    Mutable(usize),
    /// Any scalar: arguments, `let_*`, loop variables.
    Any(usize),
}

/// A change to the traced program, for what the typed API cannot express.
#[derive(Clone, Copy, Debug, Hash)]
enum Edit {
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
struct Case {
    ops: Vec<Op>,
    consts: Vec<i64>,
    edits: Vec<Edit>,
}

// ------------------------------------------------------------------------------------------
// The script and its interpreter.
// ------------------------------------------------------------------------------------------

/// Runtime scalars, compile-time constants and one read-only and one writable pointer of
/// each element type.
type Args = (
    i32,
    i32,
    Const<i32>,
    Const<i32>,
    Ptr<f16>,
    PtrMut<f16>,
    Ptr<bf16>,
    PtrMut<bf16>,
    Ptr<f32>,
    PtrMut<f32>,
    Ptr<i32>,
    PtrMut<i32>,
);

/// The script whose body replays a program.
#[derive(Clone, Debug, Hash)]
struct Fuzz(Vec<Op>);

impl Script for Fuzz {
    type Args = Args;
    fn body(
        &self,
        k: &mut Kernel,
        (r0, r1, c0, c1, p0, p1, p2, p3, p4, p5, p6, p7): Handles<Args>,
    ) {
        let b = k.block_idx();
        let mut it = Interp {
            block_idx: [b.x, b.y, b.z],
            runtime: [r0, r1],
            consts: [c0, c1],
            ptrs: [
                P::F16(p0),
                P::F16(p1),
                P::Bf16(p2),
                P::Bf16(p3),
                P::F32(p4),
                P::F32(p5),
                P::I32(p6),
                P::I32(p7),
            ],
            vals: vec![r0, r1, c0, c1],
            muts: vec![],
            globals: vec![],
            shareds: vec![],
            regs: vec![],
            bars: vec![],
        };
        it.run(k, &self.0);
    }
}

macro_rules! typed_handle {
    ($name:ident, $handle:ident) => {
        /// A handle of any element type.
        #[derive(Clone, Copy)]
        enum $name {
            F16($handle<f16>),
            Bf16($handle<bf16>),
            F32($handle<f32>),
            I32($handle<i32>),
        }
    };
}
typed_handle!(P, PtrVal);
typed_handle!(G, GlobalTensor);
typed_handle!(S, SharedTensor);
typed_handle!(R, RegisterTensor);

/// Runs `$body` with `$x` the typed handle inside `$e` and `$T` its element type.
macro_rules! on {
    ($e:expr, $enum:ident, |$x:ident: $T:ident| $body:expr) => {
        match $e {
            $enum::F16($x) => {
                #[allow(dead_code)]
                type $T = f16;
                $body
            }
            $enum::Bf16($x) => {
                #[allow(dead_code)]
                type $T = bf16;
                $body
            }
            $enum::F32($x) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $enum::I32($x) => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` the element type named by `$dt`.
macro_rules! by_dt {
    ($dt:expr, |$T:ident| $body:expr) => {
        match $dt {
            Dt::F16 => {
                type $T = f16;
                $body
            }
            Dt::Bf16 => {
                type $T = bf16;
                $body
            }
            Dt::F32 => {
                type $T = f32;
                $body
            }
            Dt::I32 => {
                type $T = i32;
                $body
            }
        }
    };
}

/// An element type of the fuzzer: wraps and unwraps typed handles.
trait El: Element {
    fn g(t: GlobalTensor<Self>) -> G;
    fn s(t: SharedTensor<Self>) -> S;
    fn r(t: RegisterTensor<Self>) -> R;
    fn get_s(t: S) -> Option<SharedTensor<Self>>;
    fn get_r(t: R) -> Option<RegisterTensor<Self>>;
}

macro_rules! el {
    ($t:ty, $v:ident) => {
        impl El for $t {
            fn g(t: GlobalTensor<Self>) -> G {
                G::$v(t)
            }
            fn s(t: SharedTensor<Self>) -> S {
                S::$v(t)
            }
            fn r(t: RegisterTensor<Self>) -> R {
                R::$v(t)
            }
            fn get_s(t: S) -> Option<SharedTensor<Self>> {
                match t {
                    S::$v(t) => Some(t),
                    _ => None,
                }
            }
            fn get_r(t: R) -> Option<RegisterTensor<Self>> {
                match t {
                    R::$v(t) => Some(t),
                    _ => None,
                }
            }
        }
    };
}
el!(f16, F16);
el!(bf16, Bf16);
el!(f32, F32);
el!(i32, I32);

/// The `i`-th most recent item (`0`: the last one), modulo the number of items; `None` when
/// there are none.
fn pick<X: Copy>(items: &[X], i: usize) -> Option<X> {
    (!items.is_empty()).then(|| items[items.len() - 1 - i % items.len()])
}

/// Replays operations on a kernel, keeping every handle created so far.
struct Interp {
    block_idx: [Scalar; 3],
    runtime: [Val; 2],
    consts: [Val; 2],
    ptrs: [P; 8],
    vals: Vec<Val>,
    /// The scalars declared with `var_i32` / `var_u32`.
    muts: Vec<Val>,
    globals: Vec<G>,
    shareds: Vec<S>,
    regs: Vec<R>,
    bars: Vec<Barriers>,
}

impl Interp {
    fn scalar(&self, s: &Sc) -> Scalar {
        match s {
            Sc::Lit(v) => Scalar::from(*v),
            Sc::LitU(v) => Scalar::from(*v),
            Sc::Runtime(i) => self.runtime[*i as usize % 2].into(),
            Sc::Const(i) => self.consts[*i as usize % 2].into(),
            Sc::Val(i) => pick(&self.vals, *i).map_or(Scalar::from(0), Scalar::from),
            Sc::BlockIdx(a) => self.block_idx[*a as usize % 3].clone(),
            Sc::Bin(op, a, b) => {
                let (a, b) = (self.scalar(a), self.scalar(b));
                match op {
                    Bin::Add => a + b,
                    Bin::Sub => a - b,
                    Bin::Mul => a * b,
                    Bin::Div => a / b,
                    Bin::Rem => a % b,
                    Bin::And => a & b,
                    Bin::Or => a | b,
                    Bin::Xor => a ^ b,
                    Bin::Shl => a << b,
                    Bin::Shr => a >> b,
                    Bin::Lt => a.lt(b),
                    Bin::Eq => a.eq_(b),
                }
            }
            Sc::Cdiv(a, b) => cdiv(self.scalar(a), self.scalar(b)),
        }
    }

    fn scalars(&self, s: &[Sc]) -> Vec<Scalar> {
        s.iter().map(|s| self.scalar(s)).collect()
    }

    fn shared(&self, t: T) -> Option<S> {
        let s = pick(&self.shareds, t.idx)?;
        Some(if t.transposed {
            on!(s, S, |x: E| E::s(x.transpose()))
        } else {
            s
        })
    }

    fn reg(&self, t: T) -> Option<R> {
        let r = pick(&self.regs, t.idx)?;
        Some(if t.transposed {
            on!(r, R, |x: E| E::r(x.transpose()))
        } else {
            r
        })
    }

    /// A shared tile of element type `E`, when there is one.
    fn shared_of<E: El>(&self, t: T) -> Option<SharedTensor<E>> {
        let all: Vec<_> = self.shareds.iter().filter_map(|s| E::get_s(*s)).collect();
        let s = pick(&all, t.idx)?;
        Some(if t.transposed { s.transpose() } else { s })
    }

    /// A register tile of element type `E`, when there is one.
    fn reg_of<E: El>(&self, t: T) -> Option<RegisterTensor<E>> {
        let all: Vec<_> = self.regs.iter().filter_map(|r| E::get_r(*r)).collect();
        let r = pick(&all, t.idx)?;
        Some(if t.transposed { r.transpose() } else { r })
    }

    fn barrier(&self, b: &BarRef) -> Option<Barrier> {
        let n = self.bars.len();
        let arr = &self.bars[n.checked_sub(1)? - b.arr % n];
        Some(match b.ix {
            BarIx::Index(i) => arr[i],
            BarIx::At(v) => arr.at(pick(&self.vals, v).unwrap_or(Val::constant(0))),
            BarIx::Lit(i) => arr.at(Val::constant(i)),
        })
    }

    fn run(&mut self, k: &mut Kernel, ops: &[Op]) {
        for op in ops {
            self.op(k, op);
        }
    }

    fn op(&mut self, k: &mut Kernel, op: &Op) {
        match op {
            Op::Warps(n) => k.warps(*n),
            Op::Blocks(d) => k.blocks(self.scalars(d)),
            Op::MinBlocks(n) => k.min_blocks_per_sm(*n),
            Op::NameNext(n) => {
                k.name_next(n);
            }
            Op::Let(kind, v) => {
                let v = self.scalar(v);
                let val = match kind {
                    LetKind::LetI32 => k.let_i32(v),
                    LetKind::LetU32 => k.let_u32(v),
                    LetKind::VarI32 => k.var_i32(v),
                    LetKind::VarU32 => k.var_u32(v),
                };
                self.vals.push(val);
                if matches!(kind, LetKind::VarI32 | LetKind::VarU32) {
                    self.muts.push(val);
                }
            }
            Op::Assign(to, v) => {
                let var = match *to {
                    To::Mutable(i) => pick(&self.muts, i).or(pick(&self.vals, i)),
                    To::Any(i) => pick(&self.vals, i),
                };
                if let Some(var) = var {
                    k.assign(var, self.scalar(v));
                }
            }
            Op::For(start, end, step, body) => {
                let (start, end, step) = (self.scalar(start), self.scalar(end), self.scalar(step));
                k.for_range(start, end, step, |k, i| {
                    self.vals.push(i);
                    self.run(k, body);
                });
            }
            Op::Group(g, body) => {
                let body = |k: &mut Kernel| self.run(k, body);
                match *g {
                    Group::Threads(begin, count) => k.thread_group(begin, count, body),
                    Group::SingleThread => k.single_thread(body),
                    Group::SingleWarp(w) => k.single_warp(w, body),
                    Group::FourWarps(w) => k.warp_group(w, body),
                }
            }
            Op::Sync => k.sync(),
            Op::GlobalView(ptr, shape) => {
                let shape = self.scalars(shape);
                let g = on!(self.ptrs[ptr % 8], P, |p: E| E::g(k.global_view(p, shape)));
                self.globals.push(g);
            }
            Op::Shared(dt, shape) => {
                let s = by_dt!(dt, |E| E::s(k.shared_tensor::<E>(shape.clone())));
                self.shareds.push(s);
            }
            Op::Register(dt, shape, init) => {
                let r = by_dt!(dt, |E| E::r(
                    k.register_tensor::<E>(shape.clone(), init.value())
                ));
                self.regs.push(r);
            }
            Op::FreeShared(t) => {
                if let Some(s) = self.shared(*t) {
                    on!(s, S, |x: E| k.free_shared(&x));
                }
            }
            Op::LoadShared(t) => {
                if let Some(s) = self.shared(*t) {
                    let r = on!(s, S, |x: E| E::r(k.load_shared(&x)));
                    self.regs.push(r);
                }
            }
            Op::StoreShared(s, r) => {
                if let Some(s) = self.shared(*s) {
                    on!(s, S, |s: E| {
                        if let Some(r) = self.reg_of::<E>(*r) {
                            k.store_shared(&s, &r);
                        }
                    });
                }
            }
            Op::FenceProxyAsync => k.fence_proxy_async(),
            Op::StoreGlobal(g, r, offsets) => {
                let Some(g) = pick(&self.globals, *g) else {
                    return;
                };
                let offsets = self.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(r) = self.reg_of::<E>(*r) {
                        k.store_global(&g, &r, offsets);
                    }
                });
            }
            Op::Cast(r, dt) => {
                if let Some(r) = self.reg(*r) {
                    let out = on!(r, R, |x: E| by_dt!(dt, |U| U::r(k.cast::<U>(&x))));
                    self.regs.push(out);
                }
            }
            Op::Dot(a, b, c, out) => {
                let (Some(ra), Some(rc)) = (self.reg(*a), self.reg(*c)) else {
                    return;
                };
                on!(ra, R, |ra: A| on!(rc, R, |rc: C| {
                    let rb = self.reg_of::<A>(*b).unwrap_or(ra);
                    let ro = self.reg_of::<C>(*out).unwrap_or(rc);
                    k.dot(&ra, &rb, &rc, &ro);
                }));
            }
            Op::BarAlloc(c) => {
                let mb = k.mbarrier();
                let bars = match c.len() {
                    0 => mb.alloc([]),
                    1 => mb.alloc([c[0]]),
                    2 => mb.alloc([c[0], c[1]]),
                    3 => mb.alloc([c[0], c[1], c[2]]),
                    _ => mb.alloc([c[0], c[1], c[2], c[3]]),
                };
                self.bars.push(bars);
            }
            Op::Arrive(b) => {
                if let Some(b) = self.barrier(b) {
                    k.mbarrier().arrive(b);
                }
            }
            Op::ExpectTx(b, bytes) => {
                let Some(b) = self.barrier(b) else {
                    return;
                };
                let bytes = match bytes {
                    Bytes::Scalar(s) => self.scalar(s),
                    Bytes::Nbytes(tiles) => Scalar::from(
                        tiles
                            .iter()
                            .filter_map(|t| pick(&self.shareds, *t))
                            .map(|s| on!(s, S, |x: E| x.nbytes()))
                            .fold(0i32, i32::wrapping_add),
                    ),
                };
                k.mbarrier().arrive_and_expect_tx(b, bytes);
            }
            Op::Wait(b, phase) => {
                if let Some(b) = self.barrier(b) {
                    k.mbarrier().wait(b, self.scalar(phase));
                }
            }
            Op::Tma(g, s, offsets, bar) => {
                let (Some(g), Some(bar)) = (pick(&self.globals, *g), self.barrier(bar)) else {
                    return;
                };
                let offsets = self.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(s) = self.shared_of::<E>(*s) {
                        k.tma().global_to_shared(&g, &s, offsets, bar);
                    }
                });
            }
            Op::WgFence => k.wgmma().fence(),
            Op::WgMma(a, b, d) => {
                let Some(d) = self.reg(*d) else {
                    return;
                };
                match *a {
                    WgA::Shared(a) => {
                        if let Some(a) = self.shared(a) {
                            on!(a, S, |a: E| on!(d, R, |d: C| self.wgmma(k, &a, *b, &d)));
                        }
                    }
                    WgA::Register(a) => {
                        if let Some(a) = self.reg(a) {
                            on!(a, R, |a: E| on!(d, R, |d: C| self.wgmma(k, &a, *b, &d)));
                        }
                    }
                }
            }
            Op::WgCommit => k.wgmma().commit_group(),
            Op::WgWait(n) => k.wgmma().wait_group(*n),
        }
    }

    fn wgmma<E: El, C: El>(
        &self,
        k: &mut Kernel,
        a: &impl WgmmaOperand<E>,
        b: T,
        d: &RegisterTensor<C>,
    ) {
        if let Some(b) = self.shared_of::<E>(b) {
            k.wgmma().mma(a, &b, d);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Strategies. A case is *wild*: operations anywhere, every parameter drawn from valid and
// invalid values alike; or *tame*: a plausible kernel built from snippets (a TMA load, a
// `dot`, a `wgmma`, a store, loops and thread groups around them) into which one or two wild
// operations are inserted. Tame cases get through the verifier to layout inference, shared
// memory planning and CUDA emission, and their single wild operation probes one rule at a
// time.
// ------------------------------------------------------------------------------------------

/// Whether parameters are drawn from plausible values or from all.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tame,
    Wild,
}
use Mode::{Tame, Wild};

fn dt(m: Mode) -> BoxedStrategy<Dt> {
    match m {
        Tame => prop_oneof![3 => Just(Dt::F16), 1 => Just(Dt::Bf16), 2 => Just(Dt::F32)].boxed(),
        Wild => prop_oneof![
            3 => Just(Dt::F16),
            1 => Just(Dt::Bf16),
            2 => Just(Dt::F32),
            1 => Just(Dt::I32),
        ]
        .boxed(),
    }
}

/// An extent, offset or other integer.
fn int(m: Mode) -> BoxedStrategy<i32> {
    let tame = prop::sample::select(vec![16, 32, 64, 64, 128]);
    match m {
        Tame => tame.boxed(),
        Wild => prop_oneof![
            8 => tame,
            3 => prop::sample::select(vec![1, 2, 3, 7, 8, 17, 48, 96, 192, 256, 4096]),
            1 => prop::sample::select(vec![0, -1, -64, i32::MIN]),
            1 => prop::sample::select(vec![1 << 16, 46341, 1 << 20, 1 << 30, i32::MAX]),
        ]
        .boxed(),
    }
}

/// A rank: mostly 2; wild ranks go from 0 (invalid) to 4.
fn rank(m: Mode) -> BoxedStrategy<usize> {
    match m {
        Tame => prop_oneof![1 => Just(1usize), 6 => Just(2)].boxed(),
        Wild => prop_oneof![
            1 => Just(0usize),
            4 => Just(1),
            10 => Just(2),
            2 => Just(3),
            1 => Just(4),
        ]
        .boxed(),
    }
}

fn dims(m: Mode) -> impl Strategy<Value = Vec<i32>> {
    rank(m).prop_flat_map(move |r| prop::collection::vec(int(m), r))
}

fn bin() -> impl Strategy<Value = Bin> {
    prop::sample::select(vec![
        Bin::Add,
        Bin::Sub,
        Bin::Mul,
        Bin::Div,
        Bin::Rem,
        Bin::And,
        Bin::Or,
        Bin::Xor,
        Bin::Shl,
        Bin::Shr,
        Bin::Lt,
        Bin::Eq,
    ])
}

fn sc(m: Mode) -> BoxedStrategy<Sc> {
    if m == Tame {
        let leaf = prop_oneof![
            4 => prop::sample::select(vec![0, 0, 16, 64, 128]).prop_map(Sc::Lit),
            2 => (0u8..2).prop_map(Sc::Const),
            1 => (0u8..2).prop_map(Sc::Runtime),
            1 => (0usize..4).prop_map(Sc::Val),
            1 => (0u8..2).prop_map(Sc::BlockIdx),
        ];
        return leaf
            .prop_recursive(1, 3, 2, |inner| {
                (prop::bool::ANY, inner.clone(), inner).prop_map(|(mul, a, b)| {
                    Sc::Bin(
                        if mul { Bin::Mul } else { Bin::Add },
                        Box::new(a),
                        Box::new(b),
                    )
                })
            })
            .boxed();
    }
    let leaf = prop_oneof![
        6 => int(Wild).prop_map(Sc::Lit),
        1 => prop::sample::select(vec![0u32, 1, 64, u32::MAX]).prop_map(Sc::LitU),
        2 => (0u8..2).prop_map(Sc::Runtime),
        2 => (0u8..2).prop_map(Sc::Const),
        3 => (0usize..16).prop_map(Sc::Val),
        1 => (0u8..3).prop_map(Sc::BlockIdx),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            3 => (bin(), inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| Sc::Bin(o, Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner).prop_map(|(a, b)| Sc::Cdiv(Box::new(a), Box::new(b))),
        ]
    })
    .boxed()
}

/// Shapes of global views and offsets: scalar lists, mostly of rank 2.
fn scs(m: Mode) -> impl Strategy<Value = Vec<Sc>> {
    rank(m).prop_flat_map(move |r| prop::collection::vec(sc(m), r))
}

fn t(m: Mode) -> impl Strategy<Value = T> {
    let (n, p) = match m {
        Tame => (3usize, 0.1),
        Wild => (8, 0.2),
    };
    (0..n, prop::bool::weighted(p)).prop_map(|(idx, transposed)| T { idx, transposed })
}

fn bar(m: Mode) -> BoxedStrategy<BarRef> {
    if m == Tame {
        return (0usize..2)
            .prop_map(|arr| BarRef {
                arr,
                ix: BarIx::Index(0),
            })
            .boxed();
    }
    let ix = prop_oneof![
        6 => (0usize..5).prop_map(BarIx::Index),
        1 => (0usize..16).prop_map(BarIx::At),
        1 => prop::sample::select(vec![-1, 0, 1, 1 << 20, i32::MIN]).prop_map(BarIx::Lit),
    ];
    (0usize..4, ix)
        .prop_map(|(arr, ix)| BarRef { arr, ix })
        .boxed()
}

fn u32s(v: &[u32]) -> impl Strategy<Value = u32> {
    prop::sample::select(v.to_vec())
}

fn group(m: Mode) -> BoxedStrategy<Group> {
    match m {
        Tame => prop_oneof![
            3 => Just(Group::SingleThread),
            2 => u32s(&[0, 1, 2, 3]).prop_map(Group::SingleWarp),
            1 => Just(Group::FourWarps(0)),
            1 => (u32s(&[0, 32, 64]), u32s(&[32, 64])).prop_map(|(b, c)| Group::Threads(b, c)),
        ]
        .boxed(),
        Wild => prop_oneof![
            3 => Just(Group::SingleThread),
            2 => u32s(&[0, 1, 2, 3, 4, u32::MAX]).prop_map(Group::SingleWarp),
            2 => u32s(&[0, 0, 4, 1, 8, u32::MAX]).prop_map(Group::FourWarps),
            2 => (
                u32s(&[0, 0, 32, 64, 1, 127, 128, u32::MAX]),
                u32s(&[1, 32, 64, 128, 0, 31, 96, u32::MAX]),
            )
                .prop_map(|(b, c)| Group::Threads(b, c)),
        ]
        .boxed(),
    }
}

fn warps(m: Mode) -> BoxedStrategy<u32> {
    match m {
        Tame => prop_oneof![6 => Just(4u32), 1 => Just(8)].boxed(),
        Wild => prop_oneof![
            6 => Just(4u32),
            3 => u32s(&[1, 2, 8, 12, 16, 32]),
            1 => u32s(&[0, 3, 33, u32::MAX]),
        ]
        .boxed(),
    }
}

const NAMES: &[&str] = &[
    "acc",
    "acc",
    "",
    "int",
    "tilus_x",
    "__y",
    "9lives",
    "a b",
    "é",
    "v",
    "v0",
    "threadIdx",
    "_",
];

/// One operation with random parameters. Tame operations are never `warps`, `blocks` or
/// `min_blocks_per_sm`, and allocate shared tiles and barriers only at the top level
/// (`top`).
fn leaf_op(m: Mode, top: bool) -> BoxedStrategy<Op> {
    let init = prop::sample::select(match m {
        Tame => vec![Init::Zero, Init::One, Init::None],
        Wild => vec![
            Init::None,
            Init::Zero,
            Init::Zero,
            Init::One,
            Init::MinusHalf,
            Init::Nan,
            Init::Inf,
            Init::Huge,
        ],
    });
    let let_kind = prop::sample::select(vec![
        LetKind::LetI32,
        LetKind::LetU32,
        LetKind::VarI32,
        LetKind::VarU32,
    ]);
    let to = match m {
        Tame => (0usize..4).prop_map(To::Mutable).boxed(),
        Wild => prop_oneof![
            (0usize..16).prop_map(To::Mutable),
            (0usize..16).prop_map(To::Any)
        ]
        .boxed(),
    };
    let bytes = prop_oneof![
        1 => sc(m).prop_map(Bytes::Scalar),
        3 => prop::collection::vec(0usize..8, 0..3).prop_map(Bytes::Nbytes),
    ];
    let wga = prop_oneof![t(m).prop_map(WgA::Shared), t(m).prop_map(WgA::Register)];
    let count = match m {
        Tame => u32s(&[1, 1, 128]),
        Wild => u32s(&[1, 1, 32, 128, 0, 2, 1 << 20, u32::MAX]),
    };
    let counts = match m {
        Tame => prop::collection::vec(count, 1..3),
        Wild => prop::collection::vec(count, 0..5),
    };
    let wild = m == Wild;
    let mut arms: Vec<(u32, BoxedStrategy<Op>)> = vec![
        (
            1,
            prop::sample::select(NAMES.to_vec())
                .prop_map(Op::NameNext)
                .boxed(),
        ),
        (
            3,
            (let_kind, sc(m)).prop_map(|(k, v)| Op::Let(k, v)).boxed(),
        ),
        (2, (to, sc(m)).prop_map(|(v, e)| Op::Assign(v, e)).boxed()),
        (2, Just(Op::Sync).boxed()),
        (
            3,
            (0usize..8, scs(m))
                .prop_map(|(p, s)| Op::GlobalView(p, s))
                .boxed(),
        ),
        (
            4,
            (dt(m), dims(m), init)
                .prop_map(|(d, s, i)| Op::Register(d, s, i))
                .boxed(),
        ),
        (2, t(m).prop_map(Op::FreeShared).boxed()),
        (3, t(m).prop_map(Op::LoadShared).boxed()),
        (
            2,
            (t(m), t(m))
                .prop_map(|(s, r)| Op::StoreShared(s, r))
                .boxed(),
        ),
        (1, Just(Op::FenceProxyAsync).boxed()),
        (
            3,
            (0usize..8, t(m), scs(m))
                .prop_map(|(g, r, o)| Op::StoreGlobal(g, r, o))
                .boxed(),
        ),
        (2, (t(m), dt(m)).prop_map(|(r, d)| Op::Cast(r, d)).boxed()),
        (
            3,
            (t(m), t(m), t(m), t(m))
                .prop_map(|(a, b, c, o)| Op::Dot(a, b, c, o))
                .boxed(),
        ),
        (2, bar(m).prop_map(Op::Arrive).boxed()),
        (
            2,
            (bar(m), bytes)
                .prop_map(|(b, n)| Op::ExpectTx(b, n))
                .boxed(),
        ),
        (2, (bar(m), sc(m)).prop_map(|(b, p)| Op::Wait(b, p)).boxed()),
        (
            3,
            (0usize..8, t(m), scs(m), bar(m))
                .prop_map(|(g, s, o, b)| Op::Tma(g, s, o, b))
                .boxed(),
        ),
        (1, Just(Op::WgFence).boxed()),
        (
            2,
            (wga, t(m), t(m))
                .prop_map(|(a, b, d)| Op::WgMma(a, b, d))
                .boxed(),
        ),
        (1, Just(Op::WgCommit).boxed()),
        (1, u32s(&[0, 1, 2, u32::MAX]).prop_map(Op::WgWait).boxed()),
    ];
    if wild || top {
        arms.push((
            4,
            (dt(m), dims(m)).prop_map(|(d, s)| Op::Shared(d, s)).boxed(),
        ));
        arms.push((2, counts.prop_map(Op::BarAlloc).boxed()));
    }
    if wild {
        arms.push((1, warps(m).prop_map(Op::Warps).boxed()));
        arms.push((
            1,
            prop::collection::vec(sc(m), 0..5)
                .prop_map(Op::Blocks)
                .boxed(),
        ));
        arms.push((
            1,
            u32s(&[0, 1, 2, 32, 33, u32::MAX])
                .prop_map(Op::MinBlocks)
                .boxed(),
        ));
    }
    prop::strategy::Union::new_weighted(arms).boxed()
}

/// Wild operations, with loops and thread groups nested at most two deep.
fn wild_op() -> BoxedStrategy<Op> {
    leaf_op(Wild, true)
        .prop_recursive(2, 16, 4, |inner| {
            let body = prop::collection::vec(inner, 0..4);
            prop_oneof![
                (sc(Wild), sc(Wild), sc(Wild), body.clone())
                    .prop_map(|(a, b, c, body)| Op::For(a, b, c, body)),
                (group(Wild), body).prop_map(|(g, body)| Op::Group(g, body)),
            ]
        })
        .boxed()
}

const fn plain(idx: usize) -> T {
    T {
        idx,
        transposed: false,
    }
}

/// An extent of a snippet: one of `v`, or now and then any.
fn tame_dim(v: &[i32]) -> impl Strategy<Value = i32> {
    prop_oneof![15 => prop::sample::select(v.to_vec()), 1 => int(Wild)]
}

/// A shared tile filled by TMA from a global view (a recent one, or a new one of the tile's
/// element type): `expect_tx` and the copy on one thread, then a wait (by every thread, or on
/// that thread followed by a `sync`).
fn snippet_tma(phase: Sc) -> BoxedStrategy<Vec<Op>> {
    (
        dt(Tame),
        prop::collection::vec(tame_dim(&[16, 32, 64, 128]), 2),
        prop::option::weighted(0.5, prop::sample::select(vec![0, 4096])),
        bar(Tame),
        prop::collection::vec(sc(Tame), 2),
        prop::bool::ANY,
    )
        .prop_map(move |(dt, shape, view, bar, offsets, wait_inside)| {
            let mut ops = vec![];
            let mut dt = dt;
            match view {
                // pointers 0, 2 and 4 are `Ptr<f16>`, `Ptr<bf16>` and `Ptr<f32>`
                Some(extent) => ops.push(Op::GlobalView(
                    match dt {
                        Dt::F16 => 0,
                        Dt::Bf16 => 2,
                        _ => 4,
                    },
                    vec![
                        Sc::Const(0),
                        if extent == 0 {
                            Sc::Const(1)
                        } else {
                            Sc::Lit(extent)
                        },
                    ],
                )),
                // the prelude's views are f16
                None => dt = Dt::F16,
            }
            let copy = vec![
                Op::ExpectTx(bar.clone(), Bytes::Nbytes(vec![0])),
                Op::Tma(0, plain(0), offsets, bar.clone()),
            ];
            let wait = Op::Wait(bar, phase.clone());
            ops.push(Op::Shared(dt, shape));
            if wait_inside {
                let mut copy = copy;
                copy.push(wait);
                ops.extend([Op::Group(Group::SingleThread, copy), Op::Sync]);
            } else {
                ops.extend([Op::Group(Group::SingleThread, copy), wait]);
            }
            ops
        })
        .boxed()
}

/// `dot` of two shared tiles loaded into registers, into a fresh accumulator.
fn snippet_dot() -> BoxedStrategy<Vec<Op>> {
    let d = || tame_dim(&[16, 32, 64, 128]);
    let ab = prop::sample::select(vec![Dt::F16, Dt::F16, Dt::Bf16, Dt::F32]);
    let c = prop::sample::select(vec![Dt::F32, Dt::F32, Dt::F32, Dt::F16]);
    (d(), d(), d(), ab, c, prop::bool::weighted(0.8))
        .prop_map(|(m, n, k, ab, c, bt)| {
            vec![
                Op::Shared(ab, vec![m, k]),
                Op::Shared(ab, if bt { vec![n, k] } else { vec![k, n] }),
                Op::LoadShared(plain(1)),
                Op::LoadShared(plain(0)),
                Op::Register(c, vec![m, n], Init::Zero),
                Op::Dot(
                    plain(2),
                    T {
                        idx: 0,
                        transposed: bt,
                    },
                    plain(0),
                    plain(0),
                ),
            ]
        })
        .boxed()
}

/// A warp group's `wgmma` of two shared tiles (or registers and a shared tile); the `[N, K]`
/// tile may first be written with `store_shared` (and, mostly, published with
/// `fence_proxy_async` and a `sync`).
fn snippet_wgmma() -> BoxedStrategy<Vec<Op>> {
    (
        tame_dim(&[64, 64, 128]),
        tame_dim(&[16, 32, 64, 128, 256]),
        tame_dim(&[16, 32, 64]),
        prop::sample::select(vec![Dt::F16, Dt::F16, Dt::Bf16, Dt::F32]),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
        prop::sample::select(vec![None, None, Some(true), Some(true), Some(false)]),
    )
        .prop_map(|(m, n, k, ab, a_in_registers, acc_inside, store)| {
            let mut ops = vec![Op::Shared(ab, vec![m, k]), Op::Shared(ab, vec![n, k])];
            if let Some(fence) = store {
                ops.extend([
                    Op::Register(ab, vec![n, k], Init::One),
                    Op::StoreShared(plain(0), plain(0)),
                ]);
                if fence {
                    ops.push(Op::FenceProxyAsync);
                }
                ops.push(Op::Sync);
            }
            // the accumulator is the most recent register tile when the mma runs
            let a = if a_in_registers {
                ops.push(Op::LoadShared(plain(1)));
                WgA::Register(plain(1))
            } else {
                WgA::Shared(plain(1))
            };
            let acc = Op::Register(Dt::F32, vec![m, n], Init::Zero);
            // the [N, K] tile seen as [K, N]
            let b = T {
                idx: 0,
                transposed: true,
            };
            let mut body = vec![
                Op::WgFence,
                Op::WgMma(a, b, plain(0)),
                Op::WgCommit,
                Op::WgWait(0),
            ];
            if acc_inside {
                body.insert(0, acc);
            } else {
                ops.push(acc);
            }
            ops.push(Op::Group(Group::FourWarps(0), body));
            ops
        })
        .boxed()
}

/// A register tile (possibly cast) stored through a writable view.
fn snippet_store() -> BoxedStrategy<Vec<Op>> {
    (
        prop::collection::vec(tame_dim(&[16, 32, 64, 128]), 1..=2),
        prop::bool::ANY,
        prop::collection::vec(sc(Tame), 2),
        prop::bool::ANY,
    )
        .prop_map(|(shape, cast, offsets, const_shape)| {
            let rank = shape.len();
            let mut ops = vec![Op::Register(Dt::F32, shape.clone(), Init::One)];
            // pointer 5 is `PtrMut<f32>`, 1 is `PtrMut<f16>`
            let mut ptr = 5;
            if cast {
                ops.push(Op::Cast(plain(0), Dt::F16));
                ptr = 1;
            }
            let view = if const_shape {
                vec![Sc::Const(0), Sc::Const(1)]
            } else {
                shape.iter().map(|&d| Sc::Lit(d)).collect()
            };
            ops.push(Op::GlobalView(ptr, view[..rank].to_vec()));
            ops.push(Op::StoreGlobal(0, plain(0), offsets[..rank].to_vec()));
            ops
        })
        .boxed()
}

/// Tame operations in groups of a few: snippets, single operations, loops (some of them a
/// pipeline with a phase variable) and thread groups around them.
fn chunk() -> BoxedStrategy<Vec<Op>> {
    let leaf = prop_oneof![
        4 => leaf_op(Tame, true).prop_map(|o| vec![o]),
        3 => snippet_tma(Sc::Lit(0)),
        3 => snippet_dot(),
        3 => snippet_wgmma(),
        2 => snippet_store(),
    ];
    leaf.prop_recursive(2, 24, 3, |inner| {
        let step = prop::sample::select(vec![16, 32, 64]).prop_map(Sc::Lit);
        prop_oneof![
            2 => (sc(Tame), step.clone(), prop::collection::vec(inner, 1..3)).prop_map(
                |(end, step, body)| {
                    vec![Op::For(Sc::Lit(0), end, step, body.concat())]
                }
            ),
            1 => (group(Tame), prop::collection::vec(leaf_op(Tame, false), 1..4))
                .prop_map(|(g, body)| vec![Op::Group(g, body)]),
            // `phase` is the most recent scalar outside the loop; inside, the loop index is
            1 => (snippet_tma(Sc::Val(1)), step).prop_map(|(mut body, step)| {
                body.push(Op::Assign(
                    To::Mutable(0),
                    Sc::Bin(Bin::Xor, Box::new(Sc::Val(1)), Box::new(Sc::LitU(1))),
                ));
                vec![
                    Op::Let(LetKind::VarU32, Sc::LitU(0)),
                    Op::For(Sc::Lit(0), Sc::Const(0), step, body),
                ]
            }),
        ]
    })
    .boxed()
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Register(i, d)),
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Shared(i, d)),
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Global(i, d)),
    ]
}

fn wild_case() -> impl Strategy<Value = Case> {
    let prefix = prop_oneof![
        8 => Just(vec![Op::Warps(4)]),
        1 => Just(vec![]),
        2 => warps(Wild).prop_map(|w| vec![Op::Warps(w)]),
    ];
    let const_value = prop_oneof![6 => int(Wild).prop_map(i64::from), 1 => any::<i64>()];
    let consts = prop_oneof![
        10 => prop::collection::vec(const_value.clone(), 2),
        1 => prop::collection::vec(const_value, 0..4),
    ];
    let edits = prop_oneof![
        8 => Just(vec![]),
        1 => prop::collection::vec(edit(), 1..3),
    ];
    (
        prefix,
        prop::collection::vec(wild_op(), 0..8),
        consts,
        edits,
    )
        .prop_map(|(mut ops, rest, consts, edits)| {
            ops.extend(rest);
            Case { ops, consts, edits }
        })
}

fn tame_case() -> impl Strategy<Value = Case> {
    // `warps`, maybe `blocks` and `min_blocks_per_sm`, views of the f16 inputs and a barrier
    // array
    let blocks = prop_oneof![
        Just(vec![]),
        Just(vec![Op::Blocks(vec![
            Sc::Cdiv(Box::new(Sc::Runtime(0)), Box::new(Sc::Lit(64))),
            Sc::Cdiv(Box::new(Sc::Const(0)), Box::new(Sc::Lit(128))),
        ])]),
        Just(vec![Op::MinBlocks(1)]),
    ];
    let view = prop_oneof![
        Just(vec![Sc::Const(0), Sc::Const(1)]),
        Just(vec![Sc::Runtime(0), Sc::Const(1)]),
        Just(vec![Sc::Lit(4096), Sc::Lit(4096)]),
    ];
    let prelude = (
        warps(Tame),
        blocks,
        prop::collection::vec(view, 1..3),
        prop::collection::vec(u32s(&[1, 1, 128]), 1..3),
    )
        .prop_map(|(w, blocks, views, counts)| {
            let mut ops = vec![Op::Warps(w)];
            ops.extend(blocks);
            // pointer 0 is `Ptr<f16>`
            ops.extend(views.into_iter().map(|v| Op::GlobalView(0, v)));
            ops.push(Op::BarAlloc(counts));
            ops
        });
    let sprinkled = prop_oneof![
        2 => Just(vec![]),
        2 => prop::collection::vec((any::<usize>(), wild_op()), 1),
        1 => prop::collection::vec((any::<usize>(), wild_op()), 2),
    ];
    let consts = prop::collection::vec(prop::sample::select(vec![64i64, 128, 256, 4096, 100]), 2);
    let edits = prop_oneof![
        19 => Just(vec![]),
        1 => prop::collection::vec(edit(), 1),
    ];
    (
        prelude,
        prop::collection::vec(chunk(), 1..5),
        sprinkled,
        consts,
        edits,
    )
        .prop_map(|(prelude, chunks, sprinkled, consts, edits)| {
            let mut ops = prelude;
            ops.extend(chunks.concat());
            for (at, op) in sprinkled {
                ops.insert(at % (ops.len() + 1), op);
            }
            Case { ops, consts, edits }
        })
}

fn case() -> impl Strategy<Value = Case> {
    prop_oneof![1 => wild_case(), 2 => tame_case()]
}

// ------------------------------------------------------------------------------------------
// Running a case.
// ------------------------------------------------------------------------------------------

fn dtype(d: Dt) -> DType {
    match d {
        Dt::F16 => DType::F16,
        Dt::Bf16 => DType::BF16,
        Dt::F32 => DType::F32,
        Dt::I32 => DType::I32,
    }
}

fn apply(p: &mut Program, edits: &[Edit]) {
    for e in edits {
        match *e {
            Edit::Register(i, d) if !p.registers.is_empty() => {
                let n = p.registers.len();
                p.registers[i % n].dtype = dtype(d);
            }
            Edit::Shared(i, d) if !p.shareds.is_empty() => {
                let n = p.shareds.len();
                p.shareds[i % n].dtype = dtype(d);
            }
            Edit::Global(i, d) if !p.globals.is_empty() => {
                let n = p.globals.len();
                p.globals[i % n].dtype = dtype(d);
            }
            _ => {}
        }
    }
}

/// How far a case got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// `trace` returned an error.
    TraceFailed,
    /// `compile_program` returned an error.
    CompileFailed,
    /// CUDA was emitted.
    Emitted,
}

fn run_case(case: &Case) -> Stage {
    let program = match tilus::trace(&Fuzz(case.ops.clone()), &case.consts) {
        Ok(p) => p,
        Err(e) => {
            std::hint::black_box(e.to_string());
            return Stage::TraceFailed;
        }
    };
    let mut program = program;
    apply(&mut program, &case.edits);
    std::hint::black_box(tilus::ir::print_program(&program));
    let (program, plan) = match tilus::passes::compile_program(program) {
        Ok(p) => p,
        Err(e) => {
            std::hint::black_box(e.to_string());
            return Stage::CompileFailed;
        }
    };
    std::hint::black_box(tilus::ir::print_program(&program));
    std::hint::black_box(tilus::codegen::emit_cuda(&program, &plan));
    Stage::Emitted
}

thread_local! {
    /// Whether panics on this thread are expected (caught and reported by the property).
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The last caught panic: message and location.
    static PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Installs a panic hook that records panics of [`catching`] instead of printing them (the
/// shrinker provokes many).
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(|q| q.get()) {
                let bt = if std::env::var_os("TILUS_FUZZ_BACKTRACE").is_some() {
                    format!("\n{}", std::backtrace::Backtrace::force_capture())
                } else {
                    String::new()
                };
                PANIC.with(|p| *p.borrow_mut() = format!("{info}{bt}"));
            } else {
                default(info)
            }
        }));
    });
}

/// Runs a case; a panic becomes an error carrying its message and location.
fn catching(case: &Case) -> Result<Stage, String> {
    install_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(|| run_case(case)));
    QUIET.with(|q| q.set(false));
    r.map_err(|_| PANIC.with(|p| p.borrow().clone()))
}

/// Where a panic happened: the first line of its report.
fn panic_site(report: &str) -> &str {
    report.lines().next().unwrap_or("")
}

/// Every program one step simpler than `ops`: an operation removed, or a loop or thread
/// group replaced by its body, at any depth.
fn simpler(ops: &[Op]) -> Vec<Vec<Op>> {
    let mut out = vec![];
    for (i, op) in ops.iter().enumerate() {
        let mut v = ops.to_vec();
        v.remove(i);
        out.push(v);
        if let Op::For(.., body) | Op::Group(_, body) = op {
            let mut v = ops.to_vec();
            v.splice(i..=i, body.iter().cloned());
            out.push(v);
            for b in simpler(body) {
                let mut v = ops.to_vec();
                match &mut v[i] {
                    Op::For(.., body) | Op::Group(_, body) => *body = b,
                    _ => unreachable!(),
                }
                out.push(v);
            }
        }
    }
    out
}

/// Greedily simplifies a case that panics while it still panics at the same place: proptest's
/// shrinking cannot drop the operations that tame cases are built around.
fn minimize(mut case: Case, report: &str) -> (Case, String) {
    let site = panic_site(report).to_string();
    let mut report = report.to_string();
    'outer: loop {
        let mut candidates: Vec<Case> = simpler(&case.ops)
            .into_iter()
            .map(|ops| Case {
                ops,
                ..case.clone()
            })
            .collect();
        for i in 0..case.edits.len() {
            let mut c = case.clone();
            c.edits.remove(i);
            candidates.push(c);
        }
        for c in candidates {
            if let Err(r) = catching(&c) {
                if panic_site(&r) == site {
                    (case, report) = (c, r);
                    continue 'outer;
                }
            }
        }
        return (case, report);
    }
}

/// The operations, one a line, bodies indented.
fn describe(ops: &[Op], depth: usize, out: &mut String) {
    for op in ops {
        let pad = "    ".repeat(depth + 1);
        match op {
            Op::For(a, b, c, body) => {
                out.push_str(&format!("{pad}For({a:?}, {b:?}, {c:?}) {{\n"));
                describe(body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            Op::Group(g, body) => {
                out.push_str(&format!("{pad}Group({g:?}) {{\n"));
                describe(body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            op => out.push_str(&format!("{pad}{op:?}\n")),
        }
    }
}

/// A case as text.
fn show(case: &Case) -> String {
    let mut s = String::from("ops:\n");
    describe(&case.ops, 0, &mut s);
    s + &format!("consts: {:?}\nedits: {:?}", case.consts, case.edits)
}

/// Runs one case and fails (with the panic and the minimized case) if the library panics.
#[track_caller]
fn no_panic(case: Case) -> Stage {
    match catching(&case) {
        Ok(s) => s,
        Err(e) => {
            let (case, e) = minimize(case, &e);
            panic!("the library panicked: {e}\n{}", show(&case))
        }
    }
}

/// The property: no generated program makes the library panic. Also reports (with
/// `--nocapture`) and checks how far programs get, so that the generator keeps reaching
/// layout inference, planning and emission. `TILUS_FUZZ_CASES` sets the number of cases.
#[test]
fn random_scripts_never_panic() {
    let cases: u32 = std::env::var("TILUS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    });
    let counts = RefCell::new([0u32; 3]);
    let result = runner.run(&case(), |case| {
        let stage = catching(&case).map_err(TestCaseError::fail)?;
        counts.borrow_mut()[stage as usize] += 1;
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, case)) => {
            no_panic(case);
            unreachable!("the shrunk case panics");
        }
        Err(e) => panic!("{e}"),
        Ok(()) => {}
    }
    let [trace_failed, compile_failed, emitted] = *counts.borrow();
    eprintln!(
        "{cases} cases: {trace_failed} failed to trace, {compile_failed} failed to compile, \
         {emitted} emitted CUDA"
    );
    let total = trace_failed + compile_failed + emitted;
    assert!(
        compile_failed + emitted >= total / 10 && emitted >= total / 50,
        "too few generated programs get past tracing or compile: the generator needs retuning"
    );
}

/// The name of every operation in `ops`, nested ones included.
fn op_names(ops: &[Op], out: &mut Vec<String>) {
    for op in ops {
        let d = format!("{op:?}");
        out.push(d.split(['(', ' ']).next().unwrap_or("").to_string());
        if let Op::For(.., body) | Op::Group(_, body) = op {
            op_names(body, out);
        }
    }
}

/// For tuning the generator: per operation, in how many programs it got to each stage; and
/// the most common errors. `cargo test -p tilus --test fuzz_scripts -- --ignored --nocapture`.
#[test]
#[ignore = "a report for tuning the generator, not a check"]
fn coverage_report() {
    use std::collections::BTreeMap;
    let mut runner = TestRunner::new(Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    });
    let per_op: RefCell<BTreeMap<String, [u32; 3]>> = RefCell::default();
    let errors: RefCell<BTreeMap<String, u32>> = RefCell::default();
    let _ = runner.run(&case(), |case| {
        let stage = no_panic(case.clone());
        let mut names = vec![];
        op_names(&case.ops, &mut names);
        names.sort();
        names.dedup();
        for n in names {
            per_op.borrow_mut().entry(n).or_default()[stage as usize] += 1;
        }
        let traced = tilus::trace(&Fuzz(case.ops.clone()), &case.consts);
        let diags = match traced {
            Err(tilus::Error::Script(d)) => d
                .into_iter()
                .map(|d| format!("trace: {}", d.message))
                .collect(),
            Err(e) => vec![format!("trace: {e}")],
            Ok(mut p) => {
                apply(&mut p, &case.edits);
                match tilus::passes::compile_program(p) {
                    Err(tilus::Error::Script(d)) => d.into_iter().map(|d| d.message).collect(),
                    Err(e) => vec![e.to_string()],
                    Ok(_) => vec![],
                }
            }
        };
        {
            {
                for d in diags {
                    let m: String = d.chars().take(70).collect();
                    *errors.borrow_mut().entry(m).or_default() += 1;
                }
            }
        }
        Ok(())
    });
    for (n, [t, c, e]) in per_op.borrow().iter() {
        eprintln!("{n:14} trace failed {t:5}  compile failed {c:5}  emitted {e:5}");
    }
    let mut errors: Vec<_> = errors.into_inner().into_iter().collect();
    errors.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (m, n) in errors.iter().take(40) {
        eprintln!("{n:5} {m}");
    }
}

// ------------------------------------------------------------------------------------------
// Programs the generator found (minimized), and extreme sizes it reaches only rarely.
// ------------------------------------------------------------------------------------------

const BAR0: BarRef = BarRef {
    arr: 0,
    ix: BarIx::Index(0),
};

/// Traces, compiles and emits `ops` (constants 64, 64): no panic, and how far it got.
fn stage(ops: Vec<Op>) -> Stage {
    no_panic(Case {
        ops,
        consts: vec![64, 64],
        edits: vec![],
    })
}

/// A thread group before `warps`: the builder cannot check its bounds yet, and the verifier
/// added `begin + count` in u32 (overflow).
#[test]
fn thread_group_past_u32_before_warps() {
    let ops = vec![
        Op::Group(Group::Threads(32, u32::MAX), vec![]),
        Op::Warps(4),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// A register tile of more than 2^63 elements overflowed the element count of its layout
/// (`RegisterLayout::local_size`) in the register check.
#[test]
fn tiles_of_more_than_2_pow_63_elements() {
    let h = i32::MAX;
    for dt in [Dt::F16, Dt::F32] {
        let ops = vec![Op::Warps(4), Op::Register(dt, vec![h, h, h, h], Init::Zero)];
        assert_eq!(stage(ops), Stage::CompileFailed);
        let ops = vec![
            Op::Warps(4),
            Op::Shared(dt, vec![h, h, h]),
            Op::LoadShared(plain(0)),
        ];
        assert_eq!(stage(ops), Stage::CompileFailed);
        let ops = vec![
            Op::Warps(1),
            Op::Register(dt, vec![h; 3], Init::Zero),
            Op::Cast(plain(0), Dt::F16),
            Op::GlobalView(1, vec![Sc::Lit(h); 3]),
            Op::StoreGlobal(0, plain(0), vec![Sc::Lit(0); 3]),
        ];
        assert_eq!(stage(ops), Stage::CompileFailed);
    }
}

/// The strides of a TMA source view whose extents multiply past i64 overflowed in the
/// verifier.
#[test]
fn tma_from_a_view_whose_strides_overflow() {
    let ops = vec![
        Op::Warps(4),
        Op::GlobalView(0, vec![Sc::Lit(i32::MAX); 5]),
        Op::Shared(Dt::F16, vec![64; 5]),
        Op::BarAlloc(vec![1]),
        Op::Tma(0, plain(0), vec![Sc::Lit(i32::MAX); 5], BAR0),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// A shared tile of more than 2^64 bytes counts as `u64::MAX` bytes; placing anything after
/// it overflowed the planner's offsets.
#[test]
fn shared_planning_after_a_tile_too_large_to_count() {
    let ops = vec![
        Op::Warps(4),
        Op::Shared(Dt::F16, vec![1 << 16, 1 << 20, 1 << 30]),
        Op::BarAlloc(vec![1]),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
    let ops = vec![
        Op::Warps(4),
        Op::Shared(Dt::F32, vec![i32::MAX; 3]),
        Op::Shared(Dt::F32, vec![i32::MAX; 3]),
        Op::Shared(Dt::F16, vec![64, 64]),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// Tiles just under 2^31 elements and views with extents near `i32::MAX` reach every pass.
#[test]
fn extreme_sizes_never_panic() {
    let (h, max) = (1 << 15, Sc::Lit(i32::MAX));
    let cases = vec![
        vec![Op::Register(Dt::F32, vec![h, h], Init::Zero)],
        vec![Op::Register(Dt::F32, vec![1 << 30], Init::Zero)],
        vec![Op::Register(Dt::F32, vec![1 << 10; 3], Init::Zero)],
        vec![Op::Shared(Dt::F32, vec![h, h]); 3],
        vec![Op::Shared(Dt::F32, vec![h, h]), Op::LoadShared(plain(0))],
        vec![
            Op::Register(Dt::F32, vec![h, h], Init::Zero),
            Op::Cast(plain(0), Dt::F16),
        ],
        vec![
            Op::GlobalView(5, vec![max.clone(); 2]),
            Op::Register(Dt::F32, vec![h, h], Init::Zero),
            Op::StoreGlobal(0, plain(0), vec![max.clone(); 2]),
        ],
        vec![
            Op::GlobalView(5, vec![max.clone(); 5]),
            Op::Register(Dt::F32, vec![4; 5], Init::Zero),
            Op::StoreGlobal(0, plain(0), vec![max.clone(); 5]),
        ],
        vec![
            Op::Shared(Dt::F16, vec![h, h]),
            Op::Shared(Dt::F16, vec![h, h]),
            Op::Register(Dt::F32, vec![h, h], Init::Zero),
            Op::Group(
                Group::FourWarps(0),
                vec![Op::WgMma(
                    WgA::Shared(plain(1)),
                    T {
                        idx: 0,
                        transposed: true,
                    },
                    plain(0),
                )],
            ),
        ],
        vec![
            Op::GlobalView(0, vec![max.clone(); 3]),
            Op::Shared(Dt::F16, vec![64; 3]),
            Op::BarAlloc(vec![1]),
            Op::Group(
                Group::SingleThread,
                vec![
                    Op::ExpectTx(BAR0, Bytes::Nbytes(vec![0])),
                    Op::Tma(0, plain(0), vec![max.clone(); 3], BAR0),
                ],
            ),
            Op::Wait(BAR0, Sc::Lit(0)),
        ],
    ];
    for ops in cases {
        let mut all = vec![Op::Warps(4)];
        all.extend(ops);
        stage(all);
    }
}

/// Not a panic but a hang: layout inference compared the two layouts that a `dot` asks of a
/// tile used as both operands element by element (`RegisterLayout::same_mapping`), which for
/// a 2^30-element tile took 15 s and for larger ones (2-D tiles may have up to 2^62 elements)
/// never ended. Such tiles need more registers than a thread has, which the register check
/// reports; inference no longer compares their layouts.
#[test]
fn conflicting_layouts_of_huge_tiles_fail_quickly() {
    for h in [1 << 15, 1 << 20, i32::MAX] {
        let start = std::time::Instant::now();
        let s = stage(vec![
            Op::Warps(4),
            Op::Register(Dt::F16, vec![h, h], Init::Zero),
            Op::Register(Dt::F32, vec![h, h], Init::Zero),
            // the f16 tile is both operands
            Op::Dot(plain(1), plain(0), plain(0), plain(0)),
        ]);
        assert_eq!(s, Stage::CompileFailed);
        let took = start.elapsed();
        assert!(took.as_secs() < 2, "[{h}, {h}] took {took:?}");
    }
}

/// Not a panic, but programs that would compile into CUDA that NVRTC rejects: a scalar or a
/// register tile used after the loop or thread group that declared it must be a diagnostic
/// (the emitted code would name a variable that is out of scope there).
#[test]
fn values_used_outside_their_scope_are_diagnosed() {
    let after_loop = |body: Vec<Op>, then: Vec<Op>| {
        let mut ops = vec![
            Op::Warps(4),
            Op::For(Sc::Lit(0), Sc::Lit(4), Sc::Lit(1), body),
        ];
        ops.extend(then);
        ops
    };
    let cases = vec![
        // the loop index after its loop
        after_loop(vec![], vec![Op::Let(LetKind::LetI32, Sc::Val(0))]),
        // a variable declared in a loop, assigned after it
        after_loop(
            vec![Op::Let(LetKind::VarI32, Sc::Lit(0))],
            vec![Op::Assign(To::Mutable(0), Sc::Lit(1))],
        ),
        // a register tile declared in a loop, stored after it
        after_loop(
            vec![Op::Register(Dt::F32, vec![4], Init::One)],
            vec![
                Op::GlobalView(5, vec![Sc::Lit(4)]),
                Op::StoreGlobal(0, plain(0), vec![Sc::Lit(0)]),
            ],
        ),
        // a scalar declared in a thread group, read after it
        vec![
            Op::Warps(4),
            Op::Group(
                Group::SingleThread,
                vec![Op::Let(LetKind::LetI32, Sc::Lit(3))],
            ),
            Op::Let(LetKind::LetI32, Sc::Val(0)),
        ],
    ];
    for ops in cases {
        let shown = show(&Case {
            ops: ops.clone(),
            consts: vec![],
            edits: vec![],
        });
        assert_eq!(stage(ops), Stage::CompileFailed, "{shown}");
    }
}
