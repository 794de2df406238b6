//! Everything between a script and the CUDA source, without a GPU: the language (tracing,
//! `#[tilus::script]`, `#[derive(Tunable)]`), the verifier's rules, the layout algebra, the
//! shared-memory planner, and the generated CUDA (structure, and NVRTC compiles).
//!
//! # Where tests go (the test binaries of `crates/tilus/tests`)
//!
//! - `compiler` (this one; NVRTC at most): `verify/<family>.rs`, one broken script per verifier
//!   rule; `codegen.rs`, the emitted CUDA and NVRTC compiles; `layouts.rs`, `plan_shared.rs`,
//!   `script_macro.rs`, `tunable.rs`.
//! - `interp` (nothing): `<family>.rs`, scripts on the CPU interpreter, exact results and the
//!   faults it reports.
//! - `fuzz` (nothing): random scripts never panic the library; `ops/<family>.rs` holds each
//!   operation with its generator and its replay.
//! - `runtime` (a GPU, child processes, the environment): the cache, environment faults,
//!   launch checks, the autotuner, the GPU runs of the shared scripts.
//!
//! The instruction families are those of `src/ir/inst/`: control (launch configuration,
//! loops, conditionals, thread groups, scalars), memory, arithmetic, mbarrier, tma, mma, wgmma,
//! debug (printing). A new instruction's tests go into its family's file in each binary: its
//! verifier rules in `compiler/verify/<family>.rs`, its interpreter runs and faults in
//! `interp/<family>.rs`, its fuzzer op in `fuzz/ops/<family>.rs`, its generated CUDA in
//! `compiler/codegen.rs`, its GPU run in `runtime/gpu.rs`. A new family gets a new file in each of `verify/`, `interp/` and
//! `fuzz/ops/`, and one `mod` line in each binary (`../README.md` has the details and a
//! verifier case to copy). The shared harness is `common/` (scripts written inline, line
//! markers, diagnostic and fault finders, inputs, scripts several binaries run); it also gives
//! every test process a cache directory of its own, so that no test writes into the user's
//! cache.

// `at(line!(), k.sync())` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

#[path = "../common/mod.rs"]
mod common;

mod codegen;
mod layouts;
mod plan_shared;
mod script_macro;
mod tunable;
mod verify;
