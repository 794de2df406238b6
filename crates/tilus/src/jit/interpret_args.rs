//! A script's typed argument tuple as the interpreter takes it: `i32`/`u32` scalars and
//! `Const` values stay integers, `Ptr<T>` becomes `&[T]` and `PtrMut<T>` becomes `&mut [T]`
//! (the parallel of [`crate::lang::ArgList::host_values`] for host slices instead of device
//! buffers).

use crate::interp::{InterpValue, Pod};
use crate::lang::{Arg, ArgList, Const, Element, Ptr, PtrMut};

/// An argument kind the interpreter can take from the host: the parallel of [`Arg::Host`].
pub trait InterpArg: Arg {
    /// What the host passes to the interpreter: an integer or a host slice.
    type Value<'a>;
    /// The untyped value.
    fn value<'s>(v: &'s mut Self::Value<'_>) -> InterpValue<'s>;
}

macro_rules! scalar_interp {
    ($t:ty) => {
        impl InterpArg for $t {
            type Value<'a> = $t;
            fn value<'s>(v: &'s mut $t) -> InterpValue<'s> {
                InterpValue::Int(*v as i64)
            }
        }
        impl InterpArg for Const<$t> {
            type Value<'a> = $t;
            fn value<'s>(v: &'s mut $t) -> InterpValue<'s> {
                InterpValue::Int(*v as i64)
            }
        }
    };
}

scalar_interp!(i32);
scalar_interp!(u32);

macro_rules! float_interp {
    ($t:ty, $to_f64:expr) => {
        impl InterpArg for $t {
            type Value<'a> = $t;
            fn value<'s>(v: &'s mut $t) -> InterpValue<'s> {
                InterpValue::Float($to_f64(*v))
            }
        }
    };
}

float_interp!(f32, f64::from);
float_interp!(half::f16, half::f16::to_f64);
float_interp!(half::bf16, half::bf16::to_f64);

impl<T: Pod + Element> InterpArg for Ptr<T> {
    type Value<'a> = &'a [T];
    fn value<'s>(v: &'s mut &[T]) -> InterpValue<'s> {
        InterpValue::buffer(v)
    }
}

impl<T: Pod + Element> InterpArg for PtrMut<T> {
    type Value<'a> = &'a mut [T];
    fn value<'s>(v: &'s mut &mut [T]) -> InterpValue<'s> {
        InterpValue::buffer_mut(v)
    }
}

/// A script's argument list as the interpreter takes it: the parallel of
/// [`ArgList::host_values`], implemented for every tuple of [`InterpArg`]s.
pub trait InterpArgList: ArgList {
    /// The host's values, as a tuple: integers and host slices.
    type Values<'a>;
    /// Every value, in order.
    fn values<'s>(v: &'s mut Self::Values<'_>) -> Vec<InterpValue<'s>>;
}

/// The values the host passes to the interpreter for a script with arguments `A`, e.g.
/// `(i32, i32, i32, &[f16], &[f16], &mut [f16])` for v0.
pub type InterpArgs<'a, A> = <A as InterpArgList>::Values<'a>;

macro_rules! tuple_interp {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: InterpArg),+> InterpArgList for ($($name,)+) {
            type Values<'a> = ($($name::Value<'a>,)+);
            fn values<'s>(v: &'s mut Self::Values<'_>) -> Vec<InterpValue<'s>> {
                vec![$($name::value(&mut v.$idx)),+]
            }
        }
    };
}

tuple_interp!(A 0);
tuple_interp!(A 0, B 1);
tuple_interp!(A 0, B 1, C 2);
tuple_interp!(A 0, B 1, C 2, D 3);
tuple_interp!(A 0, B 1, C 2, D 3, E 4);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17, S 18);
tuple_interp!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16, R 17, S 18, U 19);
