//! The tutorial series' tests, one module per concern and version: the generated CUDA
//! (`codegen_v0`), the CPU interpreter against a CPU reference (`interp_v0`, `interp_v1`, `interp_v3`, `interp_v4`, `interp_v5`,
//! `interp_v6`, `interp_split_k`, `interp_memory`), deliberately broken v3 pipelines and the faults the interpreter reports for
//! them (`interp_v3_bugs`), every configuration of the autotuning spaces through NVRTC
//! (`nvrtc_space`, `nvrtc_space_v1`, `nvrtc_memory`, `nvrtc_v6`, `nvrtc_epilogue`), the registry's entries (`registry`), the
//! v0 main job's command line (`main_v0_args`), and the GPU (`gpu_v0`, `gpu_v1`, `gpu_v3`, `gpu_v4`, `gpu_v5`, `gpu_v6`, `gpu_split_k`, `gpu_gemm`,
//! `gpu_memory`;
//! `#[ignore = "needs a CUDA GPU"]`, run them on a GPU host with `--include-ignored`). The
//! `memory` modules are the memory-bound kernels (`vector_add`, `softmax`, `layer_norm`).
//!
//! Every test that compiles calls `hopper_matmul::test_cache!()` first, so that it compiles
//! into a cache under cargo's temporary directory and never into the user's; on Linux the
//! process also does so before `main`, so that the variable is set before any test thread
//! runs. A new version's tests are new modules here (`interp_v2`, `nvrtc_space_v2`, `gpu_v2`).

mod checks;
mod codegen_v0;
mod epilogue_pass;
mod gpu_gemm;
mod gpu_memory;
mod gpu_split_k;
mod gpu_stream_k;
mod gpu_v0;
mod gpu_v1;
mod gpu_v3;
mod gpu_v4;
mod gpu_v5;
mod gpu_v6;
mod interp_epilogue;
mod interp_memory;
mod interp_split_k;
mod interp_stream_k;
mod interp_v0;
mod interp_v1;
mod interp_v3;
mod interp_v3_bugs;
mod interp_v4;
mod interp_v5;
mod interp_v6;
mod main_v0_args;
mod nvrtc_epilogue;
mod nvrtc_memory;
mod nvrtc_space;
mod nvrtc_space_v1;
mod nvrtc_stream_k;
mod nvrtc_v6;
mod registry;

extern "C" fn before_main() {
    hopper_matmul::test_cache!();
}

/// Sets the test cache (`TILUS_CACHE_DIR`) before `main`, while the process has one thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;
