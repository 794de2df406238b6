//! The FP8 GEMM with DeepGEMM's fine-grained scales: one per 1 × 128 block of A and per
//! 128 × 128 block of B, applied to each K step's product as it is promoted into the f32
//! accumulator (a step is one block of K).

use super::kernel::{fp8_body, MatmulFp8, Scaling};
use crate::gemm::persistent::MatmulPersistent;
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

/// The arguments of [`MatmulFp8Blocks`]: `(m, n, k, a, b, a_scales, b_scales, c)`: A `[m, k]`
/// and B `[n, k]` row-major codes, A's scales `[ceil(k / 128), m]` (each block of K's scales
/// of every row together: DeepGEMM's column-major `[m, k / 128]`), B's `[ceil(n / 128),
/// ceil(k / 128)]` row-major, C `[m, n]` row-major; `n` and `k` compile-time constants, `k` a
/// multiple of 16.
pub type Fp8BlocksArgsOf<T, O> = (
    i32,
    Const<i32>,
    Const<i32>,
    Ptr<T>,
    Ptr<T>,
    Ptr<f32>,
    Ptr<f32>,
    PtrMut<O>,
);

/// `C[i, j] = Σ_kb a_scale[kb, i] · b_scale[j / 128, kb] · Σ_{x in kb} A[i, x] · B[j, x]` on
/// FP8 codes `T`, accumulated in f32, rounded once to `O`. The tile's columns must lie in one
/// block of B's scales: `block_n` 64 or 128 (the default tile is 128 × 128).
///
/// ```
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::MatmulFp8Blocks;
/// // two blocks of K, scaled 1 and 3 for A's rows; B's one block of N scaled 0.5 and 2
/// let (m, n, k) = (2usize, 8usize, 256usize);
/// let (a, b) = (vec![F8E4M3::from_f32(1.0); m * k], vec![F8E4M3::from_f32(1.0); n * k]);
/// let a_scales = [1.0f32, 1.0, 3.0, 3.0]; // [k_blocks, m]
/// let b_scales = [0.5f32, 2.0]; // [n_blocks, k_blocks]
/// let mut c = vec![f32::NAN; m * n];
/// let kernel = MatmulFp8Blocks::<F8E4M3, f32>::default();
/// let (mi, ni, ki) = (m as i32, n as i32, k as i32);
/// tilus::interpret(&kernel, (mi, ni, ki, &a[..], &b[..], &a_scales[..], &b_scales[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == 128.0 * 0.5 + 128.0 * 3.0 * 2.0));
/// # Ok::<(), tilus::Error>(())
/// ```
pub struct MatmulFp8Blocks<T, O> {
    /// The per-tensor kernel's configuration (the same tiles, `block_n` at most 128).
    pub inner: MatmulFp8<T, O>,
}

impl<T, O> MatmulFp8Blocks<T, O> {
    /// The kernel on `tile` (`block_k` 128, blocks alone).
    pub fn new(tile: MatmulPersistent) -> MatmulFp8Blocks<T, O> {
        MatmulFp8Blocks {
            inner: MatmulFp8::new(tile),
        }
    }
}

impl<T, O> Default for MatmulFp8Blocks<T, O> {
    /// The per-tensor kernel's default tile, 128 × 128.
    fn default() -> Self {
        MatmulFp8Blocks {
            inner: MatmulFp8::default(),
        }
    }
}

impl<T: Element, O: Element> Script for MatmulFp8Blocks<T, O> {
    type Args = Fp8BlocksArgsOf<T, O>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "m_size", "n_size", "k_size", "a_ptr", "b_ptr", "a_scales", "b_scales", "c_ptr",
        ]
    }

    fn name(&self) -> String {
        format!("matmul_fp8_blocks_{}_{}", T::DTYPE.name(), O::DTYPE.name())
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let dims = (args.0, args.1, args.2);
        let scaling = Scaling::Blocks(args.5, args.6);
        let i = &self.inner;
        let settings = (&i.tile, i.overlap, i.turns != 0);
        fp8_body::<T, O>(settings, k, dims, (args.3, args.4, args.7), scaling);
    }
}

