//! v4: v3's producer and consumers written with the library's [`Pipeline`] (which owns the
//! ring's full and empty barriers and derives both sides' phases from the step), one WGMMA
//! group kept in flight, and a 1-D grid whose blocks take their tiles in grouped order
//! ([`Kernel::grouped_tile`]), so that the blocks running together share rows of A and
//! columns of B in L2. Registers move from the producer to the consumers as in v3
//! (`register_split`).
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out.

use crate::v3::Roles;
use tilus::prelude::*;
use tilus_kernels::gemm::products::products_one_in_flight;

/// The v4 kernel. Fields are compile-time hyperparameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
// moving registers (as v3 does) only with 128-column WGMMAs, which fit the 128 registers
// every thread starts with at two blocks per multiprocessor
#[tune(block_m, block_n, register_split = [(64, 128, 0), (64, 256, 0), (128, 128, 0), (128, 128, 1)])]
#[tune(block_k = [64])]
#[tune(stages = [3, 4])]
#[tune(group_m = [1, 8])]
pub struct MatmulPipelined {
    /// Rows of C per block (a multiple of 64: one WGMMA covers 64 rows).
    pub block_m: i32,
    /// Columns of C per block (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (64 halves: the 128-byte swizzle).
    pub block_k: i32,
    /// Tiles in the ring.
    pub stages: i32,
    /// Tile rows per group of the grid's order (1: row by row).
    pub group_m: i32,
    /// 1: a producer warp group keeping [`crate::v3::PRODUCER_REGISTERS`], the consumers the
    /// rest of the pool, two blocks per multiprocessor (v3's `register_split`); 0: five warps.
    pub register_split: i32,
}

impl Default for MatmulPipelined {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulPipelined {
            block_m: 128,
            block_n: 128,
            block_k: 64,
            stages: 4,
            group_m: 8,
            register_split: 0,
        }
    }
}

#[tilus::script]
impl Script for MatmulPipelined {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        // the grid is computed from arguments and constants only
        k.blocks([cdiv(m_size, self.block_m) * cdiv(n_size, self.block_n)]);
        let roles = Roles {
            split: self.register_split != 0,
        };
        roles.block(k);
        let tiles_m = k.let_i32(cdiv(m_size, self.block_m));
        let tiles_n = cdiv(n_size, self.block_n);
        let (tile_m, tile_n) = k.grouped_tile(k.block_idx().x, tiles_m, tiles_n, self.group_m);
        let offset_m = k.let_i32(tile_m * self.block_m);
        let offset_n = k.let_i32(tile_n * self.block_n);
        let k_tiles = k.let_i32(cdiv(k_size, self.block_k));

        let ga = k.global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k.global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k.shared_tensor::<f16>([self.stages, self.block_m, self.block_k]);
        let sb = k.shared_tensor::<f16>([self.stages, self.block_n, self.block_k]);
        let pipe = Pipeline::new(k, self.stages.max(1) as u32, 128);
        let stage_bytes = sa.at(Val::constant(0)).nbytes() + sb.at(Val::constant(0)).nbytes();

        // the producer: the first warp of the producer's group fills each stage once it is
        // empty (one elected lane issues the copies)
        k.thread_group(128, roles.producer_threads(), |k| {
            roles.enter_producer(k);
            k.single_warp(0, |k| {
                k.for_range(0, k_tiles, 1, |k, i| {
                    let slot = pipe.producer_acquire(k, i, stage_bytes);
                    let (a, b) = (sa.at(slot.stage()), sb.at(slot.stage()));
                    let offset_k = k.let_i32(i * self.block_k);
                    k.tma()
                        .global_to_shared(&ga, &a, [offset_m, offset_k], slot.barrier());
                    k.tma()
                        .global_to_shared(&gb, &b, [offset_n, offset_k], slot.barrier());
                });
            });
        });

        // the consumers: one product in flight; step i frees step i - 1's stage
        k.warp_group(0, |k| {
            roles.enter_consumers(k);
            let acc = k.register_tensor::<f32>([self.block_m, self.block_n], 0.0);
            let unroll = self.stages.max(1) as u32;
            products_one_in_flight(k, &pipe, (&sa, &sb), k_tiles, unroll, &acc);
            let casted_acc = k.cast::<f16>(&acc);
            let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
            k.store_global(&gc, &casted_acc, [offset_m, offset_n]);
        });
    }
}
