//! v6: v5 on a persistent grid. At most one block per multiprocessor is launched
//! ([`Kernel::persistent_blocks`]); each block walks the tiles `blockIdx.x, blockIdx.x +
//! blocks, ..` in grouped order, and its pipeline runs on across tiles: the producer warp
//! starts filling the ring with the next tile's stages while the consumer warp groups are
//! still storing the last one, so the epilogue no longer leaves the tensor cores waiting for a
//! cold pipeline. The step number of the ring counts on from tile to tile (`done + i`).
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out. Two consumer warp groups of `block_m / 2` rows each (v5's
//! cooperative split; or, with `ping_pong = 1`, each taking whole tiles in turn,
//! [`crate::pingpong`]), a producer warp group that gives registers back
//! ([`PRODUCER_REGISTERS`], [`CONSUMER_REGISTERS`]), one product in flight.
//!
//! `persistent = 0` launches one block per tile instead (each block runs its loop once): the
//! ablation that shows what the persistent grid is worth.

use crate::pair::PairRing;
use crate::pingpong::PingPongOrder;
use crate::v5::{Cooperative, CooperativeShape, CONSUMER_REGISTERS, PRODUCER_REGISTERS};
use tilus::lang::Element;
use tilus::prelude::*;

/// The v6 kernel. Fields are compile-time hyperparameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
#[tune(block_m, block_n, ping_pong = [(128, 128, 0), (128, 256, 0), (256, 128, 0), (128, 128, 1), (64, 256, 1)])]
#[tune(block_k = [64])]
#[tune(stages = [3, 4])]
#[tune(group_m = [1, 8])]
#[tune(persistent = [1])]
#[tune(tma_store = [0, 1])]
#[tune(cluster_m = [1, 2])]
#[tune(hilbert = [0])]
pub struct MatmulPersistent {
    /// Rows of C per tile: two warp groups of `block_m / 2` rows each (a multiple of 128);
    /// in ping-pong, one warp group's (a multiple of 64).
    pub block_m: i32,
    /// Columns of C per tile (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (64 halves: 128-byte rows, the 128-byte swizzle).
    pub block_k: i32,
    /// Stages in the ring.
    pub stages: i32,
    /// Tile rows per group of the grouped order ([`Kernel::grouped_tile`]).
    pub group_m: i32,
    /// 1: a persistent grid (one block per multiprocessor at most); 0: one block per tile.
    pub persistent: i32,
    /// 1: the epilogue goes through shared memory (64-column chunks, 32 for 256-row tiles;
    /// two buffers) and TMA stores (where C's rows are a multiple of 8 elements, as TMA
    /// needs; otherwise as 0); 0: each thread stores its accumulator registers to global
    /// memory.
    pub tma_store: i32,
    /// 2: clusters of two blocks on neighbouring tile rows that share their B tile, each
    /// copying half of it into both (TMA multicast; [`crate::pair`]); 1: blocks alone.
    pub cluster_m: i32,
    /// 1: tiles in Hilbert order within squares of `group_m` tile rows and columns
    /// ([`Kernel::hilbert_tile`]; `group_m` a power of two); 0: grouped order. Not in the
    /// searched space (`--set hilbert=1` measures it).
    pub hilbert: i32,
    /// 1: ping-pong: the consumer warp groups take the block's tiles in turn, each a whole
    /// tile, and their main loops alternate ([`PingPongOrder`]), so one's epilogue runs
    /// while the other's products keep the tensor cores busy; 0: cooperative: both share
    /// each tile, `block_m / 2` rows each.
    pub ping_pong: i32,
}

/// Columns of one chunk of the TMA-store epilogue: 128 bytes of f16, the widest row the
/// 128-byte swizzle takes (which keeps the accumulator's stores to shared memory free of bank
/// conflicts).
pub const STORE_CHUNK: i32 = 64;

/// Staging buffers per consumer warp group: a chunk is written to shared memory while the
/// one before it is still being stored, and two buffers (16 KiB per warp group at 64 rows)
/// leave room for a fourth stage of 128 × 256 tiles.
const STORE_BUFFERS: i32 = 2;

impl Default for MatmulPersistent {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulPersistent {
            block_m: 128,
            block_n: 256,
            block_k: 64,
            stages: 4,
            group_m: 8,
            persistent: 1,
            tma_store: 1,
            cluster_m: 1,
            hilbert: 0,
            ping_pong: 0,
        }
    }
}

#[tilus::script]
impl Script for MatmulPersistent {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        self.matmul::<f16>(k, args);
    }

    fn arg_names() -> &'static [&'static str] {
        MATMUL_ARG_NAMES
    }
}

// v6 on bf16 operands: the same configurations and body, bf16 in and out
crate::operand::bf16_script!(
    MatmulPersistent,
    "matmul_persistent_bf16",
    crate::operand::MatmulArgsOf<bf16>,
    MATMUL_ARG_NAMES,
    matmul
);

