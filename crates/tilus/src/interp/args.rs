//! Host-side argument values for the interpreter: integers and host slices viewed as bytes.
//! The interpreter reads buffers as bytes (TMA copies bytes) and writes outputs back through
//! the mutable slices when the launch is done. (How a script's typed argument tuple becomes
//! these values is the composition's business: `jit/interpret_args.rs`.)

use crate::ir::DType;

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for u8 {}
    impl Sealed for i8 {}
    impl Sealed for crate::lowp::I8 {}
    impl Sealed for crate::lowp::U8 {}
    impl Sealed for crate::lowp::F8E4M3 {}
    impl Sealed for crate::lowp::F8E5M2 {}
}

/// An element type whose host slices the interpreter may view as plain bytes: no padding, and
/// every bit pattern is a valid value. Sealed: implemented for `f16`, `bf16`, `f32`, `i32`,
/// `u32` and the byte-wide low-precision types (`tilus::lowp::{I8, U8, F8E4M3, F8E5M2}`, a
/// code a byte), the element types of the language; a user's own type could not promise this.
pub trait Pod: Copy + sealed::Sealed {
    /// The element type.
    const DTYPE: DType;
}
impl Pod for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Pod for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
impl Pod for f32 {
    const DTYPE: DType = DType::F32;
}
impl Pod for i32 {
    const DTYPE: DType = DType::I32;
}
impl Pod for u32 {
    const DTYPE: DType = DType::U32;
}
impl Pod for u8 {
    const DTYPE: DType = DType::U8;
}
impl Pod for i8 {
    const DTYPE: DType = DType::I8;
}
impl Pod for crate::lowp::I8 {
    const DTYPE: DType = DType::I8;
}
impl Pod for crate::lowp::U8 {
    const DTYPE: DType = DType::U8;
}
impl Pod for crate::lowp::F8E4M3 {
    const DTYPE: DType = DType::F8E4M3;
}
impl Pod for crate::lowp::F8E5M2 {
    const DTYPE: DType = DType::F8E5M2;
}

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

    /// Views bytes of low-precision codes of type `T` (one a byte for 8-bit types, packed
    /// for narrower ones: [`crate::lowp::pack`]) as an interpreter buffer.
    pub fn lowp<T: crate::lowp::LowpElement>(bytes: &'a [u8]) -> HostBuffer<'a> {
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
        self.bytes.len() * 8 / self.dtype.bits() as usize
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

    /// Views bytes of low-precision codes of type `T` (see [`HostBuffer::lowp`]) as a
    /// writable interpreter buffer.
    pub fn lowp<T: crate::lowp::LowpElement>(bytes: &'a mut [u8]) -> HostBufferMut<'a> {
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
        self.bytes.len() * 8 / self.dtype.bits() as usize
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

/// One argument value for the interpreter (the parallel of [`crate::ir::HostValue`]).
#[derive(Debug)]
pub enum InterpValue<'a> {
    /// An integer scalar (runtime or constant).
    Int(i64),
    /// A floating-point scalar (`f32`, `f16`, `bf16` arguments).
    Float(f64),
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

    /// The same value, borrowed for a shorter time (buffers keep their bytes).
    pub(crate) fn reborrow(&mut self) -> InterpValue<'_> {
        match self {
            InterpValue::Int(v) => InterpValue::Int(*v),
            InterpValue::Float(v) => InterpValue::Float(*v),
            InterpValue::Buffer(b) => InterpValue::Buffer(HostBuffer {
                dtype: b.dtype,
                bytes: b.bytes,
            }),
            InterpValue::BufferMut(b) => InterpValue::BufferMut(HostBufferMut {
                dtype: b.dtype,
                bytes: &mut *b.bytes,
            }),
        }
    }

    /// A writable buffer of `dtype` elements over raw bytes (a workspace the run owns).
    pub(crate) fn bytes_mut(dtype: DType, bytes: &'a mut [u8]) -> InterpValue<'a> {
        InterpValue::BufferMut(HostBufferMut { dtype, bytes })
    }

    /// The integer, when this is a scalar.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            InterpValue::Int(v) => Some(*v),
            _ => None,
        }
    }
}
