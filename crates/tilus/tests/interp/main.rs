//! The CPU interpreter, family by family: correct scripts run and give exact results
//! (including constructs beyond v0: f32 tiles, nested groups with plain arrivals, a
//! warp-specialized pipeline, wgmma), and one deliberately broken script per fault the
//! interpreter reports (each passes the verifier and the planner, or skips them on purpose;
//! the fault only shows when the kernel runs), with its kind, its message and the file:line
//! it names checked.
//!
//! The offending call is written as `mark("key", line!(), call)`, on one line, so that the
//! test knows the call a diagnostic must name; `common::interp::expect_fault` checks it.
//!
//! A new instruction's interpreter tests go into its family's file here (`control`,
//! `memory` (and `fences`, between blocks; `races`, between warps), `arithmetic`, `mbarrier`, `tma`, `mma`, `wgmma`, `debug`); a new family gets a new file and a `mod`
//! line below. The other test binaries and the shared harness: see `compiler/main.rs`.

// `mark(.., k.sync())` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

#[path = "../common/mod.rs"]
mod common;

mod arithmetic;
mod control;
mod convert;
mod copy_async;
mod debug;
mod divmod;
mod fences;
mod lowp;
mod masks;
mod mbarrier;
mod memory;
mod mma;
mod races;
mod scalars;
mod seed;
mod shape;
mod tma;
mod wgmma;
mod widths;
mod workspace;