/// The names of a matmul's arguments in the generated code.
pub const MATMUL_ARG_NAMES: &[&str] = &["m_size", "n_size", "k_size", "a_ptr", "b_ptr", "c_ptr"];

/// The handles of a matmul's arguments `(m, n, k, a, b, c)` in operand type `T`.
pub type MatmulHandles<T> = (Val, Val, Val, PtrVal<T>, PtrVal<T>, PtrVal<T>);

impl MatmulPersistent {
    /// The kernel's body for operand type `T`: the tiles, each cast to `T` and stored.
    pub fn matmul<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): MatmulHandles<T>,
    ) {
        let gc = k.name_next("gc").global_view::<T>(c_ptr, [m_size, n_size]);
        // 64-column chunks; 32 for warp groups of 128 rows, whose staging then leaves room
        // for a fourth stage of 256 x 128 tiles
        let width = if self.group_rows() > 64 {
            STORE_CHUNK / 2
        } else {
            STORE_CHUNK
        };
        let stores = self.c_stores(k, gc, n_size, width);
        let epilogue = CastAndStore {
            stores,
            block_n: self.block_n,
        };
        self.tiles(k, (m_size, n_size, k_size), (a_ptr, b_ptr), &epilogue);
    }
}

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

/// The two rings v6 runs on: a block's own ([`Cooperative`]), or a pair's sharing B
/// ([`PairRing`]).
enum Ring<T: Element> {
    One(Cooperative<T>),
    Pair(PairRing<T>),
}

impl<T: Element> Ring<T> {
    /// Consumer warp group `g`'s ring step `step` into `acc` (one product in flight): the
    /// same in a pair, whose B tile holds both producers' halves.
    #[track_caller]
    fn multiply(&self, k: &mut Kernel, g: usize, step: Scalar, acc: &RegisterTensor<f32>) {
        let ring = match self {
            Ring::One(r) => r,
            Ring::Pair(p) => &p.ring,
        };
        ring.multiply(k, g, step, acc);
    }

    /// Frees ring step `step`'s stage for the calling consumer warp group (in both blocks of
    /// a pair).
    #[track_caller]
    fn release(&self, k: &mut Kernel, step: Scalar) {
        match self {
            Ring::One(r) => r.release(k, step),
            Ring::Pair(r) => r.release(k, step),
        }
    }
}

impl MatmulPersistent {
    /// Rows of a consumer warp group's share of a tile: half of it, or all of it in
    /// ping-pong.
    pub fn group_rows(&self) -> i32 {
        if self.ping_pong != 0 {
            self.block_m
        } else {
            self.block_m / 2
        }
    }

