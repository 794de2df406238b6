//! The verifier, rule by rule: one small, deliberately broken script per rule, in the file of
//! the rule's instruction family. Each case checks that tracing + `compile_program` returns
//! `Error::Script`, that a diagnostic carries the rule's key phrase, and that it points at the
//! offending builder call, in the file and on the line of the call marked `at(line!(), call)`.
//!
//! A new rule's test is a few lines (see `common::check` for the variants):
//!
//! ```ignore
//! #[test]
//! fn empty_thread_group() {
//!     check::<OutF32>(|k, _| {
//!         k.warps(4);
//!         at(line!(), k.thread_group(0, 0, |_| {}));
//!     })
//!     .fails_once("thread_group: a thread group needs at least one thread");
//! }
//! ```
//!
//! Rules that the typed builder API makes impossible to break (dtype mismatches, pinned
//! layouts) are reached with `.edit(|p| ..)`, which changes the traced `Program` before the
//! passes run; the locations are still the builder calls'.
//!
//! A test that fails states what the library should do and does not yet (a wrong location,
//! a missing rule); `#[ignore = "BUG: ..."]` marks scripts on which the library panics.

mod arithmetic;
mod control;
mod debug;
mod mbarrier;
mod memory;
mod mma;
mod resources;
mod scalars;
mod shape;
mod tma;
mod wgmma;

use crate::common::check;
use crate::common::check_script;
use crate::common::scripts::SeedMatmul;
use tilus::prelude::*;
use tilus::Error;

/// A script with one writable f32 pointer.
pub type OutF32 = (PtrMut<f32>,);
/// A script with one f16 pointer.
pub type InF16 = (Ptr<f16>,);

/// A `[4096, 4096]` f16 view, its TMA-friendly `[64, 64]` tile and one barrier.
pub fn tma_setup(
    k: &mut Kernel,
    a: PtrVal<f16>,
) -> (GlobalTensor<f16>, SharedTensor<f16>, Barriers) {
    let g = k.global_view(a, [4096, 4096]);
    let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
    let b = k.mbarrier().alloc([1]);
    (g, s, b)
}

// ------------------------------------------------------------------------------------------
// Baselines: the patterns the broken scripts start from compile cleanly.
// ------------------------------------------------------------------------------------------

#[test]
fn the_baselines_compile() {
    check_script(SeedMatmul::default())
        .consts(&[4096, 4096])
        .compiles("the seed's v0 body compiles");
    check::<OutF32>(|k, (o,)| {
        k.blocks([4]);
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [128]);
        k.store_global(&g, &r, [32 * k.block_idx().x]);
    })
    .compiles("a store of one tile compiles");
}

#[test]
fn wrong_number_of_constants_is_an_argument_error() {
    let r = tilus::trace(&SeedMatmul::default(), &[4096]);
    match r {
        Err(Error::Argument { message, .. }) => {
            assert!(
                message.contains("2 compile-time constant arguments, 1 values"),
                "{message}"
            )
        }
        other => panic!("expected Error::Argument, got {other:?}"),
    }
}
