//! The fused epilogue's operands D and bias in shared memory: each consumer warp group copies
//! its next tile's D and bias chunks with TMA halfway through the tile's main loop (the
//! copies land while the tensor cores work), reads them from shared memory in the
//! accumulator's layout, writes the result over the chunk's D and stores it with TMA. The
//! epilogue then waits on no global load; the buffers double as the TMA stores' staging.
//!
//! Per consumer warp group, one buffer per chunk (`[chunks, block_m / 2, width]` halves, a
//! whole tile's D: 32 KiB at 128 × 256 tiles) and its bias (`[chunks, width]`), and one
//! barrier per chunk that the copies complete once per tile (phase `tile index % 2`).

use crate::v6::{columns, MatmulPersistent, TileAt};
use tilus::prelude::*;

/// D, the bias and C, with the shared buffers D and the bias land in.
pub struct StagedOperands {
    gd: GlobalTensor<f16>,
    gbias: GlobalTensor<f16>,
    gc: GlobalTensor<f16>,
    /// Per consumer warp group: D's chunks of its half of a tile, then C's.
    d: [SharedTensor<f16>; 2],
    /// Per consumer warp group: the bias of each chunk's columns.
    bias: [SharedTensor<f16>; 2],
    /// Per consumer warp group: one barrier per chunk, the copies' bytes on it.
    landed: [Barriers; 2],
    /// Columns per chunk.
    width: i32,
    chunks: i32,
    block_n: i32,
}

/// What the epilogue computes from a chunk: `(accumulator columns, D, bias)` to the f16
/// result, all in the accumulator's layout.
pub type ChunkFn<'a> = dyn Fn(
        &mut Kernel,
        RegisterTensor<f32>,
        RegisterTensor<f16>,
        RegisterTensor<f16>,
    ) -> RegisterTensor<f16>
    + 'a;

impl StagedOperands {
    /// The buffers and barriers for tiles of `t` in chunks of `width` columns (C's rows must
    /// be a multiple of 16 bytes, as TMA needs: the caller checks).
    pub fn new(
        k: &mut Kernel,
        (gd, gbias, gc): (GlobalTensor<f16>, GlobalTensor<f16>, GlobalTensor<f16>),
        t: &MatmulPersistent,
        width: i32,
    ) -> StagedOperands {
        let rows = t.block_m / 2;
        let width = width.min(t.block_n);
        let chunks = (t.block_n / width).max(1);
        let d = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sd0" } else { "sd1" })
                .shared_tensor::<f16>([chunks, rows, width])
        });
        let bias = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sbias0" } else { "sbias1" })
                .shared_tensor::<f16>([chunks, width])
        });
        let landed = [0, 1].map(|_| k.mbarrier().alloc_counts(&vec![1; chunks as usize]));
        StagedOperands {
            gd,
            gbias,
            gc,
            d,
            bias,
            landed,
            width,
            chunks,
            block_n: t.block_n,
        }
    }

    /// Consumer warp group `g`, halfway through the main loop of the tile at `at`: once the
    /// stores of its last tile have read the buffers, one thread copies each chunk's D and
    /// bias into them.
    pub fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        k.single_thread(|k| {
            k.tma().wait_group_read(0);
            for j in 0..self.chunks {
                let bar = self.landed[g].at(Val::constant(j));
                let (d, bias) = (self.d[g].at(j), self.bias[g].at(j));
                k.mbarrier()
                    .arrive_and_expect_tx(bar, d.nbytes() + bias.nbytes());
                let cols = k.let_i32(at.cols + j * self.width);
                k.tma().global_to_shared(&self.gd, &d, [at.rows, cols], bar);
                k.tma().global_to_shared(&self.gbias, &bias, [cols], bar);
            }
        });
    }

    /// Consumer warp group `g`'s tile at `at`: chunk by chunk, once its D and bias have
    /// landed, `f` computes C's chunk from them, which replaces D in the buffer and is stored
    /// with TMA (clipped at C's edges).
    pub fn tile(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        f: &ChunkFn<'_>,
    ) {
        let phase = k.name_next("landed_phase").let_i32(at.index % 2);
        for j in 0..self.chunks {
            let buffer = self.d[g].at(j);
            k.mbarrier()
                .wait(self.landed[g].at(Val::constant(j)), phase);
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * self.width, self.width);
            let d = k.name_next("d").load_shared(&buffer);
            let bias = k.name_next("bias").load_shared(&self.bias[g].at(j));
            let out = f(k, part, d, bias);
            // every thread has read the chunk's D before any overwrites it
            k.sync_group();
            k.store_shared(&buffer, &out);
            k.fence_proxy_async();
            k.sync_group();
            let cols = k.let_i32(at.cols + j * self.width);
            k.single_thread(|k| {
                k.tma().shared_to_global(&buffer, &self.gc, [at.rows, cols]);
                k.tma().commit_group();
            });
        }
    }

    /// After consumer warp group `g`'s last tile: its stores are complete.
    pub fn finish(&self, k: &mut Kernel, _g: usize) {
        k.single_thread(|k| k.tma().wait_group(0));
    }
}
