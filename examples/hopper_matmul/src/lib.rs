//! The Hopper matmul tutorial series in Tilus for Rust: one module per step (`v0` … `v6`), plus
//! the harness that verifies each step against cuBLAS and times them side by side, and the
//! registry through which the `tilus` command knows them. `split_k` is the small-M kernel
//! (K in ranges, then the sum of the partials); `gemm` is the entry point for users who do not
//! write kernels, which picks between v6 and split-K by shape. `tile_copy` is the series' TMA-store epilogue on its
//! own. The memory-bound kernels (`vector_add`, `softmax`, `layer_norm`) sit beside the series,
//! with `bandwidth`, which checks them and times them against a device-to-device copy.

pub mod alloc;
pub mod bandwidth;
pub mod buffers;
pub mod epilogue;
pub mod epilogue_bench;
pub mod epilogue_operands;
pub mod epilogue_pass;
pub mod epilogue_workload;
mod error;
pub mod gemm;
pub mod harness;
pub mod layer_norm;
pub mod matmul;
pub mod operand;
pub mod pair;
pub mod pingpong;
pub mod registry;
pub mod rows;
pub mod run;
pub mod size;
pub mod softmax;
pub mod split_k;
pub mod split_k_workload;
pub mod stream_k;
pub mod stream_k_run;
pub mod testing;
pub mod tile_copy;
pub mod v0;
pub mod v1;
pub mod v2;
pub mod v3;
pub mod v4;
pub mod v5;
pub mod v6;
pub mod v6_epilogue;
pub mod vector_add;
pub mod workload;

pub use error::{Error, Result};
