//! What v6's consumer warp groups do with their products ([`TileEpilogue`], called by
//! `MatmulPersistent::tiles` per tile and after the last one), v6's own epilogue
//! ([`CastAndStore`]) and the stores of C it shares with the fused epilogue ([`CStores`]: TMA
//! stores through staging buffers in shared memory, or stores from registers).

use std::cell::RefCell;
use tilus::lang::{Element, Scalars};
use tilus::prelude::*;

/// Columns of one chunk of the TMA-store epilogue: 128 bytes of f16, the widest row the
/// 128-byte swizzle takes (which keeps the accumulator's stores to shared memory free of bank
/// conflicts).
pub const STORE_CHUNK: i32 = 64;

/// Staging buffers per consumer warp group: a chunk is written to shared memory while the
/// one before it is still being stored, and two buffers (16 KiB per warp group at 64 rows)
/// leave room for a fourth stage of 128 × 256 tiles.
const STORE_BUFFERS: i32 = 2;

/// Where a consumer warp group's tile lies, as its epilogue sees it.
#[derive(Clone, Copy, Debug)]
pub struct TileAt {
    /// The product of a batch the tile belongs to (None: a kernel of one product).
    pub batch: Option<Val>,
    /// C's row of the group's first row.
    pub rows: Val,
    /// C's column of the tile's first column.
    pub cols: Val,
    /// The tile's place in the block's walk (0, 1, ..): the phase of a barrier that
    /// completes once per tile is `index % 2`.
    pub index: Val,
}

impl TileAt {
    /// Where the tile goes in C: its product (batched C) and its first row and column.
    pub fn place(&self) -> (Option<Val>, Val, Val) {
        (self.batch, self.rows, self.cols)
    }
}

/// What the consumer warp groups of `MatmulPersistent::tiles` do with their products: v6
/// casts and stores them ([`CastAndStore`]), the fused epilogue computes on them first
/// (`crate::gemm::epilogue`).
pub trait TileEpilogue {
    /// Consumer warp group `g`'s `[block_m / 2, block_n]` accumulator of the tile at `at`.
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt);
    /// After consumer warp group `g`'s last tile.
    fn finish(&self, k: &mut Kernel, g: usize);
    /// Whether [`TileEpilogue::prefetch`] is used (the main loop is traced in one piece
    /// otherwise).
    fn prefetches(&self) -> bool {
        false
    }
    /// Halfway through the main loop of the tile at `at`, with a product in flight:
    /// consumer warp group `g` starts the copies of what its epilogue will read, so that
    /// they land while the tensor cores work.
    fn prefetch(&self, _k: &mut Kernel, _g: usize, _at: &TileAt) {}
    /// How many chunks of a tile's result [`TileEpilogue::tile`] holds back for the next
    /// tile's main loop to store, one after each of its first K steps (with a product in
    /// flight, so that the stores run under the tensor cores' work); 0: `tile` stores them.
    fn deferred_chunks(&self) -> i32 {
        0
    }
    /// Before consumer warp group `g`'s first tile: what carries a held result from one
    /// tile to the next (with deferred chunks).
    fn begin(&self, _k: &mut Kernel, _g: usize) {}
    /// Consumer warp group `g` stores chunk `j` of the result it holds from its previous
    /// tile, if it holds one (with deferred chunks).
    fn store_held(&self, _k: &mut Kernel, _g: usize, _j: i32) {}
}

/// v6's epilogue: each tile cast to `T` and stored with [`CStores`], in its own epilogue or
/// (deferred) under the next tile's first K steps.
pub struct CastAndStore<T: Element> {
    stores: CStores<T>,
    block_n: i32,
    defer: bool,
    /// Per consumer warp group, with `defer`: the result it holds (see [`Held`]).
    held: RefCell<[Option<Held<T>>; 2]>,
}

/// A tile's result a consumer warp group holds for the next tile's main loop to store: cast
/// to `T` in the accumulator's layout (half the accumulator's registers), where it goes, and
/// whether there is one (0 before the first tile), all carried from one tile of the loop to
/// the next.
#[derive(Clone, Copy)]
struct Held<T> {
    tile: RegisterTensor<T>,
    batch: Option<Val>,
    rows: Val,
    cols: Val,
    some: Val,
}

impl<T: Element> CastAndStore<T> {
    /// The epilogue of tiles `block_n` columns wide, through `stores`; with `defer`, each
    /// tile's result is stored under the next tile's first K steps
    /// ([`TileEpilogue::deferred_chunks`]; the caller's main loop must support it: v6's
    /// cooperative warp groups do).
    pub fn new(stores: CStores<T>, block_n: i32, defer: bool) -> CastAndStore<T> {
        CastAndStore {
            stores,
            block_n,
            defer,
            held: RefCell::new([None, None]),
        }
    }

    /// Consumer warp group `g`'s held result (after [`TileEpilogue::begin`]).
    fn held(&self, g: usize) -> Held<T> {
        self.held.borrow()[g].expect("begin() allocates the held result first")
    }
}

