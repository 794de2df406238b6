//! The Hopper matmul tutorial series in Tilus for Rust: one module per step (`v0` … `v6`), each
//! explained by a page of `docs/tutorials/hopper-matmul/`. Every step computes `C = A · Bᵀ`
//! with A `[M, K]` and B `[N, K]` row-major, f16 in, f32 accumulation, f16 out.
//!
//! The steps build on one another, and where a step's piece is what the kernel library runs,
//! the step uses the library's: v4's main loop and v5's ring are
//! [`tilus_kernels::gemm::products`] and [`tilus_kernels::gemm::cooperative`], and v6 is the
//! library's persistent kernel, [`tilus_kernels::gemm::persistent`]. Verification against cuBLAS
//! and timing are `tilus-bench`'s; the `tilus` command runs each step by name
//! (`tilus run hopper_matmul_v2`).

pub mod v0;
pub mod v1;
pub mod v2;
pub mod v3;
pub mod v4;
pub mod v5;
pub mod v6;
