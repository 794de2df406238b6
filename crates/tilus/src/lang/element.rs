//! Rust types that can be tensor elements.

use crate::ir::DType;

/// A Rust type with a matching [`DType`].
pub trait Element: Copy + Send + Sync + 'static {
    /// The IR element type.
    const DTYPE: DType;
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
}
