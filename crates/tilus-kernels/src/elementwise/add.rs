//! `vector_add`: `c = a + b` over `n` elements, in f16 ([`VectorAdd`]) and f32
//! ([`VectorAddF32`]). The smallest memory-bound kernel: each block loads a `[block]` slice of
//! both inputs into registers, adds them and stores the sum. Nothing fixes the tiles' layout
//! but the global accesses, so each thread gets 16 bytes of consecutive elements per vector
//! and consecutive threads take consecutive vectors: every load and store is a coalesced
//! 16-byte access, and the last block's slice past `n` is masked.
//!
//! 16-bit sums are computed in f32 and rounded once; for two f16 values that is the correctly
//! rounded f16 sum (f32 has more than twice f16's precision plus two bits), so the check
//! against the host's sum is exact.

use crate::host::{dim, length};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus::tune::Autotuned;

/// One vector-add script per element type: the same body, its own argument types.
macro_rules! vector_add {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
        #[tune(block = [1024, 2048, 4096, 8192])]
        #[tune(warps = [4, 8])]
        pub struct $name {
            /// Elements per block (each thread holds `block / (32 · warps)` of them).
            pub block: i32,
            /// Warps per block.
            pub warps: u32,
        }

        impl Default for $name {
            /// Four 16-byte vectors per thread and input (f16), two for f32.
            fn default() -> Self {
                $name {
                    block: 4096,
                    warps: 4,
                }
            }
        }

        #[tilus::script]
        impl Script for $name {
            // n: runtime; no compile-time constant, so one program serves every length.
            type Args = (i32, Ptr<$t>, Ptr<$t>, PtrMut<$t>);

            fn body(&self, k: &mut Kernel, (n, a, b, c): Handles<Self::Args>) {
                k.blocks([cdiv(n, self.block)]);
                k.warps(self.warps);
                let offset = k.let_i32(self.block * k.block_idx().x);
                let ga = k.global_view::<$t>(a, [n]);
                let gb = k.global_view::<$t>(b, [n]);
                let gc = k.global_view::<$t>(c, [n]);
                let xa = k.load_global(&ga, [offset], [self.block]);
                let xb = k.load_global(&gb, [offset], [self.block]);
                let sum = k.compute(xa + xb);
                k.store_global(&gc, &sum, [offset]);
            }
        }
    };
}

vector_add!(
    /// `c = a + b` in f16 (the sum computed in f32 and rounded once).
    ///
    /// ```
    /// use tilus_kernels::elementwise::{AddOp, VectorAdd};
    /// let a = vec![half::f16::from_f32(0.5); 1000];
    /// let b = vec![half::f16::from_f32(0.25); 1000];
    /// let mut c = vec![half::f16::NAN; 1000];
    /// AddOp::<half::f16>::interpret(&VectorAdd { block: 1024, warps: 4 }, &a, &b, &mut c)?;
    /// assert!(c.iter().all(|&v| v == half::f16::from_f32(0.75)));
    /// # Ok::<(), tilus_kernels::Error>(())
    /// ```
    VectorAdd,
    f16
);
vector_add!(
    /// `c = a + b` in f32.
    VectorAddF32,
    f32
);

/// The element types [`AddOp`] takes, each with its script.
///
/// ```
/// use tilus::Script;
/// use tilus_kernels::elementwise::Addable;
/// fn kernel_of<T: Addable>() -> String
/// where
///     T::Script: Default,
/// {
///     T::Script::default().name()
/// }
/// assert_eq!(kernel_of::<f32>(), "vector_add_f32");
/// ```
pub trait Addable: tilus::lang::Element + DeviceRepr + tilus::interp::Pod + Unpin {
    /// The vector-add script for this type.
    type Script: Tunable<Args = (i32, Ptr<Self>, Ptr<Self>, PtrMut<Self>)>;
}

impl Addable for f16 {
    type Script = VectorAdd;
}

impl Addable for f32 {
    type Script = VectorAddF32;
}

/// `c = a + b` on device buffers of `n` elements of `T` (f16 or f32): the vector-add kernel,
/// autotuned on its first use.
///
/// ```no_run
/// use tilus_kernels::elementwise::AddOp;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let add = AddOp::<f32>::new(&device)?;
/// let a = device.stream().clone_htod(&vec![1.0f32; 1 << 20])?;
/// let b = device.stream().clone_htod(&vec![2.0f32; 1 << 20])?;
/// let mut c = device.stream().alloc_zeros::<f32>(1 << 20)?;
/// add.run(device.stream(), &a, &b, &mut c)?; // every c is 3
/// # Ok(()) }
/// ```
pub struct AddOp<T: Addable> {
    tuned: Autotuned<T::Script>,
}

impl<T: Addable> AddOp<T> {
    /// The kernel bound to `device` (nothing is compiled until it is first used).
    pub fn new(device: &Device) -> crate::Result<AddOp<T>> {
        Ok(AddOp {
            tuned: T::Script::autotuned(device)?,
        })
    }

    /// `c = a + b` on `stream`; the three buffers have the same length, at least 1.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> crate::Result<()> {
        let n = checked_len([a.len(), b.len(), c.len()])?;
        Ok(self.tuned.launch(stream, (n, a, b, c))?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(config: &T::Script, a: &[T], b: &[T], c: &mut [T]) -> crate::Result<()> {
        let n = checked_len([a.len(), b.len(), c.len()])?;
        tilus::interpret(config, (n, a, b, c))?;
        Ok(())
    }
}

/// The kernel's `n`, once the three lengths agree.
fn checked_len([a, b, c]: [usize; 3]) -> crate::Result<i32> {
    const NAME: &str = "add";
    let n = dim(NAME, "n", a, 1)?;
    length(NAME, "b", b, a)?;
    length(NAME, "c", c, a)?;
    Ok(n)
}
