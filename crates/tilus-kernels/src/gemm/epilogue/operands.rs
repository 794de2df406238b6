//! The fused epilogue's operands D and bias in shared memory: each consumer warp group copies
//! the D and bias of its next tile's first chunks with TMA halfway through the tile's main
//! loop (the copies land while the tensor cores work), reads them from shared memory in the
//! accumulator's layout, writes the result over the chunk's D and stores it with TMA; a
//! buffer whose store has read it takes a later chunk's D. The epilogue then waits on no
//! global load for its first chunks, and the buffers double as the TMA stores' staging.
//!
//! Per consumer warp group, at least [`BUFFER_BYTES`] of chunk buffers (`[rows, width]` halves
//! each, a warp group's rows of a tile: the 16 KiB v6's staging takes, which leaves room for four
//! stages of 128 × 256 tiles; narrower chunks give more buffers, so a copy has more chunks' work
//! to land behind), or as many as the ring leaves room for (up to the whole tile), and
//! their bias (`[width / 8, 8]` halves: rows of 16 bytes need no swizzle, so a stage takes
//! 128 bytes), and one barrier per buffer that each copy into it completes.

use crate::gemm::persistent::MatmulPersistent;
use crate::gemm::tile_epilogue::{columns, stage_and_store, TileAt};
use tilus::passes::MAX_SHARED_BYTES;
use tilus::prelude::*;

/// Bytes of chunk buffers per consumer warp group at least (more where the ring leaves room).
pub const BUFFER_BYTES: i32 = 16 * 1024;

/// Bytes of shared memory kept for the barriers and the alignment of the buffers beside the
/// ring and the chunk buffers.
const RESERVED_BYTES: i64 = 4096;

/// Shared memory the ring of `t` leaves for both warp groups' chunk buffers: with fewer
/// stages, a warp group's buffers can hold its whole tile, and then the epilogue waits on no
/// copy of D issued within it (each chunk's D and bias were copied halfway through the main
/// loop; with four buffers of eight chunks, chunk 4's copy is issued at chunk 1 and has three
/// chunks' work to land behind, less than a load from DRAM takes).
fn spare_bytes(t: &MatmulPersistent) -> i64 {
    let stage = (i64::from(t.block_m) + i64::from(t.block_n)) * i64::from(t.block_k) * 2;
    i64::from(MAX_SHARED_BYTES) - i64::from(t.stages.max(1)) * stage - RESERVED_BYTES
}

/// Halves per row of a bias stage.
const BIAS_ROW: i32 = 8;

