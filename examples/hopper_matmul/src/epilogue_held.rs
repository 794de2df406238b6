//! The fused epilogue's operands for cooperative warp groups whose stores are deferred: each
//! consumer warp group loads its share of the next tile's D straight into registers halfway
//! through the tile's main loop (in the accumulator's layout: the loads land while the
//! tensor cores work, and the epilogue reads no shared memory for D and waits on no copy),
//! and copies the tile's bias into shared memory with TMA at the same point. The epilogue then
//! only computes: chunk by chunk, `f` turns the accumulator's columns, D's and the bias into
//! C's chunk, held in registers (cast to f16) and stored with TMA under the next tile's first
//! K steps, one chunk after each, as v6 stores its own ([`crate::v6_epilogue::CastAndStore`]).
//!
//! Registers: the accumulator's 128 per thread, D's 64 from halfway through the main loop
//! to the epilogue, the held result's 64 from the epilogue to the next tile's first steps
//! (D's are dead by then). Shared memory: v6's staging buffers and 512 bytes of bias per warp
//! group beside the four stages of 128 × 256 tiles.

use std::cell::RefCell;

use crate::epilogue_operands::ChunkFn;
use crate::v6::MatmulPersistent;
use crate::v6_epilogue::{columns, CStores, TileAt, STORE_CHUNK};
use tilus::prelude::*;

/// Halves per row of the bias in shared memory (rows of 16 bytes need no swizzle).
const BIAS_ROW: i32 = 8;

/// D in registers, the bias in shared memory, C held and stored under the next tile's main
/// loop.
pub struct HeldOperands {
    gd: GlobalTensor<f16>,
    /// The bias seen as `[n / 8, 8]`.
    gbias: GlobalTensor<f16>,
    stores: CStores<f16>,
    /// Per consumer warp group: its tile's bias, `[chunks, width / 8, 8]`.
    bias: [SharedTensor<f16>; 2],
    /// Per consumer warp group: the barrier its bias copies complete, once per tile.
    landed: [Barriers; 2],
    /// Rows of a consumer warp group's share of a tile.
    rows: i32,
    /// Columns per chunk of C's stores.
    width: i32,
    chunks: i32,
    block_n: i32,
    /// Per consumer warp group: its share of the current tile's D, chunk by chunk, from the
    /// prefetch to the epilogue of the same tile.
    d: RefCell<[Option<Vec<RegisterTensor<f16>>>; 2]>,
    /// Per consumer warp group: the result it holds (after [`HeldOperands::begin`]).
    held: RefCell<[Option<Held>; 2]>,
}

/// A tile's result held for the next tile's main loop to store: its chunks, cast to f16 in the
/// accumulator's layout, where it goes, and whether there is one (0 before the first tile).
#[derive(Clone)]
struct Held {
    chunks: Vec<RegisterTensor<f16>>,
    rows: Val,
    cols: Val,
    some: Val,
}

impl HeldOperands {
    /// The buffers and barriers for tiles of `t` (cooperative, C's rows a multiple of 16
    /// bytes, as TMA needs: the caller checks); `n_size` is C's columns, `gbias` the bias seen
    /// as `[n / 8, 8]`.
    pub fn new(
        k: &mut Kernel,
        (gd, gbias, gc): (GlobalTensor<f16>, GlobalTensor<f16>, GlobalTensor<f16>),
        t: &MatmulPersistent,
        n_size: Val,
    ) -> HeldOperands {
        let rows = t.group_rows();
        // v6's chunks: 64 columns, 32 for warp groups of 128 rows
        let width = if rows > 64 {
            STORE_CHUNK / 2
        } else {
            STORE_CHUNK
        };
        let stores = t.c_stores(k, gc, n_size, width);
        let width = stores.width();
        let chunks = stores.chunks();
        let bias_rows = (width / BIAS_ROW).max(1);
        let bias = [0, 1].map(|g| {
            k.name_next(if g == 0 { "sbias0" } else { "sbias1" })
                .shared_tensor::<f16>([chunks, bias_rows, BIAS_ROW])
        });
        let landed = [0, 1].map(|_| k.mbarrier().alloc([1]));
        HeldOperands {
            gd,
            gbias,
            stores,
            bias,
            landed,
            rows,
            width,
            chunks,
            block_n: t.block_n,
            d: RefCell::new([None, None]),
            held: RefCell::new([None, None]),
        }
    }

