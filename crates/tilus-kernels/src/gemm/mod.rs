//! Matrix products on the tensor cores: `C = A · Bᵀ` with A `[M, K]` and B `[N, K]` row-major,
//! f16 or bf16 in, f32 accumulation.
//!
//! [`Gemm`] is the entry point for any M: it picks per shape between the persistent,
//! warp-specialized kernel ([`persistent`], large problems) and split-K ([`split_k`], small
//! M). [`epilogue`] fuses `C = act(alpha · A · Bᵀ + beta · D + bias)` into the persistent
//! kernel; [`stream_k`] splits the last wave's tiles by K steps. The rest are the persistent
//! kernel's pieces, which the tutorial series' steps reuse: its ring ([`cooperative`],
//! `pair.rs`), its consumers' turns (`pingpong.rs`), its main loop ([`products`]) and its
//! per-tile epilogue (`tile_epilogue.rs`), the last three inside the crate.

pub mod cooperative;
pub mod epilogue;
pub mod fp8;
pub mod general;
pub mod matmuls;
pub mod operand;
pub(crate) mod pair;
pub mod persistent;
mod picker;
pub(crate) mod pingpong;
pub mod products;
pub(crate) mod promote;
pub mod ring_operands;
pub mod split_k;
pub mod stream_k;
pub(crate) mod tile_epilogue;

pub use matmuls::Matmuls;
pub use operand::Bf16;
pub use picker::{candidates, Gemm, Kernel, SPLIT_K_MAX_M, STREAM_K_NARROW_MIN_M};
pub use split_k::SplitK;
