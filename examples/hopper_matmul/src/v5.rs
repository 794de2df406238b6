//! v5: two consumer warp groups. The block tile is split by rows between warp group 0
//! (threads 0-127) and warp group 1 (threads 128-255), each with its own
//! `[block_m / 2, block_n]` accumulator, reading its own half of A and the whole B tile of a
//! stage; a producer after them fills the ring with three TMA copies per stage (A's two halves
//! and B). The empty barrier of a stage counts one arrival per warp group. Twice the work
//! per stage for the same copies of B, and two warp groups to keep the tensor cores busy.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out. The ring is v4's [`Pipeline`], the grid v4's grouped order; each
//! consumer warp group keeps one product in flight and frees the previous step's stage.
//!
//! With `register_split = 1` the producer is a whole warp group (twelve warps), which keeps
//! [`PRODUCER_REGISTERS`] per thread and leaves the consumers [`CONSUMER_REGISTERS`]; with 0 it
//! is one warp (nine warps) and the compiler allots registers evenly.

use tilus::prelude::*;
use tilus_kernels::gemm::cooperative::{
    Cooperative, CooperativeShape, CONSUMER_REGISTERS, PRODUCER_REGISTERS,
};

/// The v5 kernel. Fields are compile-time hyperparameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_m, block_n = [(128, 128), (128, 256), (256, 128)])]
#[tune(block_k = [64])]
#[tune(stages = [3, 4])]
#[tune(register_split = [0, 1])]
#[tune(group_m = [1, 8])]
pub struct MatmulCooperative {
    /// Rows of C per block: two warp groups of `block_m / 2` rows each (a multiple of 128).
    pub block_m: i32,
    /// Columns of C per block (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (64 halves: 128-byte rows, the 128-byte swizzle).
    pub block_k: i32,
    /// Tiles in the ring.
    pub stages: i32,
    /// 1: move registers from a producer warp group to the consumers; 0: a producer warp.
    pub register_split: i32,
    /// Tile rows per group of the 1-D grid's order (1: row by row; see
    /// [`Kernel::grouped_tile`]).
    pub group_m: i32,
}

impl Default for MatmulCooperative {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulCooperative {
            block_m: 128,
            block_n: 256,
            block_k: 64,
            stages: 4,
            register_split: 1,
            group_m: 8,
        }
    }
}

#[tilus::script]
impl Script for MatmulCooperative {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        self.tiles(
            k,
            (m_size, n_size, k_size),
            (a_ptr, b_ptr),
            |k, acc, rows, cols| {
                let casted_acc = k.cast::<f16>(acc);
                let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
                k.store_global(&gc, &casted_acc, [rows, cols]);
            },
        );
    }
}

impl MatmulCooperative {
    /// Everything but the epilogue: the grid in grouped order, the warps, the ring and its
    /// producer, and both consumer warp groups' main loops. Each consumer warp group then
    /// runs `epilogue(k, acc, rows, cols)` on its `[block_m / 2, block_n]` accumulator,
    /// whose first element is C's `(rows, cols)`. Shared with the fused epilogue kernel
    /// (`crate::epilogue`), which runs its own epilogue here.
    pub fn tiles(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<f16>, PtrVal<f16>),
        epilogue: impl Fn(&mut Kernel, &RegisterTensor<f32>, Val, Val),
    ) {
        k.blocks([cdiv(m_size, self.block_m) * cdiv(n_size, self.block_n)]);
        let split = self.register_split != 0;
        // two consumer warp groups, then the producer: a warp group or a warp
        k.warps(if split { 12 } else { 9 });
        let half_m = self.block_m / 2;

        let tiles_m = k.name_next("tiles_m").let_i32(cdiv(m_size, self.block_m));
        let tiles_n = cdiv(n_size, self.block_n);
        let (tile_m, tile_n) = k.grouped_tile(k.block_idx().x, tiles_m, tiles_n, self.group_m);
        let offset_m = k.name_next("offset_m").let_i32(tile_m * self.block_m);
        let offset_n = k.name_next("offset_n").let_i32(tile_n * self.block_n);
        let k_tiles = k.name_next("k_tiles").let_i32(cdiv(k_size, self.block_k));

        let ring = Cooperative::new(k, self.shape(), (m_size, n_size, k_size), (a_ptr, b_ptr));

        // the producer: the first warp of the producer's group issues the three copies of a
        // stage once it is empty (one elected lane each)
        k.thread_group(256, if split { 128 } else { 32 }, |k| {
            if split {
                k.set_max_registers(PRODUCER_REGISTERS);
            }
            k.single_warp(0, |k| {
                k.name_next("i");
                k.for_range(0, k_tiles, 1, |k, i| ring.fill(k, i, i, offset_m, offset_n));
            });
        });

        // the consumers: warp group g multiplies its half of A by B, one product in flight
        for g in 0..2 {
            k.thread_group(128 * g as u32, 128, |k| {
                if split {
                    k.set_max_registers(CONSUMER_REGISTERS);
                }
                let acc = k
                    .name_next("acc")
                    .register_tensor::<f32>([half_m, self.block_n], 0.0);
                k.name_next("i");
                k.for_range_unrolled(0, k_tiles, 1, self.stages.max(1) as u32, |k, i| {
                    ring.multiply(k, g, i, &acc);
                    // this step's stage is freed by the next step, once its product is done
                    ring.release(k, i - 1);
                });
                k.wgmma().wait_group(0);
                let rows = k.name_next("rows").let_i32(offset_m + half_m * g as i32);
                epilogue(k, &acc, rows, offset_n);
            });
        }
    }

    /// The block's shape for [`Cooperative::new`].
    fn shape(&self) -> CooperativeShape {
        CooperativeShape {
            block_m: self.block_m,
            block_n: self.block_n,
            block_k: self.block_k,
            stages: self.stages,
            ping_pong: false,
        }
    }
}
