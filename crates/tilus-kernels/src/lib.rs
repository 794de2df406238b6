//! Kernels written in Tilus for Rust, with typed host APIs on cudarc device buffers: shapes and
//! buffers checked before anything is launched, errors typed ([`Error`]), each kernel autotuned
//! on its first use of a shape, and an interpreter entry that runs the same kernel on host
//! slices, on the CPU, for tests on machines without a GPU.
//!
//! Each family is a module folder with its scripts and host APIs:
//! - [`gemm`]: `C = A · Bᵀ` for any M ([`gemm::Gemm`], which picks per shape between the
//!   persistent kernel and split-K), and the fused epilogue ([`gemm::epilogue`]);
//! - [`norm`]: softmax, layer norm and RMSNorm over the rows of a matrix;
//! - [`elementwise`]: `c = a + b`;
//! - [`copy`]: a 2-D copy through shared memory by TMA;
//! - [`quant`]: `C = A · dequant(W)ᵀ` with weights in low-precision types;
//! - [`attention`]: flash attention forward (causal, GQA, packed batches).
//!
//! ```no_run
//! use tilus_kernels::norm::RmsNormOp;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let device = tilus::runtime::Device::open(0)?;
//! let rms_norm = RmsNormOp::new(&device)?;
//! let (rows, cols) = (4, 4096);
//! let x = device.stream().clone_htod(&vec![half::f16::ONE; rows * cols])?;
//! let w = device.stream().clone_htod(&vec![half::f16::ONE; cols])?;
//! let mut y = device.stream().alloc_zeros::<half::f16>(rows * cols)?;
//! rms_norm.run(device.stream(), (rows, cols), 1e-6, &x, &w, &mut y)?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod attention;
pub mod copy;
pub mod elementwise;
mod error;
pub mod gemm;
mod host;
pub mod norm;
mod operand;
pub mod quant;

pub use error::{Error, Result};
pub use operand::Operand;
