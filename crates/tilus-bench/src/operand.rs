//! The operand types as the harness sees them: the kernels' [`tilus_kernels::Operand`] (f16,
//! bf16) with cuBLAS's name for each and how close an output must be to cuBLAS's.

use crate::compare::Tolerance;
use half::{bf16, f16};
use tilus::cudarc::cublas::sys::cudaDataType;
use tilus_kernels::gemm::Matmuls;

/// An element type of A, B and C, with what the references need of it.
pub trait Operand: Matmuls {
    /// cuBLAS's name for it.
    const CUBLAS: cudaDataType;
    /// How far an output may be from cuBLAS's (one rounding step of the type apart).
    const TOLERANCE: Tolerance;
    /// Bits of the significand after the leading one (10 for f16, 7 for bf16).
    const MANTISSA_BITS: i32;
    /// The exponent of the smallest normal value (-14 for f16, -126 for bf16).
    const MIN_NORMAL_EXP: i32;
}

impl Operand for f16 {
    const CUBLAS: cudaDataType = cudaDataType::CUDA_R_16F;
    const TOLERANCE: Tolerance = Tolerance::F16;
    const MANTISSA_BITS: i32 = 10;
    const MIN_NORMAL_EXP: i32 = -14;
}

impl Operand for bf16 {
    const CUBLAS: cudaDataType = cudaDataType::CUDA_R_16BF;
    const TOLERANCE: Tolerance = Tolerance::BF16;
    const MANTISSA_BITS: i32 = 7;
    const MIN_NORMAL_EXP: i32 = -126;
}
