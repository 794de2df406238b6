//! What needs the machine: the on-disk program cache (with two processes racing on it),
//! environment faults (no driver, no NVRTC, an unwritable cache), the checks of arguments at
//! launch, the autotuner, and the GPU runs of the scripts the other binaries compile and
//! interpret. GPU tests are `#[ignore = "needs a CUDA GPU"]`; on a GPU host run them with
//! `--include-ignored`.
//!
//! Tests that depend on what a process does once (loading NVRTC, reading `TILUS_CACHE_DIR`)
//! run their body in a child process of this binary (`common::child`). A new family's GPU
//! run goes into `gpu.rs`; the other test binaries and the shared harness: see
//! `compiler/main.rs`.

#[path = "../common/mod.rs"]
mod common;

mod cache;
mod environment;
mod gpu;
mod gpu_tune;
mod launch_checks;
