//! v6: v5 on a persistent grid, with a TMA-store epilogue, pairs of blocks sharing B through
//! TMA multicast and ping-pong consumer warp groups. This step is the library's GEMM kernel
//! itself, so its script lives in the kernel library and is re-exported here:
//! [`tilus_kernels::gemm::persistent`] (`crates/tilus-kernels/src/gemm/persistent.rs`), with
//! its ring ([`tilus_kernels::gemm::cooperative`], and `gemm/pair.rs` for pairs of blocks), its
//! consumers' turns (`gemm/pingpong.rs`) and its epilogue (`gemm/tile_epilogue.rs`).

pub use tilus_kernels::gemm::persistent::*;
