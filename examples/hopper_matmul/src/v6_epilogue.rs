//! What v6's consumer warp groups do with their products ([`TileEpilogue`], called by
//! [`MatmulPersistent::tiles`] per tile and after the last one), v6's own epilogue
//! ([`CastAndStore`]) and the stores of C it shares with the fused epilogue ([`CStores`]: TMA
//! stores through staging buffers in shared memory, or stores from registers).

use crate::v6::MatmulPersistent;
use tilus::lang::Element;
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
    /// C's row of the group's first row.
    pub rows: Val,
    /// C's column of the tile's first column.
    pub cols: Val,
    /// The tile's place in the block's walk (0, 1, ..): the phase of a barrier that
    /// completes once per tile is `index % 2`.
    pub index: Val,
}

/// What the consumer warp groups of [`MatmulPersistent::tiles`] do with their products: v6
/// casts and stores them ([`CastAndStore`]), the fused epilogue computes on them first
/// (`crate::epilogue`).
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
}

/// v6's epilogue: each tile cast to `T` and stored with [`CStores`].
pub struct CastAndStore<T: Element> {
    stores: CStores<T>,
    block_n: i32,
}

impl<T: Element> CastAndStore<T> {
    /// The epilogue of tiles `block_n` columns wide, through `stores`.
    pub fn new(stores: CStores<T>, block_n: i32) -> CastAndStore<T> {
        CastAndStore { stores, block_n }
    }
}

impl<T: Element> CastAndStore<T> {
    /// Consumer warp group `g`'s tile at `at` whose product is `acc` plus `more(k, start,
    /// width)` (its columns `start .. start + width`, in the accumulator's layout), added
    /// chunk by chunk before the cast: stream-K's finisher adding the partial another block
    /// left ([`crate::stream_k`]).
    pub fn tile_plus(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        more: &dyn Fn(&mut Kernel, i32, i32) -> RegisterTensor<f32>,
    ) {
        let width = self.stores.width;
        self.stores.store(k, g, at.rows, at.cols, |k, j| {
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * width, width);
            let extra = more(k, j * width, width);
            k.name_next("summed").compute((part + extra).cast::<T>())
        });
    }
}

impl<T: Element> TileEpilogue for CastAndStore<T> {
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt) {
        let casted = k.name_next("casted").cast::<T>(acc);
        let width = self.stores.width;
        self.stores.store(k, g, at.rows, at.cols, |k, j| {
            columns(k, (&casted, self.block_n), j * width, width)
        });
    }
    fn finish(&self, k: &mut Kernel, g: usize) {
        self.stores.finish(k, g);
    }
}

/// How the consumer warp groups store their results to C: with TMA through staging buffers
/// in shared memory, or from registers (see [`MatmulPersistent::tma_store`]). Shared with
/// the fused epilogue kernel.
pub struct CStores<T: Element = f16> {
    gc: GlobalTensor<T>,
    /// Per consumer warp group, its staging buffers; `None`: stores from registers.
    staging: Option<[SharedTensor<T>; 2]>,
    /// Columns per chunk.
    width: i32,
    chunks: i32,
    buffers: i32,
}

impl<T: Element> CStores<T> {
    /// Stores consumer warp group `g`'s `[block_m / 2, block_n]` result, whose first element
    /// is C's `(rows, cols)`, chunk by chunk: `chunk(k, j)` computes columns `w j .. w j + w`
    /// of it, `w` the width [`MatmulPersistent::c_stores`] was given (as an f16 tile in the
    /// accumulator's layout).
    pub fn store(
        &self,
        k: &mut Kernel,
        g: usize,
        rows: Val,
        cols: Val,
        chunk: impl Fn(&mut Kernel, i32) -> RegisterTensor<T>,
    ) {
        for j in 0..self.chunks {
            let at = [Scalar::from(rows), cols + j * self.width];
            let Some(staging) = &self.staging else {
                let part = chunk(k, j);
                k.store_global(&self.gc, &part, at);
                continue;
            };
            let buffer = staging[g].at(Val::constant(j % self.buffers));
            let part = chunk(k, j);
            // the store that last used this buffer (`buffers` stores ago, perhaps the last
            // tile's) has read it; then every thread may overwrite it
            k.single_thread(|k| k.tma().wait_group_read(self.buffers as u32 - 1));
            k.sync_group();
            stage_and_store(k, (&buffer, &part), &self.gc, at, |_| {});
        }
    }

    /// After consumer warp group `g`'s last tile: its stores are complete before the kernel
    /// ends.
    pub fn finish(&self, k: &mut Kernel, _g: usize) {
        if self.staging.is_some() {
            k.single_thread(|k| k.tma().wait_group(0));
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
    at: [Scalar; 2],
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

impl MatmulPersistent {
    /// The stores of C (a `[m, n]` view) in chunks of `width` columns (at most
    /// [`STORE_CHUNK`], 128 bytes: the widest row of the 128-byte swizzle): staging buffers
    /// when [`MatmulPersistent::tma_store`] asks for them and C's rows are a multiple of 16
    /// bytes, as TMA needs (`n` is a compile-time constant: the choice is made per
    /// specialization); stores from registers otherwise.
    pub fn c_stores<T: Element>(
        &self,
        k: &mut Kernel,
        gc: GlobalTensor<T>,
        n_size: Val,
        width: i32,
    ) -> CStores<T> {
        let half_m = self.group_rows();
        let width = width.clamp(8, STORE_CHUNK).min(self.block_n);
        let chunks = (self.block_n / width).max(1);
        let buffers = chunks.min(STORE_BUFFERS);
        let rows_aligned = n_size.as_const().is_some_and(|n| n % 8 == 0);
        let staging = (self.tma_store != 0 && rows_aligned).then(|| {
            [0, 1].map(|g| {
                k.name_next(if g == 0 { "sc0" } else { "sc1" })
                    .shared_tensor::<T>([buffers, half_m, width])
            })
        });
        CStores {
            gc,
            staging,
            width,
            chunks,
            buffers,
        }
    }
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
