//! FP8 GEMM: `C = (scale_a · scale_b) · A · Bᵀ` with A `[M, K]` and B `[N, K]` in e4m3 or
//! e5m2 codes (K-major, as Hopper's FP8 tensor cores take them), accumulated in f32 (each K
//! step's product promoted from the tensor cores into f32 registers), out in bf16, f16 or
//! f32, on v6's persistent, warp-specialized main loop ([`MatmulFp8`]); with DeepGEMM's
//! fine-grained scales instead (one per 1 × 128 block of A, per 128 × 128 block of B:
//! [`MatmulFp8Blocks`]). The host API checks shapes and buffers before anything is launched
//! ([`Fp8GemmOp`], [`Fp8BlocksGemmOp`]), and [`reference`](mod@reference) computes the exact products of the
//! codes' values.

mod blocks;
mod blocks_op;
mod kernel;
mod op;
pub mod reference;
mod scaled;

pub use blocks::{Fp8BlocksArgsOf, MatmulFp8Blocks};
pub use blocks_op::Fp8BlocksGemmOp;
pub use kernel::{Fp8ArgsOf, MatmulFp8, FP8_BLOCK_K};
pub use op::Fp8GemmOp;