    /// How many chunks each tile's result is stored in (one after each of the next tile's
    /// first K steps).
    pub fn chunks(&self) -> i32 {
        self.chunks
    }

    /// Before consumer warp group `g`'s first tile: the held result, carried from one tile to
    /// the next.
    pub fn begin(&self, k: &mut Kernel, g: usize) {
        let chunks = (0..self.chunks)
            .map(|_| {
                k.name_next("held")
                    .register_tensor::<f16>([self.rows, self.width], None)
            })
            .collect();
        let held = Held {
            chunks,
            rows: k.name_next("held_rows").var_i32(0),
            cols: k.name_next("held_cols").var_i32(0),
            some: k.name_next("held_some").var_i32(0),
        };
        self.held.borrow_mut()[g] = Some(held);
    }

    fn held(&self, g: usize) -> Held {
        self.held.borrow()[g]
            .clone()
            .expect("begin() allocates the held result first")
    }

    /// Halfway through the main loop of the tile at `at`: consumer warp group `g` loads its
    /// D into registers (masked at C's edges), and one thread copies the tile's bias.
    pub fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        // a tile per chunk: each takes the layout of the accumulator's columns it meets
        let d = (0..self.chunks)
            .map(|j| {
                let cols = k.let_i32(at.cols + j * self.width);
                k.name_next("d")
                    .load_global(&self.gd, [at.rows, cols], [self.rows, self.width])
            })
            .collect();
        self.d.borrow_mut()[g] = Some(d);
        let bar = self.landed[g].at(Val::constant(0));
        k.single_thread(|k| {
            let bytes = self.bias[g].nbytes();
            k.mbarrier().arrive_and_expect_tx(bar, bytes);
            for j in 0..self.chunks {
                let cols = k.let_i32(at.cols + j * self.width);
                let row = k.let_i32(cols / BIAS_ROW);
                k.tma().global_to_shared(
                    &self.gbias,
                    &self.bias[g].at(j),
                    [row, Val::constant(0)],
                    bar,
                );
            }
        });
    }

    /// Consumer warp group `g`'s tile at `at`: once the bias has landed, chunk by chunk, `f`
    /// computes C's chunk from the accumulator's columns, D's and the bias, held for the next
    /// tile's main loop to store.
    pub fn tile(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        f: &ChunkFn<'_>,
    ) {
        let d = self.d.borrow()[g]
            .clone()
            .expect("the prefetch loads D before the epilogue");
        let h = self.held(g);
        let phase = k.let_i32(at.index % 2);
        k.mbarrier()
            .wait(self.landed[g].at(Val::constant(0)), phase);
        for (j, (out, d)) in h.chunks.iter().zip(d).enumerate() {
            let start = j as i32 * self.width;
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), start, self.width);
            let bias_rows = k
                .name_next("bias_rows")
                .load_shared(&self.bias[g].at(j as i32));
            let bias = k.name_next("bias").reshape(&bias_rows, [self.width]);
            let result = f(k, part, d, bias);
            k.assign_tile(out, result);
        }
        k.assign(h.rows, at.rows);
        k.assign(h.cols, at.cols);
        k.assign(h.some, 1);
    }

    /// Consumer warp group `g` stores chunk `j` of the result it holds from its previous
    /// tile, if it holds one.
    pub fn store_held(&self, k: &mut Kernel, g: usize, j: i32) {
        let h = self.held(g);
        let chunk = h.chunks[j as usize];
        k.if_(h.some.gt(0), |k| {
            self.stores
                .store_chunk(k, g, (h.rows, h.cols), j, true, |_| chunk);
        });
    }

    /// After consumer warp group `g`'s last tile: its held result is stored and the stores
    /// are complete.
    pub fn finish(&self, k: &mut Kernel, g: usize) {
        for j in 0..self.chunks {
            self.store_held(k, g, j);
        }
        self.stores.finish(k, g);
    }
}
