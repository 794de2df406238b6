//! # Tilus for Rust
//!
//! A tile-level GPU kernel language for NVIDIA Hopper, embedded in Rust. A kernel is a
//! [`Script`]: a struct of compile-time hyperparameters whose [`Script::body`] builds the
//! kernel from tile-level instructions (global views, shared and register tensors, TMA copies,
//! mbarriers, thread groups, tensor-core dot products). The library traces the body into an
//! [`ir::Program`], checks it, infers layouts, plans shared memory, emits CUDA C++, compiles it
//! in-process with NVRTC to an `sm_90a` cubin, caches it on disk and launches it through the
//! CUDA driver.
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Fill { block: i32 }
//!
//! impl Script for Fill {
//!     type Args = (i32, PtrMut<f32>);
//!     fn arg_names() -> &'static [&'static str] { &["n", "out"] }
//!     fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
//!         k.blocks([cdiv(n, self.block)]);
//!         k.warps(1);
//!         let offset = k.let_i32(self.block * k.block_idx().x);
//!         let ones = k.register_tensor::<f32>([self.block], Some(1.0));
//!         let g = k.global_view::<f32>(out, [n]);
//!         k.store_global(&g, &ones, [offset]);
//!     }
//! }
//!
//! let program = tilus::trace(&Fill { block: 32 }, &[]).unwrap();
//! assert!(tilus::ir::print_program(&program).contains("store_global"));
//! ```

#![warn(missing_docs)]

pub mod codegen;
pub mod compile;
pub mod doctor;
mod error;
pub mod interp;
pub mod ir;
/// The CUDA bindings Tilus uses, re-exported so that users need no second version.
pub use cudarc;
mod jit;
pub mod lang;
pub mod layout;
pub mod passes;
pub mod runtime;

pub use error::{Diagnostic, Error, Result};
pub use jit::tune;
pub use jit::{
    build, emit, interpret, interpret_with, InterpArg, InterpArgList, InterpArgs, Interpreter, Jit,
};
pub use lang::arg_names;
pub use lang::{trace, Script};
pub use tilus_macros::script;
/// `#[derive(Tunable)]`: a script's autotuning search space from `#[tune(...)]` attributes on
/// its struct (the trait it implements is [`tune::Tunable`]).
pub use tilus_macros::Tunable;

/// Everything a script author needs.
pub mod prelude {
    pub use crate::lang::{
        cdiv, where_, Barrier, Barriers, Const, GlobalTensor, Handles, IntoTile, Kernel, Ptr,
        PtrMut, PtrVal, RegisterTensor, Scalar, Script, SharedTensor, Tile, TileMath, Val,
    };
    pub use crate::script;
    /// The [`crate::tune::Tunable`] trait (for `T::space()`, `T::from_binding(..)`), so that
    /// tuned scripts need no second import.
    pub use crate::tune::Tunable;
    pub use half::{bf16, f16};
    /// `#[derive(Tunable)]`, which shares the trait's name (macros and traits live in
    /// different namespaces).
    pub use tilus_macros::Tunable;
}
