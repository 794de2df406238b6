//! The harness's own tests: every registry entry through its workload (`registry`) and the
//! unfused epilogue baseline against the f64 epilogue (`epilogue_pass`).
//!
//! Every test that compiles calls `tilus_bench::test_cache!()` first (see the kernel library's
//! tests), and the process does so before `main` on Linux.

mod epilogue_pass;
mod registry;

extern "C" fn before_main() {
    tilus_bench::test_cache!();
}

/// Sets the test cache (`TILUS_CACHE_DIR`) before `main`, while the process has one thread.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;
