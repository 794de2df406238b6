//! Replaying a program: the script [`Fuzz`], whose body runs the operations one by one on a
//! [`Replay`] that keeps every handle created so far. Generic builder methods are
//! instantiated at run time from the handles' element types (f16, bf16, f32, i32).

use tilus::lang::Element;
use tilus::prelude::*;

use crate::model::{BarIx, BarRef, Bin, Op, Sc, T};

/// Runtime scalars, compile-time constants and one read-only and one writable pointer of
/// each element type.
pub type Args = (
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
pub struct Fuzz(pub Vec<Op>);

impl Script for Fuzz {
    type Args = Args;
    fn body(
        &self,
        k: &mut Kernel,
        (r0, r1, c0, c1, p0, p1, p2, p3, p4, p5, p6, p7): Handles<Args>,
    ) {
        // one block unless the program sets a grid (a script must say how many it launches)
        k.blocks([1]);
        let b = k.block_idx();
        let mut r = Replay {
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
            masks: vec![],
            bars: vec![],
        };
        r.run(k, &self.0);
    }
}

macro_rules! typed_handle {
    ($name:ident, $handle:ident) => {
        /// A handle of any element type.
        #[derive(Clone, Copy)]
        pub enum $name {
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
pub(crate) use on;

/// Runs `$body` with `$T` the element type named by `$dt`.
macro_rules! by_dt {
    ($dt:expr, |$T:ident| $body:expr) => {
        match $dt {
            $crate::model::Dt::F16 => {
                type $T = f16;
                $body
            }
            $crate::model::Dt::Bf16 => {
                type $T = bf16;
                $body
            }
            $crate::model::Dt::F32 => {
                type $T = f32;
                $body
            }
            $crate::model::Dt::I32 => {
                type $T = i32;
                $body
            }
        }
    };
}
pub(crate) use by_dt;

/// An element type of the fuzzer: wraps and unwraps typed handles.
pub trait El: Element {
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
pub fn pick<X: Copy>(items: &[X], i: usize) -> Option<X> {
    (!items.is_empty()).then(|| items[items.len() - 1 - i % items.len()])
}

/// Replays operations on a kernel, keeping every handle created so far.
pub struct Replay {
    pub block_idx: [Scalar; 3],
    pub runtime: [Val; 2],
    pub consts: [Val; 2],
    pub ptrs: [P; 8],
    pub vals: Vec<Val>,
    /// The scalars declared with `var_i32` / `var_u32`.
    pub muts: Vec<Val>,
    pub globals: Vec<G>,
    pub shareds: Vec<S>,
    pub regs: Vec<R>,
    /// Boolean register tiles (comparisons, `any`, `all`), for conditions.
    pub masks: Vec<RegisterTensor<bool>>,
    pub bars: Vec<Barriers>,
}

impl Replay {
    pub fn run(&mut self, k: &mut Kernel, ops: &[Op]) {
        for op in ops {
            op.replay(self, k);
        }
    }

    pub fn scalar(&self, s: &Sc) -> Scalar {
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
                    Bin::Le => a.le(b),
                    Bin::Gt => a.gt(b),
                    Bin::Ge => a.ge(b),
                    Bin::Ne => a.ne_(b),
                    Bin::LAnd => a.and(b),
                    Bin::LOr => a.or(b),
                }
            }
            Sc::Cdiv(a, b) => cdiv(self.scalar(a), self.scalar(b)),
            Sc::Not(a) => self.scalar(a).not_(),
            Sc::LitF(bits) => Scalar::from(f32::from_bits(*bits) as f64),
            Sc::Neg(a) => -self.scalar(a),
            Sc::Cast(true, a) => self.scalar(a).cast::<f32>(),
            Sc::Cast(false, a) => self.scalar(a).cast::<i32>(),
        }
    }

    pub fn scalars(&self, s: &[Sc]) -> Vec<Scalar> {
        s.iter().map(|s| self.scalar(s)).collect()
    }

    pub fn shared(&self, t: T) -> Option<S> {
        let s = pick(&self.shareds, t.idx)?;
        Some(if t.transposed {
            on!(s, S, |x: E| E::s(x.transpose()))
        } else {
            s
        })
    }

    pub fn reg(&self, t: T) -> Option<R> {
        let r = pick(&self.regs, t.idx)?;
        Some(if t.transposed {
            on!(r, R, |x: E| E::r(x.transpose()))
        } else {
            r
        })
    }

    /// A shared tile of element type `E`, when there is one.
    pub fn shared_of<E: El>(&self, t: T) -> Option<SharedTensor<E>> {
        let all: Vec<_> = self.shareds.iter().filter_map(|s| E::get_s(*s)).collect();
        let s = pick(&all, t.idx)?;
        Some(if t.transposed { s.transpose() } else { s })
    }

    /// A register tile of element type `E`, when there is one.
    pub fn reg_of<E: El>(&self, t: T) -> Option<RegisterTensor<E>> {
        let all: Vec<_> = self.regs.iter().filter_map(|r| E::get_r(*r)).collect();
        let r = pick(&all, t.idx)?;
        Some(if t.transposed { r.transpose() } else { r })
    }

    pub fn barrier(&self, b: &BarRef) -> Option<Barrier> {
        let n = self.bars.len();
        let arr = &self.bars[n.checked_sub(1)? - b.arr % n];
        Some(match b.ix {
            BarIx::Index(i) => arr[i],
            BarIx::At(v) => arr.at(pick(&self.vals, v).unwrap_or(Val::constant(0))),
            BarIx::Lit(i) => arr.at(Val::constant(i)),
        })
    }
}