    /// Everything but the epilogue: the grid, the warps, the ring and its producer, and both
    /// consumer warp groups' loops over their tiles. For each tile, consumer warp group `g`
    /// runs `epilogue.tile` on its `[group_rows, block_n]` accumulator (and
    /// `epilogue.prefetch` halfway through the tile's main loop, if it prefetches); after its
    /// last tile, `epilogue.finish`.
    pub fn tiles<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
        epilogue: &dyn TileEpilogue,
    ) {
        let pair = self.cluster_m == 2;
        let ping_pong = self.ping_pong != 0;
        // a pair of blocks takes a unit of two tile rows and one tile column
        let per_unit = if pair { 2 } else { 1 };
        if pair {
            k.cluster_blocks([2]);
        }
        let tiles_m = k.name_next("tiles_m").let_i32(cdiv(m_size, self.block_m));
        let tiles_n = k.name_next("tiles_n").let_i32(cdiv(n_size, self.block_n));
        let units_m = k.name_next("units_m").let_i32(cdiv(tiles_m, per_unit));
        let units = k.name_next("units").let_i32(units_m * tiles_n);
        // the blocks launched: the loop over units strides by their units (pairs)
        let blocks = if self.persistent != 0 {
            k.persistent_blocks(units * per_unit)
        } else {
            k.blocks([units * per_unit]);
            k.name_next("blocks").let_i32(units * per_unit)
        };
        // two consumer warp groups, then the producer's warp group
        k.warps(12);
        let group_rows = self.group_rows();
        let k_tiles = k.name_next("k_tiles").let_i32(cdiv(k_size, self.block_k));
        let stages = self.stages.max(1);

        let shape = CooperativeShape {
            block_m: self.block_m,
            block_n: self.block_n,
            block_k: self.block_k,
            stages,
            ping_pong,
        };
        let dims = (m_size, n_size, k_size);
        let ring = if pair {
            Ring::Pair(PairRing::new(k, shape, dims, (a_ptr, b_ptr)))
        } else {
            Ring::One(Cooperative::new(k, shape, dims, (a_ptr, b_ptr)))
        };
        let rank = match &ring {
            Ring::Pair(r) => Scalar::from(r.rank),
            Ring::One(_) => Scalar::from(0),
        };
        let order = ping_pong.then(|| PingPongOrder::new(k));
        let bx = k.block_idx().x;
        let first = k.name_next("first_unit").let_i32(bx / per_unit);
        let stride = k.name_next("unit_stride").let_i32(blocks / per_unit);
        // this block's tiles: its pair's units, then every `stride`-th, in grouped order;
        // a walker takes every `turns`-th of them from its `turn`-th (ping-pong's warp
        // groups take them in turn) and runs `body(k, done, at)` on each, `done` the ring
        // steps of the tiles before it
        let for_each_tile = |k: &mut Kernel,
                             (turn, turns): (i32, i32),
                             body: &dyn Fn(&mut Kernel, Val, &TileAt)| {
            let done = k.name_next("done").var_i32(k_tiles * turn);
            let index = k.name_next("tile_index").var_i32(0);
            let from = k.name_next("from_unit").let_i32(first + stride * turn);
            k.name_next("unit");
            k.for_range(from, units, stride * turns, |k, u| {
                let (unit_m, tile_n) = if self.hilbert != 0 {
                    k.hilbert_tile(u, units_m, tiles_n, self.group_m)
                } else {
                    k.grouped_tile(u, units_m, tiles_n, self.group_m)
                };
                let tile_m = unit_m * per_unit + rank.clone();
                let offset_m = k.name_next("offset_m").let_i32(tile_m * self.block_m);
                let offset_n = k.name_next("offset_n").let_i32(tile_n * self.block_n);
                let at = TileAt {
                    rows: offset_m,
                    cols: offset_n,
                    index,
                };
                body(k, done, &at);
                k.assign(done, done + k_tiles * turns);
                k.assign(index, index + 1);
            });
        };

        // the producer: the first warp of the last warp group fills the ring, tile after tile
        k.thread_group(256, 128, |k| {
            k.set_max_registers(PRODUCER_REGISTERS);
            k.single_warp(0, |k| {
                for_each_tile(k, (0, 1), &|k, done, at| {
                    k.name_next("i");
                    k.for_range(0, k_tiles, 1, |k, i| match &ring {
                        Ring::One(r) => r.fill(k, done + i, i, at.rows, at.cols),
                        Ring::Pair(r) => r.fill(k, done + i, i, at.rows, at.cols),
                    });
                });
            });
        });

        // the consumers: warp group g multiplies its rows of A by B, one product in flight;
        // a tile's last stage is freed as soon as its product is done, before the epilogue
        // (in a pair, in both blocks: both producers fill it)
        let release = |k: &mut Kernel, step: Scalar| ring.release(k, step);
        // the step halfway through a tile, where an epilogue's prefetch goes
        let halfway = epilogue
            .prefetches()
            .then(|| k.name_next("halfway").let_i32(k_tiles / 2));
        for g in 0..2 {
            let walk = if ping_pong { (g as i32, 2) } else { (0, 1) };
            k.thread_group(128 * g as u32, 128, |k| {
                k.set_max_registers(CONSUMER_REGISTERS);
                for_each_tile(k, walk, &|k, done, tile| {
                    let acc = k
                        .name_next("acc")
                        .register_tensor::<f32>([group_rows, self.block_n], 0.0);
                    let rows = if ping_pong {
                        tile.rows
                    } else {
                        k.name_next("rows")
                            .let_i32(tile.rows + group_rows * g as i32)
                    };
                    let at = TileAt { rows, ..*tile };
                    let steps = |k: &mut Kernel, from: Val, to: Val| {
                        k.name_next("i");
                        k.for_range_unrolled(from, to, 1, stages as u32, |k, i| {
                            ring.multiply(k, g, done + i, &acc);
                            // this step's stage is freed by the next step (or after the tile)
                            k.if_(i.gt(0), |k| release(k, done + i - 1));
                        });
                    };
                    if let Some(order) = &order {
                        order.wait_turn(k, g, at.index);
                    }
                    match halfway {
                        None => steps(k, Val::constant(0), k_tiles),
                        // the loop in two halves, the prefetch between them (straight-line
                        // code: the checks see it run once per tile)
                        Some(halfway) => {
                            steps(k, Val::constant(0), halfway);
                            epilogue.prefetch(k, g, &at);
                            steps(k, halfway, k_tiles);
                        }
                    }
                    if let Some(order) = &order {
                        order.pass_turn(k, g);
                    }
                    k.wgmma().wait_group(0);
                    release(k, done + k_tiles - 1);
                    epilogue.tile(k, g, &acc, &at);
                });
                epilogue.finish(k, g);
            });
        }
        if pair {
            // no block leaves while its partner may still copy into it or arrive on it
            k.cluster_sync();
        }
    }
}
