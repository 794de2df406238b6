//! Script arguments: what the body sees for each argument, and what the host passes.
//!
//! `Script::Args` is a tuple of argument kinds:
//! - `i32` / `u32`: a runtime scalar; new values never recompile. The body sees a [`Val`].
//! - [`Const<i32>`]: a compile-time constant; a new value is a new specialization. The body
//!   sees a constant [`Val`].
//! - `f32` / `f16` / `bf16`: a runtime floating-point scalar (a scale, an epsilon); the body
//!   sees a [`Val`] of that type, usable in tile expressions and scalar float arithmetic.
//! - [`Ptr<T>`] / [`PtrMut<T>`]: a device buffer the kernel reads / may write. The body sees a
//!   [`PtrVal<T>`]; the host passes `&CudaSlice<T>` / `&mut CudaSlice<T>`.

use super::{Element, Kernel, Val};
use crate::ir::{DType, HostValue, ParamKind};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::marker::PhantomData;

/// A compile-time constant argument.
pub struct Const<T>(PhantomData<T>);
/// A read-only device buffer argument.
pub struct Ptr<T>(PhantomData<T>);
/// A device buffer argument the kernel may write.
pub struct PtrMut<T>(PhantomData<T>);

/// The body's handle of a pointer argument.
pub struct PtrVal<T> {
    pub(crate) var: crate::ir::VarId,
    _t: PhantomData<T>,
}

impl<T> Clone for PtrVal<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for PtrVal<T> {}

impl<T> PtrVal<T> {
    /// The handle of a pointer variable the builder declared.
    pub(crate) fn of_var(var: crate::ir::VarId) -> PtrVal<T> {
        PtrVal {
            var,
            _t: PhantomData,
        }
    }
}

