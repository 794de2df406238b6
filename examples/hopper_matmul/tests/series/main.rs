//! The tutorial series' tests, one module per concern and step: the generated CUDA
//! (`codegen_v0`), the CPU interpreter against a CPU reference (`interp_v0`, `interp_v1`,
//! `interp_v3`, `interp_v4`, `interp_v5`, `interp_v6`), deliberately broken v3 pipelines and the
//! faults the interpreter reports for them (`interp_v3_bugs`), every configuration of the
//! autotuning spaces through NVRTC (`nvrtc_space`, `nvrtc_space_v1`, `nvrtc_v6`), and the GPU
//! (`gpu_v0`, `gpu_v1`, `gpu_v3`, `gpu_v4`, `gpu_v5`, `gpu_v6`; `#[ignore = "needs a CUDA
//! GPU"]`, run them on a GPU host with `--include-ignored`). The library kernels' tests are in
//! `crates/tilus-kernels/tests`, the registry's in `crates/tilus-bench/tests`.
//!
//! Every test that compiles calls `tilus_bench::test_cache!()` first, so that it compiles into
//! a cache under cargo's temporary directory and never into the user's; on Linux the process
//! also does so before `main`, so that the variable is set before any test thread runs. A new
//! step's tests are new modules here (`interp_v2`, `nvrtc_space_v2`, `gpu_v2`).

mod codegen_v0;
mod gpu_v0;
mod gpu_v1;
mod gpu_v3;
mod gpu_v4;
mod gpu_v5;
mod gpu_v6;
mod interp_v0;
mod interp_v1;
mod interp_v3;
mod interp_v3_bugs;
mod interp_v4;
mod interp_v5;
mod interp_v6;
mod nvrtc_space;
mod nvrtc_space_v1;
mod nvrtc_v6;

extern "C" fn before_main() {
    tilus_bench::test_cache!();
}

/// Sets the test cache (`TILUS_CACHE_DIR`) before `main`, while the process has one thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;