/// D, the bias and C, with the shared buffers D and the bias land in.
pub struct StagedOperands {
    gd: GlobalTensor<f16>,
    gbias: GlobalTensor<f16>,
    gc: GlobalTensor<f16>,
    /// Per consumer warp group: its buffers of D's chunks, then C's.
    d: [SharedTensor<f16>; 2],
    /// Per consumer warp group: the bias of each buffer's chunk, `[width / 8, 8]`.
    bias: [SharedTensor<f16>; 2],
    /// Per consumer warp group: one barrier per buffer, each copy's bytes on it.
    landed: [Barriers; 2],
    /// Columns per chunk.
    width: i32,
    chunks: i32,
    /// Buffers per warp group (`chunks` is a multiple).
    buffers: i32,
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
    /// be a multiple of 16 bytes, as TMA needs: the caller checks). `gbias` is the bias seen
    /// as `[n / 8, 8]`.
    pub fn new(
        k: &mut Kernel,
        (gd, gbias, gc): (GlobalTensor<f16>, GlobalTensor<f16>, GlobalTensor<f16>),
        t: &MatmulPersistent,
        width: i32,
    ) -> StagedOperands {
        // sizes out of range are the verifier's to reject: the arithmetic here only must not
        // overflow or divide by zero on the way there
        let rows = t.group_rows();
        let width = width.min(t.block_n).max(1);
        let chunks = (t.block_n / width).max(1);
        // as many as fit, dividing the chunks (each buffer is then filled as often a tile)
        let chunk_bytes = (i64::from(rows) * i64::from(width) * 2).max(1);
        let bias_bytes = i64::from((width / BIAS_ROW).max(1) * BIAS_ROW * 2);
        let room = (spare_bytes(t) / 2 / (chunk_bytes + bias_bytes)).max(0);
        let mut buffers = (i64::from(BUFFER_BYTES) / chunk_bytes)
            .max(room)
            .clamp(1, i64::from(chunks)) as i32;
        while chunks % buffers != 0 {
            buffers -= 1;
        }
        let d = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sd0" } else { "sd1" })
                .shared_tensor::<f16>([buffers, rows, width])
        });
        let bias = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sbias0" } else { "sbias1" })
                .shared_tensor::<f16>([buffers, (width / BIAS_ROW).max(1), BIAS_ROW])
        });
        let landed = [0, 1].map(|_| k.mbarrier().alloc_counts(&vec![1; buffers as usize]));
        StagedOperands {
            gd,
            gbias,
            gc,
            d,
            bias,
            landed,
            width,
            chunks,
            buffers,
            block_n: t.block_n,
        }
    }

    /// One thread copies chunk `j`'s D and bias into its buffer.
    fn copy_chunk(&self, k: &mut Kernel, g: usize, at: &TileAt, j: i32) {
        let b = j % self.buffers;
        let bar = self.landed[g].at(Val::constant(b));
        let (d, bias) = (self.d[g].at(b), self.bias[g].at(b));
        k.mbarrier()
            .arrive_and_expect_tx(bar, d.nbytes() + bias.nbytes());
        let cols = k.let_i32(at.cols + j * self.width);
        k.tma().global_to_shared(&self.gd, &d, [at.rows, cols], bar);
        let bias_row = k.let_i32(cols / BIAS_ROW);
        k.tma()
            .global_to_shared(&self.gbias, &bias, [bias_row, Val::constant(0)], bar);
    }

    /// Consumer warp group `g`, halfway through the main loop of the tile at `at`: once the
    /// stores of its last tile have read the buffers, one thread copies the first chunks' D
    /// and bias into them.
    pub fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        k.single_thread(|k| {
            k.tma().wait_group_read(0);
            for j in 0..self.buffers {
                self.copy_chunk(k, g, at, j);
            }
        });
    }

    /// Consumer warp group `g`'s tile at `at`: chunk by chunk, once its D and bias have
    /// landed, `f` computes C's chunk from them, which replaces D in the buffer and is stored
    /// with TMA (clipped at C's edges); once that store has read the buffer (checked after
    /// the next chunk's store is issued, so that it has a chunk's work to drain), the chunk
    /// `buffers` later is copied into it.
    pub fn tile(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        f: &ChunkFn<'_>,
    ) {
        // each buffer is filled `chunks / buffers` times a tile
        let rounds = self.chunks / self.buffers;
        let first = k.name_next("landed_round").let_i32(at.index * rounds);
        for j in 0..self.chunks {
            let b = j % self.buffers;
            let buffer = self.d[g].at(b);
            let phase = k.let_i32((first + j / self.buffers) % 2);
            k.mbarrier()
                .wait(self.landed[g].at(Val::constant(b)), phase);
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * self.width, self.width);
            let d = k.name_next("d").load_shared(&buffer);
            let bias_rows = k.name_next("bias_rows").load_shared(&self.bias[g].at(b));
            let bias = k.name_next("bias").reshape(&bias_rows, [self.width]);
            let out = f(k, part, d, bias);
            // every thread has read the chunk's D before any overwrites it
            k.sync_group();
            let cols = k.let_i32(at.cols + j * self.width);
            let place = [Scalar::from(at.rows), Scalar::from(cols)];
            stage_and_store(k, (&buffer, &out), &self.gc, place, |k| {
                // the chunk before this one refills its buffer once its store (not this
                // one's, which has only just started) has read it; with one buffer, this
                // chunk's own
                let lag = i32::from(self.buffers > 1);
                let done = j - lag;
                if done >= 0 && done + self.buffers < self.chunks {
                    k.tma().wait_group_read(lag as u32);
                    self.copy_chunk(k, g, at, done + self.buffers);
                }
            });
        }
    }

    /// After consumer warp group `g`'s last tile: its stores are complete.
    pub fn finish(&self, k: &mut Kernel, _g: usize) {
        k.single_thread(|k| k.tma().wait_group(0));
    }
}
