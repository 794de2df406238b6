//! Rust types that can be tensor elements.

use crate::ir::DType;

/// A Rust type with a matching [`DType`].
///
/// ```compile_fail,E0277
/// # use tilus::prelude::*;
/// # fn body(k: &mut Kernel) {
/// let t = k.register_tensor::<f64>([16, 16], 0.0); // no f64 tiles
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of tiles",
    label = "not a tile element type",
    note = "tiles hold f16, bf16, f32, i32, u32, bool (`half::f16`, `half::bf16`) or the low-precision types of `tilus::lowp`"
)]
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
/// Bytes: the element of a buffer of packed low-precision codes
/// ([`crate::lang::Kernel::global_view_packed`]), or 8-bit integers.
impl Element for u8 {
    const DTYPE: DType = DType::U8;
}
impl Element for i8 {
    const DTYPE: DType = DType::I8;
}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
}

impl<const B: u8> Element for crate::lowp::Int<B> {
    const DTYPE: DType = <Self as crate::lowp::LowpElement>::DTYPE;
}
impl<const B: u8> Element for crate::lowp::UInt<B> {
    const DTYPE: DType = <Self as crate::lowp::LowpElement>::DTYPE;
}
impl<const E: u8, const M: u8> Element for crate::lowp::Float<E, M> {
    const DTYPE: DType = <Self as crate::lowp::LowpElement>::DTYPE;
}