/// The per-tensor kernel's space without its pairs (whose step factors beside the third
/// accumulator spill): every tile of it is at most 128 columns wide (a test says so), within
/// one block of B's scales.
impl<T: Element, O: Element> Tunable for MatmulFp8Blocks<T, O> {
    fn space() -> Space {
        super::kernel::fp8_space(false)
    }

    fn from_binding(binding: &Binding) -> Result<Self, String> {
        MatmulFp8::from_binding(binding).map(|inner| MatmulFp8Blocks { inner })
    }

    fn to_binding(&self) -> Option<Binding> {
        self.inner.to_binding()
    }
}

impl<T, O> Clone for MatmulFp8Blocks<T, O> {
    fn clone(&self) -> Self {
        MatmulFp8Blocks {
            inner: self.inner.clone(),
        }
    }
}

impl<T, O> PartialEq for MatmulFp8Blocks<T, O> {
    fn eq(&self, o: &Self) -> bool {
        self.inner == o.inner
    }
}

impl<T, O> Eq for MatmulFp8Blocks<T, O> {}

impl<T, O> std::hash::Hash for MatmulFp8Blocks<T, O> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.inner.hash(h);
    }
}

impl<T, O> std::fmt::Debug for MatmulFp8Blocks<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MatmulFp8Blocks({:?})", self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::MatmulFp8Blocks;
    use half::bf16;
    use tilus::lowp::F8E4M3;
    use tilus::tune::Tunable;

    /// Every tile of the space lies within one block of B's scales, and traces.
    /// The schedule's switches reach the blocks kernel's body: the overlapped loop and the
    /// warp groups' turns each trace another program than the plain one (they compute the
    /// same product, so only the traced program tells them apart).
    #[test]
    fn overlap_and_turns_reach_the_body() {
        use tilus::ir::print_program;
        let text = |c: &MatmulFp8Blocks<F8E4M3, bf16>| {
            print_program(&tilus::trace(c, &[4096, 4096]).unwrap())
        };
        let plain = MatmulFp8Blocks::<F8E4M3, bf16>::default();
        let with = |overlap: i32, turns: bool| MatmulFp8Blocks {
            inner: plain.inner.clone().with_overlap(overlap).with_turns(turns),
        };
        let base = text(&plain);
        assert_eq!(base, text(&with(0, false)));
        // the overlapped loop walks the steps in pairs, or in longer runs
        assert!(!base.contains("let pairs"), "a step at a time");
        let paired = text(&with(1, false));
        assert!(paired.contains("let pairs"), "two steps at a time");
        assert!(!paired.contains("let runs"), "pairs only");
        let runs = text(&with(4, false));
        assert!(runs.contains("let runs"), "runs of eight steps");
        let turns = text(&with(0, true));
        assert_ne!(base, turns);
        assert!(
            !base.contains("turn_phase") && turns.contains("turn_phase"),
            "the turns' waits"
        );
    }

    /// A copy is the same configuration (the autotuner and the host API keep copies as
    /// keys), at every point of the space.
    #[test]
    fn a_copy_is_the_same_configuration() {
        for b in MatmulFp8Blocks::<F8E4M3, bf16>::space().bindings() {
            let c = MatmulFp8Blocks::<F8E4M3, bf16>::from_binding(&b).unwrap();
            assert!(c.clone() == c, "{c:?}");
        }
    }

    #[test]
    fn every_tile_of_the_space_fits_a_block_of_scales() {
        for b in MatmulFp8Blocks::<F8E4M3, bf16>::space().bindings() {
            let config = MatmulFp8Blocks::<F8E4M3, bf16>::from_binding(&b).unwrap();
            assert!(128 % config.inner.tile.block_n == 0, "{config:?}");
            tilus::trace(&config, &[4096, 4096]).unwrap();
        }
    }
}
