//! Element types of scalars and tensors.

use std::fmt;

/// The type of a scalar value or of a tensor's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// A predicate.
    Bool,
    /// 32-bit signed integer: indices, sizes, offsets.
    I32,
    /// 32-bit unsigned integer: phases, bit patterns.
    U32,
    /// 64-bit signed integer.
    I64,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
}

impl DType {
    /// Width of one element in bits.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 8,
            DType::F16 | DType::BF16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::U64 => 64,
        }
    }

    /// Width of one element in bytes.
    pub fn nbytes(self) -> u32 {
        self.bits() / 8
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32)
    }

    /// Whether the type is an integer type.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::U32 | DType::I64 | DType::U64)
    }

    /// The name used by the IR printer and in diagnostics.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
