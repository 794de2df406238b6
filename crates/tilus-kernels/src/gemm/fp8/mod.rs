//! FP8 GEMM: `C = (scale_a · scale_b) · A · Bᵀ` with A `[M, K]` and B `[N, K]` in e4m3 or
//! e5m2 codes (K-major, as Hopper's FP8 tensor cores take them), accumulated in f32, out in
//! bf16, f16 or f32, on v6's persistent, warp-specialized main loop ([`MatmulFp8`]); the host
//! API checks shapes and buffers before anything is launched ([`Fp8GemmOp`]), and
//! [`reference`] computes the exact product of the codes' values.

mod kernel;
mod op;
pub mod reference;
mod scaled;

pub use kernel::{Fp8ArgsOf, MatmulFp8, FP8_BLOCK_K};
pub use op::Fp8GemmOp;
