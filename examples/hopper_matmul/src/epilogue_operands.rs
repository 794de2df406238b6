//! The fused epilogue's operands D and bias, fetched halfway through each tile's main loop so
//! that they land while the tensor cores work: each consumer warp group copies its next tile's
//! D and bias of its first chunks with TMA into shared buffers, and loads the D and bias of
//! its other chunks into registers (a global load does not wait until its registers are read). In
//! the epilogue it reads a buffer in the accumulator's layout, writes C's chunk over it and
//! stores it with TMA; a later chunk's C goes through the buffer of the chunk [`BUFFER_BYTES`]
//! earlier, whose store has long read it. The epilogue waits on no load.
//!
//! Per consumer warp group: [`BUFFER_BYTES`] of chunk buffers (`[block_m / 2, width]` halves
//! each: the 16 KiB v6's staging takes, which leaves room for four stages of 128 × 256
//! tiles), their chunks' bias in `[width / 8, 8]` stages (rows of 16 bytes need no swizzle,
//! so a stage takes 128 bytes), and one barrier per buffer that its chunk's copies complete
//! once per tile.

use crate::v6::{columns, MatmulPersistent, TileAt};
use std::cell::RefCell;
use tilus::prelude::*;

/// Bytes of chunk buffers per consumer warp group.
pub const BUFFER_BYTES: i32 = 16 * 1024;

/// Halves per row of a bias stage.
const BIAS_ROW: i32 = 8;

/// D, the bias and C, with the shared buffers D and the bias land in.
pub struct StagedOperands {
    gd: GlobalTensor<f16>,
    gbias: GlobalTensor<f16>,
    gc: GlobalTensor<f16>,
    /// Per consumer warp group: its buffers of D's first chunks, then of C's chunks.
    d: [SharedTensor<f16>; 2],
    /// Per consumer warp group: the bias of each buffer's chunk, `[buffers, width / 8, 8]`.
    bias: [SharedTensor<f16>; 2],
    /// Per consumer warp group: one barrier per buffer.
    landed: [Barriers; 2],
    /// Per consumer warp group: the D and bias of the chunks past the buffers, as the tile's
    /// prefetch loaded them (set while the main loop is traced, read by the epilogue after
    /// it).
    held: [RefCell<Vec<Held>>; 2],
    rows: i32,
    /// Columns per chunk.
    width: i32,
    chunks: i32,
    /// Buffers per warp group.
    buffers: i32,
    block_n: i32,
}

/// A chunk's D and bias (`[width / 8, 8]`) in registers.
#[derive(Clone, Copy)]
struct Held {
    d: RegisterTensor<f16>,
    bias: RegisterTensor<f16>,
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
    /// be a multiple of 16 bytes, as TMA needs: the caller checks). `gbias` is the bias seen
    /// as `[n / 8, 8]`.
    pub fn new(
        k: &mut Kernel,
        (gd, gbias, gc): (GlobalTensor<f16>, GlobalTensor<f16>, GlobalTensor<f16>),
        t: &MatmulPersistent,
        width: i32,
    ) -> StagedOperands {
        let rows = t.block_m / 2;
        let width = width.min(t.block_n);
        let chunks = (t.block_n / width).max(1);
        let buffers = (BUFFER_BYTES / (rows * width * 2)).clamp(1, chunks);
        let d = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sd0" } else { "sd1" })
                .shared_tensor::<f16>([buffers, rows, width])
        });
        let bias = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sbias0" } else { "sbias1" })
                .shared_tensor::<f16>([buffers, width / BIAS_ROW, BIAS_ROW])
        });
        let landed = [0, 1].map(|_| k.mbarrier().alloc_counts(&vec![1; buffers as usize]));
        StagedOperands {
            gd,
            gbias,
            gc,
            d,
            bias,
            landed,
            held: Default::default(),
            rows,
            width,
            chunks,
            buffers,
            block_n: t.block_n,
        }
    }

    /// Consumer warp group `g`, halfway through the main loop of the tile at `at`: once the
    /// stores of its last tile have read the buffers, one thread copies the first chunks' D
    /// and bias into them; then every thread loads the other chunks' D and bias into
    /// registers.
    pub fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        k.single_thread(|k| {
            k.tma().wait_group_read(0);
            for b in 0..self.buffers {
                let bar = self.landed[g].at(Val::constant(b));
                let (d, bias) = (self.d[g].at(b), self.bias[g].at(b));
                k.mbarrier()
                    .arrive_and_expect_tx(bar, d.nbytes() + bias.nbytes());
                let cols = k.let_i32(at.cols + b * self.width);
                k.tma().global_to_shared(&self.gd, &d, [at.rows, cols], bar);
                let bias_row = k.let_i32(cols / BIAS_ROW);
                k.tma()
                    .global_to_shared(&self.gbias, &bias, [bias_row, Val::constant(0)], bar);
            }
        });
        let held = (self.buffers..self.chunks)
            .map(|j| {
                let cols = k.let_i32(at.cols + j * self.width);
                let d = k.name_next("d_held").load_global(
                    &self.gd,
                    [at.rows, cols],
                    [self.rows, self.width],
                );
                let bias_row = k.let_i32(cols / BIAS_ROW);
                let rows = k.name_next("bias_held").load_global(
                    &self.gbias,
                    [bias_row, Val::constant(0)],
                    [self.width / BIAS_ROW, BIAS_ROW],
                );
                Held { d, bias: rows }
            })
            .collect();
        *self.held[g].borrow_mut() = held;
    }

    /// Consumer warp group `g`'s tile at `at`: chunk by chunk, `f` computes C's chunk from its
    /// D (from its buffer once the copies have landed, or from the registers the prefetch
    /// loaded) and bias, and it is stored with TMA (clipped at C's edges) from chunk
    /// `j % buffers`'s buffer, over that chunk's D.
    pub fn tile(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        f: &ChunkFn<'_>,
    ) {
        let held = self.held[g].borrow().clone();
        let phase = k.name_next("landed_phase").let_i32(at.index % 2);
        for j in 0..self.chunks {
            let b = j % self.buffers;
            let buffer = self.d[g].at(b);
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * self.width, self.width);
            let (d, bias_rows) = if j < self.buffers {
                k.mbarrier()
                    .wait(self.landed[g].at(Val::constant(b)), phase);
                let d = k.name_next("d").load_shared(&buffer);
                let bias = k.name_next("bias_rows").load_shared(&self.bias[g].at(b));
                (d, bias)
            } else {
                let h = &held[(j - self.buffers) as usize];
                (h.d, h.bias)
            };
            let bias = k.name_next("bias").reshape(&bias_rows, [self.width]);
            let out = f(k, part, d, bias);
            if j >= self.buffers {
                // the store of the chunk that last used the buffer has read it
                k.single_thread(|k| k.tma().wait_group_read(self.buffers as u32 - 1));
            }
            // every thread has read what the buffer held before any overwrites it
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
