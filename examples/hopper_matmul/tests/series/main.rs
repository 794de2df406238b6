//! The tutorial series' tests, one module per concern and step:
//!
//! - the generated CUDA: `codegen_v0`;
//! - the CPU interpreter against a CPU reference, each step's forms (a covering sample of its
//!   search space) at shapes that are multiples of the tile and ragged ones, with K long
//!   enough that the ring wraps (`interp_vN::every_form_is_exact_at_multiples_and_ragged_shapes`):
//!   `interp_v0`, `interp_v1`, `interp_v2`, `interp_v3`, `interp_v4`, `interp_v5`,
//!   `interp_v6`;
//! - deliberately broken v3 pipelines and the faults the interpreter reports for them:
//!   `interp_v3_bugs`;
//! - every configuration of each step's autotuning space through NVRTC, compiled without
//!   spills or rejected with a reason
//!   (`nvrtc_space_vN::every_config_of_the_vN_space_compiles_or_is_rejected_with_a_reason`):
//!   `nvrtc_space_v0`, `nvrtc_space_v1`, `nvrtc_space_v2`, `nvrtc_space_v3`,
//!   `nvrtc_space_v4`, `nvrtc_space_v5`, `nvrtc_space_v6` (the one step generic over the
//!   element type: f16, and bf16 on a covering sample);
//! - the GPU against cuBLAS: `gpu_v0`, `gpu_v1`, `gpu_v2`, `gpu_v3`, `gpu_v4`, `gpu_v5`,
//!   `gpu_v6` (`#[ignore = "needs a CUDA GPU"]`, run them on a GPU host with
//!   `--include-ignored`).
//!
//! The library kernels' tests are in `crates/tilus-kernels/tests`, the registry's in
//! `crates/tilus-bench/tests`.
//!
//! Every test that compiles calls `tilus_bench::test_cache!()` first, so that it compiles into
//! a cache under cargo's temporary directory and never into the user's; on Linux the process
//! also does so before `main`, so that the variable is set before any test thread runs.

mod codegen_v0;
mod gpu_v0;
mod gpu_v1;
mod gpu_v2;
mod gpu_v3;
mod gpu_v4;
mod gpu_v5;
mod gpu_v6;
mod interp_v0;
mod interp_v1;
mod interp_v2;
mod interp_v3;
mod interp_v3_bugs;
mod interp_v4;
mod interp_v5;
mod interp_v6;
mod nvrtc_space_v0;
mod nvrtc_space_v1;
mod nvrtc_space_v2;
mod nvrtc_space_v3;
mod nvrtc_space_v4;
mod nvrtc_space_v5;
mod nvrtc_space_v6;

/// K steps enough for each stage to be filled three times and a step more: the prologue's
/// fill, then two refills (phases 0, 1, 0).
fn k_steps(stages: i32) -> usize {
    2 * stages as usize + 2
}

extern "C" fn before_main() {
    tilus_bench::test_cache!();
}

/// Sets the test cache (`TILUS_CACHE_DIR`) before `main`, while the process has one thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;
