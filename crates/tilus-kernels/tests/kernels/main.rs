//! The kernel library's tests, one module per concern and family:
//!
//! - the CPU interpreter against a host reference: `interp_general`, `interp_split_k`,
//!   `interp_stream_k`, `interp_memory`, `interp_epilogue`, `interp_quant` (on the exact
//!   reference of `quant_reference`), `interp_attention` (on `attention_reference`), `interp_fp8` (on `fp8_reference`), and `interp_ops` (the host APIs' interpreter entries and
//!   their shape checks, on the references of `ops_reference`);
//! - every configuration of the autotuning spaces through NVRTC, or a covering sample where a
//!   space is large or for the second element type, in f16 and in bf16 for the kernels that
//!   take it: `nvrtc_general`, `nvrtc_split_k`, `nvrtc_stream_k`, `nvrtc_epilogue` (f16 only),
//!   `nvrtc_memory` (f16 and f32; v6 itself is the series' `nvrtc_space_v6`), `nvrtc_quant`
//!   (every kind of weight type), `nvrtc_attention`, `nvrtc_fp8`;
//! - the GPU: `gpu_gemm`, `gpu_general`, `gpu_split_k`, `gpu_stream_k`, `gpu_memory`, `gpu_ops`,
//!   `gpu_quant`, `gpu_attention`, `gpu_decode`, `gpu_fp8`
//!   (`#[ignore = "needs a CUDA GPU"]`, run them on a GPU host with `--include-ignored`).
//!
//! The `memory` modules are the memory-bound kernels (`vector_add`, `softmax`, `layer_norm`,
//! `rms_norm`, `tile_copy`).
//!
//! Every test that compiles calls `tilus_bench::test_cache!()` first, so that it compiles into
//! a cache under cargo's temporary directory and never into the user's; on Linux the process
//! also does so before `main`, so that the variable is set before any test thread runs.

mod attention_reference;
mod decode_reference;
mod fp8_reference;
mod gpu_attention;
mod gpu_decode;
mod gpu_fp8;
mod gpu_gemm;
mod gpu_general;
mod gpu_memory;
mod gpu_ops;
mod gpu_quant;
mod gpu_split_k;
mod gpu_stream_k;
mod interp_attention;
mod interp_decode;
mod interp_epilogue;
mod interp_fp8;
mod interp_general;
mod interp_memory;
mod interp_ops;
mod interp_quant;
mod interp_split_k;
mod interp_stream_k;
mod nvrtc_attention;
mod nvrtc_epilogue;
mod nvrtc_fp8;
mod nvrtc_general;
mod nvrtc_memory;
mod nvrtc_quant;
mod nvrtc_split_k;
mod nvrtc_stream_k;
mod ops_reference;
mod quant_reference;

extern "C" fn before_main() {
    tilus_bench::test_cache!();
}

/// Sets the test cache (`TILUS_CACHE_DIR`) before `main`, while the process has one thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;