/// One argument kind of a script.
pub trait Arg {
    /// What the body sees.
    type Handle;
    /// What the host passes at launch.
    type Host<'a>;
    /// How the argument is passed, given its constant value for constants.
    fn kind(value: Option<i64>) -> ParamKind;
    /// Whether the argument is a compile-time constant.
    const IS_CONST: bool = false;
    /// Whether the argument is a runtime scalar (bucketed by the autotuner).
    const IS_RUNTIME_SCALAR: bool = false;
    /// Whether the argument is a buffer the kernel may write.
    const IS_MUT_PTR: bool = false;
    /// Declares the argument in the kernel under construction.
    fn declare(k: &mut Kernel, name: &str, index: usize, value: Option<i64>) -> Self::Handle;
    /// Reads the host value.
    fn host_value(h: &Self::Host<'_>, stream: &CudaStream) -> HostValue;
}

macro_rules! scalar_arg {
    ($t:ty, $d:expr) => {
        impl Arg for $t {
            type Handle = Val;
            type Host<'a> = $t;
            const IS_RUNTIME_SCALAR: bool = true;
            fn kind(_: Option<i64>) -> ParamKind {
                ParamKind::Scalar($d)
            }
            fn declare(k: &mut Kernel, name: &str, index: usize, _: Option<i64>) -> Val {
                k.declare_param(name, index, Self::kind(None))
            }
            fn host_value(h: &$t, _: &CudaStream) -> HostValue {
                HostValue::Int(*h as i64)
            }
        }
        impl Arg for Const<$t> {
            type Handle = Val;
            type Host<'a> = $t;
            const IS_CONST: bool = true;
            fn kind(v: Option<i64>) -> ParamKind {
                ParamKind::Const($d, v.unwrap_or(0))
            }
            fn declare(k: &mut Kernel, name: &str, index: usize, v: Option<i64>) -> Val {
                k.declare_param(name, index, Self::kind(v))
            }
            fn host_value(h: &$t, _: &CudaStream) -> HostValue {
                HostValue::Int(*h as i64)
            }
        }
    };
}

scalar_arg!(i32, DType::I32);
scalar_arg!(u32, DType::U32);

macro_rules! float_arg {
    ($t:ty, $d:expr, $to_f64:expr) => {
        impl Arg for $t {
            type Handle = Val;
            type Host<'a> = $t;
            // not a size: the autotuner does not bucket it
            fn kind(_: Option<i64>) -> ParamKind {
                ParamKind::Scalar($d)
            }
            fn declare(k: &mut Kernel, name: &str, index: usize, _: Option<i64>) -> Val {
                k.declare_param(name, index, Self::kind(None))
            }
            fn host_value(h: &$t, _: &CudaStream) -> HostValue {
                HostValue::Float($to_f64(*h))
            }
        }
    };
}

float_arg!(f32, DType::F32, f64::from);
float_arg!(half::f16, DType::F16, half::f16::to_f64);
float_arg!(half::bf16, DType::BF16, half::bf16::to_f64);

fn slice_value<T>(s: &CudaSlice<T>, stream: &CudaStream) -> HostValue {
    let (ptr, _sync) = s.device_ptr(stream);
    HostValue::Ptr {
        ptr,
        bytes: s.num_bytes(),
    }
}

impl<T: Element> Arg for Ptr<T> {
    type Handle = PtrVal<T>;
    type Host<'a> = &'a CudaSlice<T>;
    fn kind(_: Option<i64>) -> ParamKind {
        ParamKind::Pointer {
            dtype: T::DTYPE,
            mutable: false,
        }
    }
    fn declare(k: &mut Kernel, name: &str, index: usize, _: Option<i64>) -> PtrVal<T> {
        let v = k.declare_param(name, index, Self::kind(None));
        PtrVal {
            var: v.var_id().expect("pointer params are variables"),
            _t: PhantomData,
        }
    }
    fn host_value(h: &&CudaSlice<T>, stream: &CudaStream) -> HostValue {
        slice_value(h, stream)
    }
}

impl<T: Element> Arg for PtrMut<T> {
    type Handle = PtrVal<T>;
    type Host<'a> = &'a mut CudaSlice<T>;
    const IS_MUT_PTR: bool = true;
    fn kind(_: Option<i64>) -> ParamKind {
        ParamKind::Pointer {
            dtype: T::DTYPE,
            mutable: true,
        }
    }
    fn declare(k: &mut Kernel, name: &str, index: usize, _: Option<i64>) -> PtrVal<T> {
        let v = k.declare_param(name, index, Self::kind(None));
        PtrVal {
            var: v.var_id().expect("pointer params are variables"),
            _t: PhantomData,
        }
    }
    fn host_value(h: &&mut CudaSlice<T>, stream: &CudaStream) -> HostValue {
        slice_value(h, stream)
    }
}

/// A tuple of [`Arg`]s: a script's argument list.
pub trait ArgList {
    /// The body's handles, as a tuple.
    type Handles;
    /// The host's values, as a tuple.
    type Host<'a>;
    /// Number of arguments.
    const LEN: usize;
    /// Positions of the compile-time constants.
    fn const_positions() -> Vec<usize>;
    /// Positions of the runtime scalars.
    fn runtime_scalar_positions() -> Vec<usize>;
    /// Positions of the buffers the kernel may write.
    fn mutable_positions() -> Vec<usize>;
    /// Declares every argument; `consts` has one value per constant, in order.
    fn declare(k: &mut Kernel, names: &[String], consts: &[i64]) -> Self::Handles;
    /// Reads every host value, in order.
    fn host_values(h: &Self::Host<'_>, stream: &CudaStream) -> Vec<HostValue>;

    /// The values of the compile-time constants, in order, given the value of the argument at
    /// each position (0 where it has none): what selects a specialization.
    fn const_values(value: impl Fn(usize) -> Option<i64>) -> Vec<i64> {
        Self::const_positions()
            .into_iter()
            .map(|i| value(i).unwrap_or(0))
            .collect()
    }
}

/// The handles the body of a script with arguments `A` receives.
pub type Handles<A> = <A as ArgList>::Handles;
/// The values the host passes to a script with arguments `A`.
pub type HostArgs<'a, A> = <A as ArgList>::Host<'a>;

macro_rules! tuple_args {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Arg),+> ArgList for ($($name,)+) {
            type Handles = ($($name::Handle,)+);
            type Host<'a> = ($($name::Host<'a>,)+);
            const LEN: usize = [$(stringify!($name)),+].len();
            fn const_positions() -> Vec<usize> {
                let flags = [$($name::IS_CONST),+];
                flags.iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i).collect()
            }
            fn runtime_scalar_positions() -> Vec<usize> {
                let flags = [$($name::IS_RUNTIME_SCALAR),+];
                flags.iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i).collect()
            }
            fn mutable_positions() -> Vec<usize> {
                let flags = [$($name::IS_MUT_PTR),+];
                flags.iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i).collect()
            }
            fn declare(k: &mut Kernel, names: &[String], consts: &[i64]) -> Self::Handles {
                let mut next_const = consts.iter().copied();
                ($({
                    let v = if $name::IS_CONST { next_const.next() } else { None };
                    $name::declare(k, &names[$idx], $idx, v)
                },)+)
            }
            fn host_values(h: &Self::Host<'_>, stream: &CudaStream) -> Vec<HostValue> {
                vec![$($name::host_value(&h.$idx, stream)),+]
            }
        }
    };
}

tuple_args!(A 0);
tuple_args!(A 0, B 1);
tuple_args!(A 0, B 1, C 2);
tuple_args!(A 0, B 1, C 2, D 3);
tuple_args!(A 0, B 1, C 2, D 3, E 4);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17, S 18);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17, S 18, U 19);