impl<T: Element> CastAndStore<T> {
    /// Consumer warp group `g`'s tile at `at` whose product is `acc` plus `more(k, start,
    /// width)` (its columns `start .. start + width`, in the accumulator's layout), added
    /// chunk by chunk before the cast: stream-K's finisher adding the partial another block
    /// left ([`crate::gemm::stream_k`]).
    pub fn tile_plus(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        more: &dyn Fn(&mut Kernel, i32, i32) -> RegisterTensor<f32>,
    ) {
        let width = self.stores.width;
        self.stores.store(k, g, at.place(), |k, j| {
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * width, width);
            let extra = more(k, j * width, width);
            k.name_next("summed").compute((part + extra).cast::<T>())
        });
    }
}

impl<T: Element> TileEpilogue for CastAndStore<T> {
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt) {
        if self.defer {
            // the next tile's main loop (or `finish`) stores it
            let h = self.held(g);
            k.assign_tile(&h.tile, acc.cast::<T>());
            k.assign(h.rows, at.rows);
            k.assign(h.cols, at.cols);
            if let (Some(hb), Some(b)) = (h.batch, at.batch) {
                k.assign(hb, b);
            }
            k.assign(h.some, 1);
            return;
        }
        let casted = k.name_next("casted").cast::<T>(acc);
        let width = self.stores.width;
        self.stores.store(k, g, at.place(), |k, j| {
            columns(k, (&casted, self.block_n), j * width, width)
        });
    }
    fn finish(&self, k: &mut Kernel, g: usize) {
        if self.defer {
            // the last held result, its chunks one after another: the first waits for every
            // earlier store (those of the held chunks before, each under its own
            // condition), the others only for the store that last used their buffer, as a
            // tile stored at once does
            let h = self.held(g);
            let width = self.stores.width;
            k.if_(h.some.gt(0), |k| {
                for j in 0..self.stores.chunks {
                    let place = (h.batch, h.rows, h.cols);
                    self.stores.store_chunk(k, g, place, j, j == 0, |k| {
                        columns(k, (&h.tile, self.block_n), j * width, width)
                    });
                }
            });
        }
        self.stores.finish(k, g);
    }
    fn deferred_chunks(&self) -> i32 {
        if self.defer {
            self.stores.chunks
        } else {
            0
        }
    }
    fn begin(&self, k: &mut Kernel, g: usize) {
        if !self.defer {
            return;
        }
        let rows = self.stores.rows;
        let held = Held {
            tile: k
                .name_next("held")
                .register_tensor::<T>([rows, self.block_n], None),
            batch: self
                .stores
                .batched()
                .then(|| k.name_next("held_batch").var_i32(0)),
            rows: k.name_next("held_rows").var_i32(0),
            cols: k.name_next("held_cols").var_i32(0),
            some: k.name_next("held_some").var_i32(0),
        };
        self.held.borrow_mut()[g] = Some(held);
    }
    fn store_held(&self, k: &mut Kernel, g: usize, j: i32) {
        let h = self.held(g);
        let width = self.stores.width;
        k.if_(h.some.gt(0), |k| {
            self.stores
                .store_chunk(k, g, (h.batch, h.rows, h.cols), j, true, |k| {
                    columns(k, (&h.tile, self.block_n), j * width, width)
                });
        });
    }
}

/// How the consumer warp groups store their results to C: with TMA through staging buffers
/// in shared memory, or from registers (see `MatmulPersistent::tma_store`). Shared with
/// the fused epilogue kernel.
pub struct CStores<T: Element = f16> {
    gc: GlobalTensor<T>,
    /// C's view has a batch dimension first.
    batched: bool,
    /// Per consumer warp group, its staging buffers; `None`: stores from registers.
    staging: Option<[SharedTensor<T>; 2]>,
    /// Columns per chunk.
    width: i32,
    chunks: i32,
    buffers: i32,
    /// Rows of a consumer warp group's result.
    rows: i32,
}

impl<T: Element> CStores<T> {
    /// The stores of C (a `[m, n]` view) in chunks of `width` columns (at most
    /// `STORE_CHUNK`, 128 bytes: the widest row of the 128-byte swizzle) of a consumer warp
    /// group's `[rows, block_n]` result: staging buffers when `tma_store` asks for them and
    /// C's rows are a multiple of 16 bytes, as TMA needs (`n` is a compile-time constant: the
    /// choice is made per specialization); stores from registers otherwise.
    pub fn plan(
        k: &mut Kernel,
        gc: GlobalTensor<T>,
        (n_size, width): (Val, i32),
        (rows, block_n, tma_store): (i32, i32, bool),
    ) -> CStores<T> {
        let width = width.clamp(8, STORE_CHUNK).min(block_n);
        let chunks = (block_n / width).max(1);
        let buffers = chunks.min(STORE_BUFFERS);
        let rows_aligned = n_size.as_const().is_some_and(|n| n % 8 == 0);
        let staging = (tma_store && rows_aligned).then(|| {
            [0, 1].map(|g| {
                k.name_next(if g == 0 { "sc0" } else { "sc1" })
                    .shared_tensor::<T>([buffers, rows, width])
            })
        });
        CStores {
            gc,
            batched: false,
            staging,
            width,
            chunks,
            buffers,
            rows,
        }
    }

