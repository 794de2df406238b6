//! v1: the tensor cores read their operands straight from shared memory. TMA brings the tiles
//! in as in v0, but `load_shared` + `mma.sync` are replaced by one warp-group MMA (WGMMA) that
//! takes A and B through shared-memory descriptors, so the operands never visit the register
//! file and one instruction covers a 64×N×16 product.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out.

use tilus::prelude::*;

/// The v1 kernel. Fields are compile-time hyperparameters: the block tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_m, block_n = [(64, 128), (64, 256), (128, 128), (128, 256)])]
#[tune(block_k = [16, 32, 64])]
pub struct MatmulWgmma {
    /// Rows of C per block (a multiple of 64: one WGMMA covers 64 rows).
    pub block_m: i32,
    /// Columns of C per block (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (16, 32 or 64 halves: rows of 32, 64 or 128 bytes, one swizzle).
    pub block_k: i32,
}

impl Default for MatmulWgmma {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulWgmma {
            block_m: 128,
            block_n: 128,
            block_k: 64,
        }
    }
}

impl MatmulWgmma {
    /// The search space as configurations (for the command line and tests).
    pub fn configs() -> Vec<MatmulWgmma> {
        <MatmulWgmma as Tunable>::space()
            .bindings()
            .iter()
            .filter_map(|b| <MatmulWgmma as Tunable>::from_binding(b).ok())
            .collect()
    }

    /// The default configuration with some hyperparameters replaced (`block_m=64`, ...).
    pub fn with(settings: &[(String, i64)]) -> Result<MatmulWgmma, String> {
        tilus::tune::with_settings(&MatmulWgmma::default(), settings)
    }
}

impl MatmulWgmma {
    /// The main loop of the block at `(offset_m, offset_n)`: TMA brings a `[block_m, block_k]`
    /// tile of A and a `[block_n, block_k]` tile of B into shared memory, every thread waits
    /// for their bytes, one WGMMA accumulates their product; returns the f32 accumulator.
    /// Kernels built on v1 (the fused epilogue) call it and add what follows.
    pub fn main_loop(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<f16>, PtrVal<f16>),
        (offset_m, offset_n): (Val, Val),
    ) -> RegisterTensor<f32> {
        // outside the `#[tilus::script]` impl: the names are given by hand
        let ga = k
            .name_next("ga")
            .global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k
            .name_next("gb")
            .global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k
            .name_next("sa")
            .shared_tensor::<f16>([self.block_m, self.block_k]);
        let sb = k
            .name_next("sb")
            .shared_tensor::<f16>([self.block_n, self.block_k]);
        let acc = k
            .name_next("acc")
            .register_tensor::<f32>([self.block_m, self.block_n], 0.0);

        let tma_barrier = k.name_next("tma_barrier").mbarrier().alloc([1]);
        let phase = k.name_next("phase").var_u32(0u32);

        k.name_next("offset_k");
        k.for_range(0, k_size, self.block_k, |k, offset_k| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(tma_barrier[0], sa.nbytes() + sb.nbytes());
                k.tma()
                    .global_to_shared(&ga, &sa, [offset_m, offset_k], tma_barrier[0]);
                k.tma()
                    .global_to_shared(&gb, &sb, [offset_n, offset_k], tma_barrier[0]);
            });
            // every thread waits for the bytes: no block barrier needed before the WGMMA
            k.mbarrier().wait(tma_barrier[0], phase);

            k.wgmma().fence();
            k.wgmma().mma(&sa, &sb.transpose(), &acc);
            k.wgmma().commit_group();
            k.wgmma().wait_group(0);
            // every warp is done reading sa/sb before the next copy overwrites them
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        acc
    }
}

#[tilus::script]
impl Script for MatmulWgmma {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        k.blocks([cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]);
        k.warps(4); // one warp group

        let offset_m = k.let_i32(self.block_m * k.block_idx().x);
        let offset_n = k.let_i32(self.block_n * k.block_idx().y);

        let acc = self.main_loop(
            k,
            (m_size, n_size, k_size),
            (a_ptr, b_ptr),
            (offset_m, offset_n),
        );

        let casted_acc = k.cast::<f16>(&acc);
        let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
        k.store_global(&gc, &casted_acc, [offset_m, offset_n]);
    }
}
