//! Verification and timing for Tilus kernels, in one place for the `tilus` command and the GPU
//! tests: workloads (random inputs, references, checks: [`workloads`]), cuBLAS and interleaved
//! CUDA-event timing ([`harness`]), the main job of a matmul version ([`run`]), the memory-bound
//! and fused-epilogue benchmarks ([`bandwidth`], [`epilogue_bench`]) and the registry of kernels
//! by name ([`registry`]).
//!
//! Dependencies run one way: the command line uses this crate, this crate uses the kernel
//! library (`tilus-kernels`), the tutorial series (`hopper-matmul`) and `tilus`.

#![warn(missing_docs)]

pub mod alloc;
pub mod attention_bench;
pub mod bandwidth;
pub mod buffers;
pub mod checks;
pub mod compare;
pub mod cublaslt_fp8;
pub mod decode_bench;
pub mod entry_run;
pub mod epilogue_bench;
pub mod epilogue_pass;
mod error;
pub mod fp8_bench;
pub mod harness;
pub mod operand;
pub mod quant_bench;
pub mod referee;
pub mod registry;
pub mod rows;
pub mod run;
pub mod size;
pub mod spaces;
pub mod testing;
pub mod versions;
pub mod workload;
pub mod workloads;

pub use error::{Error, Result};
