//! v2: a ring of `stages` shared-memory tiles, so that TMA copies run ahead of the tensor
//! cores. v1 waits for every copy before its WGMMA; here a prologue fills the ring, and each
//! step of the main loop waits for its stage, runs the WGMMA on it, and then refills that
//! stage with the tile `stages` steps ahead, while the copies of the next stages are in flight.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out. One mbarrier per stage; the phase of step `i` is `(i / stages) % 2`
//! (each stage completes once per trip round the ring).

use tilus::prelude::*;

/// The v2 kernel. Fields are compile-time hyperparameters: the block tile and the ring's depth.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_m, block_n = [(64, 128), (64, 256), (128, 128), (128, 256)])]
#[tune(block_k = [32, 64])]
#[tune(stages = [2, 3, 4])]
pub struct MatmulStaged {
    /// Rows of C per block (a multiple of 64: one WGMMA covers 64 rows).
    pub block_m: i32,
    /// Columns of C per block (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (32 or 64 halves: rows of 64 or 128 bytes, one swizzle).
    pub block_k: i32,
    /// Tiles in the ring.
    pub stages: i32,
}

impl Default for MatmulStaged {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulStaged {
            block_m: 128,
            block_n: 128,
            block_k: 64,
            stages: 3,
        }
    }
}

impl MatmulStaged {
    /// The main loop of the block at `(offset_m, offset_n)`: the ring is filled, then each K
    /// step waits for its stage, runs the WGMMA on it and refills it `stages` steps ahead;
    /// returns the f32 accumulator. Kernels built on v2 (the fused epilogue) call it and add
    /// what follows. (Outside the `#[tilus::script]` impl, so the names are given by hand.)
    pub fn main_loop(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<f16>, PtrVal<f16>),
        (offset_m, offset_n): (Val, Val),
    ) -> RegisterTensor<f32> {
        let k_tiles = k.name_next("k_tiles").let_i32(cdiv(k_size, self.block_k));

        let ga = k
            .name_next("ga")
            .global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k
            .name_next("gb")
            .global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k
            .name_next("sa")
            .shared_tensor::<f16>([self.stages, self.block_m, self.block_k]);
        let sb = k
            .name_next("sb")
            .shared_tensor::<f16>([self.stages, self.block_n, self.block_k]);
        let acc = k
            .name_next("acc")
            .register_tensor::<f32>([self.block_m, self.block_n], 0.0);
        let full = k
            .mbarrier()
            .alloc_counts(&vec![1; self.stages.max(0) as usize]);

        // one thread copies K step `tile` into `stage`; its bytes complete on the stage's barrier
        let load = |k: &mut Kernel, stage: Val, tile: Scalar| {
            let (a, b, bar) = (sa.at(stage), sb.at(stage), full.at(stage));
            k.mbarrier()
                .arrive_and_expect_tx(bar, a.nbytes() + b.nbytes());
            let offset_k = tile * self.block_k;
            k.tma()
                .global_to_shared(&ga, &a, (offset_m, offset_k.clone()), bar);
            k.tma().global_to_shared(&gb, &b, (offset_n, offset_k), bar);
        };

        // the prologue fills the ring
        k.single_thread(|k| {
            for s in 0..self.stages {
                k.if_(Scalar::from(s).lt(k_tiles), |k| {
                    load(k, Val::constant(s), Scalar::from(s))
                });
            }
        });

        k.name_next("i");
        k.for_range(0, k_tiles, 1, |k, i| {
            let stage = k.name_next("stage").let_i32(i % self.stages);
            let phase = k.name_next("phase").let_i32(i / self.stages % 2);
            k.mbarrier().wait(full.at(stage), phase);

            k.wgmma().fence();
            k.wgmma()
                .mma(&sa.at(stage), &sb.at(stage).transpose(), &acc);
            k.wgmma().commit_group();
            k.wgmma().wait_group(0);
            // every warp is done reading the stage before it is refilled
            k.sync();
            k.single_thread(|k| {
                k.if_((i + self.stages).lt(k_tiles), |k| {
                    load(k, stage, i + self.stages)
                });
            });
        });
        acc
    }
}

#[tilus::script]
impl Script for MatmulStaged {
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
