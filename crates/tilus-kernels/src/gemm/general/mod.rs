//! The general GEMM: `C = alpha · op(A) · op(B) + beta · C` for a batch of products, A and B
//! each row- or column-major with any leading dimension and batch stride (0: shared by every
//! product), C row-major with its own; f16 or bf16 in and out, f32 accumulation. The
//! operands are read as stored: an operand whose M or N is contiguous is an MN-major tile
//! on the tensor cores (their transpose bit), so no data is transposed anywhere.
//!
//! [`MatmulGeneral`] is the kernel (v6's main loop on batched, strided views); [`GemmGeneral`]
//! the host API, which checks the problem against the buffers, picks the kernel's form
//! ([`Form`]) and autotunes it per shape. Operands whose rows do not start on 16-byte
//! boundaries (an odd K, say) are first staged into rows that do ([`StageCopy`]).
//!
//! A problem names each operand's storage, as PyTorch or cuBLAS callers have it. A linear
//! layer `y = x · Wᵀ` over a batch, `x` `[batch, m, k]`, one weight `W` `[n, k]` for every
//! product (batch stride 0: a weight stored `[n, k]` is a column-major `[k, n]` B), and
//! `torch.bmm(x, z)` with `z` `[batch, k, n]`, here on the interpreter:
//!
//! ```
//! use half::f16;
//! use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout, MatmulGeneral};
//! let (batch, m, n, k) = (2, 72, 40, 24);
//! let x: Vec<f16> = (0..batch * m * k).map(|i| f16::from_f32((i % 7) as f32 / 8.0)).collect();
//! let w: Vec<f16> = (0..n * k).map(|i| f16::from_f32((i % 5) as f32 / 4.0 - 0.5)).collect();
//! let mut y = vec![f16::NAN; batch * m * n];
//! // A: x, row-major and contiguous (the default); B: W stored [n, k], shared
//! let linear = GemmProblem::new(batch, (m, n, k)).b(Layout::col_major(k));
//! GemmGeneral::<f16>::interpret(&MatmulGeneral::default(), &linear, &x, &w, &mut y)?;
//! let dot = |b: usize, i: usize, j: usize| -> f32 {
//!     (0..k).map(|t| x[(b * m + i) * k + t].to_f32() * w[j * k + t].to_f32()).sum()
//! };
//! assert_eq!(y[(m + 3) * n + 5].to_f32(), dot(1, 3, 5)); // exact: short sums of small values
//!
//! // torch.bmm(x, z): every operand row-major and contiguous, GemmProblem::new's defaults
//! let z: Vec<f16> = (0..batch * k * n).map(|i| f16::from_f32((i % 3) as f32)).collect();
//! let bmm = GemmProblem::new(batch, (m, n, k));
//! GemmGeneral::<f16>::interpret(&MatmulGeneral::default(), &bmm, &x, &z, &mut y)?;
//! let first: f32 = (0..k).map(|t| x[t].to_f32() * z[t * n].to_f32()).sum();
//! assert_eq!(y[0].to_f32(), first);
//! # Ok::<(), tilus_kernels::Error>(())
//! ```

mod host;
mod kernel;
mod scale;
mod stage;

pub use host::{specialization, GemmGeneral, GemmProblem, Layout, Order};
pub use kernel::{Form, GeneralArgsOf, MatmulGeneral};
pub use stage::{staged_ld, StageArgsOf, StageCopy};
