//! Host-side arguments for the interpreter: the parallel of [`crate::lang::ArgList::host_values`]
//! for host slices instead of device buffers.
//!
//! A script's `Args` tuple maps to a tuple of host values: `i32`/`u32` scalars and `Const`
//! values stay integers, `Ptr<T>` becomes `&[T]` and `PtrMut<T>` becomes `&mut [T]`. The
//! interpreter reads buffers as bytes (TMA copies bytes) and writes outputs back through the
//! mutable slices when the launch is done.

use crate::ir::DType;
use crate::lang::{Arg, ArgList, Const, Element, Ptr, PtrMut};

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
}

/// An element type whose host slices the interpreter may view as plain bytes: no padding, and
/// every bit pattern is a valid value. Sealed: implemented for `f16`, `bf16`, `f32`, `i32` and
/// `u32`, the types [`Element`] has; a user's own `Element` type could not promise this.
pub trait Pod: Element + sealed::Sealed {}
impl Pod for half::f16 {}
impl Pod for half::bf16 {}
impl Pod for f32 {}
impl Pod for i32 {}
impl Pod for u32 {}

/// A read-only host buffer: its element type and its bytes (native byte order).
#[derive(Clone, Copy, Debug)]
pub struct HostBuffer<'a> {
    dtype: DType,
    bytes: &'a [u8],
}

impl<'a> HostBuffer<'a> {
    /// Views a host slice as an interpreter buffer.
    pub fn new<T: Pod>(s: &'a [T]) -> HostBuffer<'a> {
        let len = std::mem::size_of_val(s);
        // SAFETY: `T: Pod` is one of f16, bf16, f32, i32, u32: plain data without padding, so
        // its `len` bytes are initialized; u8 has alignment 1; the borrow keeps `s` alive and
        // unmodified for 'a.
        let bytes = unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), len) };
        HostBuffer {
            dtype: T::DTYPE,
            bytes,
        }
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.nbytes() as usize
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// A host buffer the kernel may write: its element type and its bytes (native byte order).
#[derive(Debug)]
pub struct HostBufferMut<'a> {
    dtype: DType,
    bytes: &'a mut [u8],
}

impl<'a> HostBufferMut<'a> {
    /// Views a mutable host slice as an interpreter buffer.
    pub fn new<T: Pod>(s: &'a mut [T]) -> HostBufferMut<'a> {
        let len = std::mem::size_of_val(s);
        // SAFETY: as in `HostBuffer::new`; in addition every bit pattern is a valid `T` (no
        // niches, no invalid values), so any bytes written here leave valid elements, and the
        // unique borrow is carried over to the byte slice for 'a.
        let bytes = unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), len) };
        HostBufferMut {
            dtype: T::DTYPE,
            bytes,
        }
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.nbytes() as usize
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }
}

/// One argument value for the interpreter, after extraction from the typed tuple (the parallel
/// of [`crate::lang::HostValue`]).
#[derive(Debug)]
pub enum InterpValue<'a> {
    /// A scalar (runtime or constant).
    Int(i64),
    /// A buffer the kernel reads.
    Buffer(HostBuffer<'a>),
    /// A buffer the kernel may write.
    BufferMut(HostBufferMut<'a>),
}

impl<'a> InterpValue<'a> {
    /// A read-only buffer argument.
    pub fn buffer<T: Pod>(s: &'a [T]) -> InterpValue<'a> {
        InterpValue::Buffer(HostBuffer::new(s))
    }

    /// A writable buffer argument.
    pub fn buffer_mut<T: Pod>(s: &'a mut [T]) -> InterpValue<'a> {
        InterpValue::BufferMut(HostBufferMut::new(s))
    }

    /// The integer, when this is a scalar.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            InterpValue::Int(v) => Some(*v),
            _ => None,
        }
    }
}

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

impl<T: Pod> InterpArg for Ptr<T> {
    type Value<'a> = &'a [T];
    fn value<'s>(v: &'s mut &[T]) -> InterpValue<'s> {
        InterpValue::buffer(v)
    }
}

impl<T: Pod> InterpArg for PtrMut<T> {
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
