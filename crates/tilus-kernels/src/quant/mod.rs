//! Quantized matmul: `C = A · dequant(W)ᵀ` with weights in a low-precision type (integers of
//! 1 to 8 bits, FP8, FP6, FP4, ...), packed, scaled per group along K.
//!
//! - [`Scheme`], [`quantize`], [`Quantized`]: how weights are quantized, the host's quantizer
//!   and its exact dequantization (the reference);
//! - [`QuantMatmul`]: the kernel for few rows of A, its time the weights' bytes;
//! - [`QuantMatmulTc`]: the tensor-core kernel for rows of A up to a few hundred
//!   (`Cᵀ = dequant(W) · Aᵀ`, W in registers);
//! - [`QuantMatmulRing`]: the tensor-core kernel for many rows of A, on the persistent GEMM's
//!   ring, whose producer dequantizes W into shared memory;
//! - [`QuantMatmulOp`]: the host API on device buffers, and the same on the interpreter.

mod matmul;
mod op;
mod ring;
mod scheme;
mod tensor_core;
mod views;

pub use matmul::QuantMatmul;
pub use op::{kernel_name, plan, Plan, QuantMatmulOp, RING_MIN_M, TENSOR_CORE_MIN_M};
pub use ring::QuantMatmulRing;
pub use scheme::{quantize, Quantized, Scheme};
pub use tensor_core::QuantMatmulTc;
pub use views::QuantArgs;
