//! The general GEMM: `C = alpha · op(A) · op(B) + beta · C` for a batch of products, A and B
//! each row- or column-major with any leading dimension and batch stride (0: shared by every
//! product), C row-major with its own; f16 or bf16 in and out, f32 accumulation. The
//! operands are read as stored: an operand whose M or N is contiguous is an MN-major tile
//! on the tensor cores (their transpose bit), so no data is transposed anywhere.
//!
//! [`MatmulGeneral`] is the kernel (v6's main loop on batched, strided views); [`GemmGeneral`]
//! the host API, which checks the problem against the buffers, picks the kernel's form
//! ([`Form`]) and autotunes it per shape.

mod host;
mod kernel;
mod scale;
mod stage;

pub use host::{specialization, GemmGeneral, GemmProblem, Layout, Order};
pub use kernel::{Form, GeneralArgsOf, MatmulGeneral};
pub use stage::{staged_ld, StageArgsOf, StageCopy};
