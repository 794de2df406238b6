//! v0: a minimal Hopper matmul. TMA copies tiles of A and B into shared memory, an mbarrier
//! tracks their arrival, and the tensor cores run the Ampere way: operands staged into
//! registers (ldmatrix) and multiplied with mma.sync.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out.

use tilus::prelude::*;

/// The v0 kernel. Fields are compile-time hyperparameters: the block tile.
///
/// The `#[tune]` attributes are the seed's search space, its stacked
/// `@tilus.autotune("block_m, block_n", [...])` and `@tilus.autotune("block_k", [...])`
/// decorators: (block_m, block_n) × block_k, 15 configurations, from which
/// `#[derive(Tunable)]` writes the autotuner's `Tunable` impl.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_m, block_n = [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)])]
#[tune(block_k = [16, 32, 64])]
pub struct MatmulTma {
    /// Rows of C per block.
    pub block_m: i32,
    /// Columns of C per block.
    pub block_n: i32,
    /// Depth of one K step.
    pub block_k: i32,
}

impl MatmulTma {
    /// The seed's search space as configurations: the 15 points of the derived
    /// [`Tunable::space`], the first attribute varying slowest (for the command line's
    /// registry and for tests, which want the configurations themselves).
    pub fn space() -> Vec<MatmulTma> {
        <MatmulTma as Tunable>::space()
            .bindings()
            .iter()
            .map(|b| {
                <MatmulTma as Tunable>::from_binding(b)
                    .expect("the derive checked every value of the space against its field")
            })
            .collect()
    }
}

impl MatmulTma {
    /// The default configuration with some hyperparameters replaced (`block_m=128`, ...).
    pub fn with(settings: &[(String, i64)]) -> Result<MatmulTma, String> {
        tilus::tune::with_settings(&MatmulTma::default(), settings)
    }
}

impl Default for MatmulTma {
    /// The configuration the seed's autotuner settles on.
    fn default() -> Self {
        MatmulTma {
            block_m: 64,
            block_n: 128,
            block_k: 64,
        }
    }
}

#[tilus::script]
impl Script for MatmulTma {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        k.blocks([cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]);
        k.warps(4);

        let offset_m = k.let_i32(self.block_m * k.block_idx().x);
        let offset_n = k.let_i32(self.block_n * k.block_idx().y);

        let ga = k.global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k.global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k.shared_tensor::<f16>([self.block_m, self.block_k]);
        let sb = k.shared_tensor::<f16>([self.block_n, self.block_k]);
        let acc = k.register_tensor::<f32>([self.block_m, self.block_n], 0.0);

        let tma_barrier = k.mbarrier().alloc([1]);
        let phase = k.var_u32(0u32);

        k.for_range(0, k_size, self.block_k, |k, offset_k| {
            // issue asynchronous copies of the A and B tiles
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(tma_barrier[0], sa.nbytes() + sb.nbytes());
                k.tma()
                    .global_to_shared(&ga, &sa, [offset_m, offset_k], tma_barrier[0]);
                k.tma()
                    .global_to_shared(&gb, &sb, [offset_n, offset_k], tma_barrier[0]);
                k.mbarrier().wait(tma_barrier[0], phase);
            });
            // only one thread waited: make the data visible to the whole block
            k.sync();

            let a = k.load_shared(&sa);
            let b = k.load_shared(&sb);
            k.dot(&a, &b.transpose(), &acc, &acc);
            // everyone is done reading sa/sb before the next copy overwrites them
            k.sync();
            k.assign(phase, phase ^ 1);
        });

        let casted_acc = k.cast::<f16>(&acc);
        let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
        k.store_global(&gc, &casted_acc, [offset_m, offset_n]);
    }
}
