//! # Tilus for Rust
//!
//! A tile-level GPU kernel language for NVIDIA Hopper, embedded in Rust. A kernel is a
//! [`Script`]: a struct of compile-time hyperparameters whose [`Script::body`] builds the
//! kernel from tile-level instructions (global views, shared and register tensors, TMA copies,
//! mbarriers, thread groups, tensor-core dot products, arithmetic, reductions, conditionals).
//! The library traces the body into an [`ir::Program`], checks it, infers layouts, plans shared
//! memory, emits CUDA C++, compiles it in-process with NVRTC to an `sm_90a` cubin, caches it on
//! disk and launches it through the CUDA driver — or runs it on a CPU interpreter that also
//! diagnoses asynchronous bugs.
//!
//! # A first kernel, from the interpreter to the GPU
//!
//! **1. Write the script.** `y = alpha · x + y` over `n` elements: each block takes `block`
//! elements, loads them into register tiles, computes and stores. `n` and `alpha` are runtime
//! arguments, `block` a hyperparameter (a new value is a new kernel); the loads are masked at
//! the end of the vectors, so any `n` works.
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! pub struct Axpy { pub block: i32 }
//!
//! impl Script for Axpy {
//!     type Args = (i32, f32, Ptr<f32>, PtrMut<f32>);
//!     fn arg_names() -> &'static [&'static str] { &["n", "alpha", "x", "y"] }
//!     fn body(&self, k: &mut Kernel, (n, alpha, x, y): Handles<Self::Args>) {
//!         k.blocks([cdiv(n, self.block)]);
//!         k.warps(4);
//!         let offset = k.let_i32(self.block * k.block_idx().x);
//!         let gx = k.global_view::<f32>(x, [n]);
//!         let gy = k.global_view::<f32>(y, [n]);
//!         let tx = k.load_global(&gx, [offset], [self.block]);
//!         let ty = k.load_global(&gy, [offset], [self.block]);
//!         let out = k.compute(tx * alpha + ty);
//!         k.store_global(&gy, &out, [offset]);
//!     }
//! }
//!
//! // 2. Run it on the CPU interpreter: no GPU needed, and asynchronous mistakes (a read
//! //    before a TMA copy's wait, a deadlock) come back as errors naming your line.
//! let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
//! let mut y = vec![1.0f32; 1000];
//! tilus::interp::run(&Axpy { block: 512 }, (1000, 0.5, &x[..], &mut y[..])).unwrap();
//! assert!(y.iter().enumerate().all(|(i, &v)| v == 0.5 * i as f32 + 1.0));
//!
//! // 3. Read the CUDA C++ it becomes (no NVRTC needed). The argument is the list of
//! //    compile-time constant values (`Const<i32>` arguments); this script has none.
//! let cuda = tilus::emit(&Axpy { block: 512 }, &[]).unwrap();
//! assert!(cuda.contains("__global__"));
//!
//! // 4. Compile it with NVRTC to an sm_90a cubin (cached on disk), and see what it needs.
//! match tilus::build(&Axpy { block: 512 }, &[]) {
//!     Ok(built) => assert_eq!(built.report.spill_stores, 0),
//!     Err(tilus::Error::NvrtcUnavailable(_)) => {} // this machine has no NVRTC
//!     Err(e) => panic!("{e}"),
//! }
//! ```
//!
//! **5. Launch it** on a GPU: a [`Jit`] binds the script to a device, compiles on first use for
//! each set of constant values, checks the arguments (sizes, alignment, ranges) before anything
//! is launched and launches with the same typed arguments, device buffers in place of slices:
//!
//! ```no_run
//! # use tilus::prelude::*;
//! # #[derive(Clone, Debug, Hash)]
//! # pub struct Axpy { pub block: i32 }
//! # impl Script for Axpy {
//! #     type Args = (i32, f32, Ptr<f32>, PtrMut<f32>);
//! #     fn body(&self, k: &mut Kernel, (n, alpha, x, y): Handles<Self::Args>) {}
//! # }
//! use tilus::runtime::Device;
//!
//! let device = Device::open(0)?;
//! let stream = device.stream();
//! let x = stream.clone_htod(&vec![1.0f32; 1 << 20])?;
//! let mut y = stream.clone_htod(&vec![2.0f32; 1 << 20])?;
//! let axpy = tilus::Jit::new(Axpy { block: 1024 }, &device);
//! axpy.launch(stream, (1 << 20, 0.5, &x, &mut y))?;
//! let y = stream.clone_dtoh(&y)?; // 2.5 everywhere
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Where to go next
//!
//! - The language, instruction by instruction, with what each needs: `docs/reference.md` in the
//!   repository; the module [`lang`] (the [`lang::Kernel`] methods) here.
//! - Tutorials (`docs/tutorials/`): the Hopper matmul series, from TMA + `mma.sync`
//!   (`hopper-matmul/v0.md`) to WGMMA (`hopper-matmul/v1.md`) and a ring of TMA stages
//!   (`hopper-matmul/v2.md`), then warp specialization (`hopper-matmul/v3.md`); the memory-bound kernels (`elementwise-and-reductions.md`).
//! - Autotuning over a hyperparameter space: [`tune`] and `docs/autotuning.md`.
//! - How the compiler is put together (passes, layouts, planning, codegen, interpreter):
//!   `docs/architecture.md`.
//! - The interpreter and what it diagnoses: [`interp`].

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
pub mod lowp;
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
    pub use crate::ir::L2Promotion;
    pub use crate::lang::{
        cdiv, rand, randint, randn, where_, Barrier, Barriers, Const, ConsumerSlot, Element,
        FastDivisor, GlobalTensor, Handles, IntoTile, Kernel, Pipeline, ProducerSlot, Ptr, PtrMut,
        PtrVal, RegisterTensor, Scalar, Script, SharedTensor, Tile, TileMath, Val, WgmmaTarget,
    };
    pub use crate::layout::padded_extent;
    pub use crate::script;
    /// The [`crate::tune::Tunable`] trait (for `T::space()`, `T::from_binding(..)`), so that
    /// tuned scripts need no second import.
    pub use crate::tune::Tunable;
    pub use half::{bf16, f16};
    /// `#[derive(Tunable)]`, which shares the trait's name (macros and traits live in
    /// different namespaces).
    pub use tilus_macros::Tunable;
}
