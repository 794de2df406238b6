//! Quantized matmul: `C = A · dequant(W)ᵀ` with weights in a low-precision type (integers of
//! 1 to 8 bits, FP8, FP6, FP4, ...), packed, scaled per group along K.
//!
//! - [`Scheme`], [`quantize`], [`Quantized`]: how weights are quantized, the host's quantizer
//!   and its exact dequantization (the reference);
//! - [`QuantMatmul`]: the kernel for few rows of A, its time the weights' bytes;
//! - [`prepack()`], [`QuantMatmulFragments`]: weights rewritten in the order the tensor cores'
//!   register fragments hold them, and the kernel that reads them through a TMA ring and
//!   dequantizes them in the registers of the warps that multiply (any rows of A; the fastest
//!   path at every size measured), with [`fragment_stages`] and [`fragment_splits`], the host
//!   API's choices;
//! - [`QuantMatmulTc`]: the tensor-core kernel for rows of A up to a few hundred
//!   (`Cᵀ = dequant(W) · Aᵀ`, W in registers);
//! - [`QuantMatmulRing`]: the tensor-core kernel for many rows of A, on the persistent GEMM's
//!   ring, whose producer dequantizes W into shared memory;
//! - [`QuantMatmulOp`]: the host API on device buffers, and the same on the interpreter.

mod fragments;
mod fragments_wide;
mod group_sums;
mod matmul;
mod op;
pub mod prepack;
mod ring;
mod scheme;
mod stage_tiles;
mod tensor_core;
mod tuning;
mod views;

pub use fragments::{
    fragment_splits, fragment_stage_steps, fragment_stages, FragmentArgs, QuantMatmulFragments,
};
pub use matmul::QuantMatmul;
pub use op::{kernel_name, plan, Plan, QuantMatmulOp, RING_MIN_M, TENSOR_CORE_MIN_M};
pub use prepack::{prepack, Prepacked};
pub use ring::QuantMatmulRing;
pub use scheme::{quantize, Quantized, Scheme};
pub use tensor_core::QuantMatmulTc;
pub use views::QuantArgs;