    /// [`CStores::plan`] for a C view `[batches, m, n]` whose tiles' places name their
    /// product, with staging buffers and TMA stores where `tma_store` says so (the caller
    /// knows that C's rows allow them).
    pub fn plan_batched(
        k: &mut Kernel,
        gc: GlobalTensor<T>,
        width: i32,
        (rows, block_n, tma_store): (i32, i32, bool),
    ) -> CStores<T> {
        let aligned = Val::constant(8);
        CStores {
            batched: true,
            ..CStores::plan(k, gc, (aligned, width), (rows, block_n, tma_store))
        }
    }

    /// Stores consumer warp group `g`'s `[block_m / 2, block_n]` result, whose first element
    /// is C's `(rows, cols)`, chunk by chunk: `chunk(k, j)` computes columns `w j .. w j + w`
    /// of it, `w` the width [`CStores::plan`] was given (as an f16 tile in the
    /// accumulator's layout).
    pub fn store(
        &self,
        k: &mut Kernel,
        g: usize,
        place: (Option<Val>, Val, Val),
        chunk: impl Fn(&mut Kernel, i32) -> RegisterTensor<T>,
    ) {
        for j in 0..self.chunks {
            self.store_chunk(k, g, place, j, false, |k| chunk(k, j));
        }
    }

    /// Whether C's view has a batch dimension first (the place of a tile then names its
    /// product).
    pub fn batched(&self) -> bool {
        self.batched
    }

    /// Columns per chunk.
    pub fn width(&self) -> i32 {
        self.width
    }

    /// Chunk `j` of [`CStores::store`]: `part(k)` computes it. `alone`: the chunk is stored
    /// apart from the others (a held result's, each under its own condition, K steps apart),
    /// so it waits until every earlier store has read its buffer, not only the one before
    /// the last (which has had a K step's time to finish anyway).
    pub fn store_chunk(
        &self,
        k: &mut Kernel,
        g: usize,
        (batch, rows, cols): (Option<Val>, Val, Val),
        j: i32,
        alone: bool,
        part: impl FnOnce(&mut Kernel) -> RegisterTensor<T>,
    ) {
        let mut at: Vec<Scalar> = batch.into_iter().map(Scalar::from).collect();
        at.extend([Scalar::from(rows), cols + j * self.width]);
        let Some(staging) = &self.staging else {
            let part = part(k);
            // a batched view takes a tile of its rank: one matrix deep
            let part = if self.batched {
                k.unsqueeze(&part, 0)
            } else {
                part
            };
            k.store_global(&self.gc, &part, at);
            return;
        };
        let buffer = staging[g].at(Val::constant(j % self.buffers));
        let part = part(k);
        // the store that last used this buffer (`buffers` stores ago, perhaps the last
        // tile's) has read it; then every thread may overwrite it. A tile whose chunks do not
        // fill the buffers in whole turns (three chunks, two buffers) ends on another buffer
        // than the rotation: its next tile's first chunk reuses the buffer of the very last
        // store, so it waits for all of them.
        let off_turn = j == 0 && self.chunks % self.buffers != 0;
        let pending = if alone || off_turn {
            0
        } else {
            self.buffers as u32 - 1
        };
        k.single_thread(|k| k.tma().wait_group_read(pending));
        k.sync_group();
        stage_and_store(k, (&buffer, &part), &self.gc, at, |_| {});
    }

    /// After consumer warp group `g`'s last tile: its stores have read their staging
    /// buffers before the kernel ends (the block's shared memory is released then). Their
    /// writes need no wait: the grid's end makes them visible to whatever runs after it, and
    /// nothing in this grid reads C, so a block does not hold its multiprocessor until they
    /// reach memory.
    pub fn finish(&self, k: &mut Kernel, _g: usize) {
        if self.staging.is_some() {
            k.single_thread(|k| k.tma().wait_group_read(0));
        }
    }
}

/// A chunk of C through its staging buffer, once every thread of the group may overwrite
/// the buffer (the caller has synchronized): `part` is written to `buffer`, made visible to
/// the async proxy, and one thread stores it to `gc` at `at` with TMA and commits the store,
/// then runs `then` (more asynchronous work of that thread, after the commit).
pub fn stage_and_store<T: Element>(
    k: &mut Kernel,
    (buffer, part): (&SharedTensor<T>, &RegisterTensor<T>),
    gc: &GlobalTensor<T>,
    at: impl Scalars,
    then: impl FnOnce(&mut Kernel),
) {
    k.store_shared(buffer, part);
    k.fence_proxy_async();
    k.sync_group();
    k.single_thread(|k| {
        k.tma().shared_to_global(buffer, gc, at);
        k.tma().commit_group();
        then(k);
    });
}

/// Columns `start .. start + width` of a tile of `total` columns (the whole tile when they
/// are all of it).
pub fn columns<T: tilus::lang::Element>(
    k: &mut Kernel,
    (tile, total): (&RegisterTensor<T>, i32),
    start: i32,
    width: i32,
) -> RegisterTensor<T> {
    if start == 0 && width == total {
        return *tile;
    }
    k.slice(tile, 1, start, width)
}
