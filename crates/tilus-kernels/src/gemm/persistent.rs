//! v6: v5 on a persistent grid. At most one block per multiprocessor is launched
//! ([`Kernel::persistent_blocks`]); each block walks the tiles `blockIdx.x, blockIdx.x +
//! blocks, ..` in grouped order, and its pipeline runs on across tiles: the producer warp
//! starts filling the ring with the next tile's stages while the consumer warp groups are
//! still storing the last one, so the epilogue no longer leaves the tensor cores waiting for a
//! cold pipeline. The step number of the ring counts on from tile to tile (`done + i`). The
//! cooperative warp groups store each tile's result under the next tile's first products
//! (`defer_stores`), so the tensor cores wait for no store either.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out. Two consumer warp groups of `block_m / 2` rows each (v5's
//! cooperative split; or, with `ping_pong = 1`, each taking whole tiles in turn,
//! `gemm/pingpong.rs`), a producer warp group that gives registers back
//! ([`PRODUCER_REGISTERS`], [`CONSUMER_REGISTERS`]), one product in flight.
//!
//! `persistent = 0` launches one block per tile instead (each block runs its loop once): the
//! ablation that shows what the persistent grid is worth.

use crate::gemm::cooperative::{
    Cooperative, CooperativeShape, CONSUMER_REGISTERS, LOADING_CONSUMER_REGISTERS,
    LOADING_PRODUCER_REGISTERS, PRODUCER_REGISTERS,
};
use crate::gemm::pair::{PairAxis, PairRing};
use crate::gemm::pingpong::PingPongOrder;
use crate::gemm::promote::{promote_in_turns, Promote, StepScale};
use crate::gemm::ring_operands::RingOperands;
use crate::gemm::stream_k::shares::{
    Part, Shares, StreamK, STREAM_K_CONSUMER_REGISTERS, STREAM_K_PRODUCER_REGISTERS,
};
use crate::gemm::tile_epilogue::{CStores, CastAndStore, TileAt, TileEpilogue, STORE_CHUNK};
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::tune::Binding;

/// The v6 kernel. Fields are compile-time hyperparameters.
///
/// On the CPU interpreter (`tilus::interpret`), or autotuned on a GPU
/// (`MatmulPersistent::autotuned(&device)?.launch(stream, args)`); [`super::Gemm`] is the
/// entry point that also takes small M.
///
/// ```
/// use tilus_kernels::gemm::persistent::MatmulPersistent;
/// let (m, n, k) = (200, 256, 128);
/// let (a, b) = (vec![half::f16::ONE; m * k], vec![half::f16::ONE; n * k]);
/// let mut c = vec![half::f16::NAN; m * n];
/// tilus::interpret(&MatmulPersistent::default(), (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(128.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
// the tile forms with the ring depths they take: 3 or 4 stages for the large tiles; 8 for the
// small ones (128 × 64, and 64 × 128 in ping-pong), which fill the machine at mid sizes (M of
// a few hundred) and starve with fewer stages in flight (docs/perf.md: 0.80× at 4, 1.07× at 8);
// 12 for 64 × 64 in ping-pong, cuBLAS's tile at M = 128 (0.94× there against 0.84-0.86× for
// the others); 128 × 192 with four stages, a round of tiles where 128 × 256 leaves
// multiprocessors idle and 128 × 128 takes three rounds (0.93-0.98× cuBLAS at 256-512 ×
// 12288 × 4096, 384 × 8192 × 4096 and 512 × 28672 × 8192, from 0.83-0.93×; docs/perf.md)
#[tune(block_m, block_n, ping_pong, stages = [
    (128, 128, 0, 3), (128, 128, 0, 4), (128, 256, 0, 3), (128, 256, 0, 4),
    (256, 128, 0, 3), (256, 128, 0, 4), (128, 128, 1, 3), (128, 128, 1, 4),
    (64, 256, 1, 3), (64, 256, 1, 4), (128, 64, 0, 8), (64, 128, 1, 8),
    (64, 64, 1, 12), (128, 192, 0, 4),
])]
#[tune(block_k = [64])]
#[tune(group_m = [1, 8])]
#[tune(persistent = [1])]
#[tune(tma_store = [0, 1])]
#[tune(cluster_m = [1, 2])]
#[tune(cluster_n = [1])]
#[tune(hilbert = [0])]
#[tune(defer_stores = [1])]
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
    /// copying half of it into both (TMA multicast; `gemm/pair.rs`); 1: blocks alone.
    pub cluster_m: i32,
    /// 2: clusters of two blocks on neighbouring tile columns that share their A tile (the
    /// same, along N: the form of cuBLAS's 128 × 128 pairs at 512 × 4096² on an H100); 1:
    /// blocks alone. Not with `cluster_m = 2`. Not in the searched space (`--set cluster_n=2`):
    /// slower than blocks alone wherever measured (0.82× cuBLAS against 0.92× at 512 × 4096²,
    /// docs/perf.md).
    pub cluster_n: i32,
    /// 1: tiles in Hilbert order within squares of `group_m` tile rows and columns
    /// ([`Kernel::hilbert_tile`]; `group_m` a power of two); 0: grouped order. Not in the
    /// searched space (`--set hilbert=1` measures it).
    pub hilbert: i32,
    /// 1: ping-pong: the consumer warp groups take the block's tiles in turn, each a whole
    /// tile, and their main loops alternate (`PingPongOrder`, `gemm/pingpong.rs`), so one's epilogue runs
    /// while the other's products keep the tensor cores busy; 0: cooperative: both share
    /// each tile, `block_m / 2` rows each.
    pub ping_pong: i32,
    /// 1: cooperative warp groups hold each tile's result in registers (cast to the output
    /// type) and store it under the next tile's first K steps, one chunk after each, so that
    /// the stores run under the tensor cores' work (`TileEpilogue::deferred_chunks`, `gemm/tile_epilogue.rs`); 0:
    /// each tile is stored in its own epilogue. Ping-pong warp groups store their own (the
    /// other's products run meanwhile). Always 1 in the searched space (1.3-2.0% faster
    /// in every measured form, docs/perf.md); `--set defer_stores=0` measures the other.
    pub defer_stores: i32,
}

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
            cluster_n: 1,
            hilbert: 0,
            ping_pong: 0,
            defer_stores: 1,
        }
    }
}

impl MatmulPersistent {
    /// Hyperparameter `name`'s field.
    fn field_mut(&mut self, name: &str) -> Option<&mut i32> {
        Some(match name {
            "block_m" => &mut self.block_m,
            "block_n" => &mut self.block_n,
            "block_k" => &mut self.block_k,
            "stages" => &mut self.stages,
            "group_m" => &mut self.group_m,
            "persistent" => &mut self.persistent,
            "tma_store" => &mut self.tma_store,
            "cluster_m" => &mut self.cluster_m,
            "cluster_n" => &mut self.cluster_n,
            "hilbert" => &mut self.hilbert,
            "ping_pong" => &mut self.ping_pong,
            "defer_stores" => &mut self.defer_stores,
            _ => return None,
        })
    }

    /// The default tile with hyperparameters `names` taken from `binding`: the configuration
    /// of a kernel on v6's tile whose search space covers some of v6's hyperparameters (the
    /// others keep their defaults).
    pub(crate) fn from_subset(binding: &Binding, names: &[&str]) -> Result<Self, String> {
        let mut t = MatmulPersistent::default();
        for &name in names {
            let value = binding.get_i32(name)?;
            *t.field_mut(name)
                .ok_or_else(|| format!("v6 has no hyperparameter {name}"))? = value;
        }
        Ok(t)
    }

    /// The binding of hyperparameters `names` ([`MatmulPersistent::from_subset`]'s inverse).
    pub(crate) fn subset_binding(&self, names: &[&str]) -> Binding {
        let mut t = self.clone();
        Binding(
            names
                .iter()
                .filter_map(|&n| t.field_mut(n).map(|v| (n.to_string(), i64::from(*v))))
                .collect(),
        )
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
crate::gemm::operand::bf16_script!(
    MatmulPersistent,
    "matmul_persistent_bf16",
    crate::gemm::operand::MatmulArgsOf<bf16>,
    MATMUL_ARG_NAMES,
    matmul
);

/// The names of a matmul's arguments in the generated code.
pub(crate) const MATMUL_ARG_NAMES: &[&str] =
    &["m_size", "n_size", "k_size", "a_ptr", "b_ptr", "c_ptr"];

/// The handles of a matmul's arguments `(m, n, k, a, b, c)` in operand type `T`.
pub(crate) type MatmulHandles<T> = (Val, Val, Val, PtrVal<T>, PtrVal<T>, PtrVal<T>);

impl MatmulPersistent {
    /// The kernel's body for operand type `T`: the tiles, each cast to `T` and stored.
    pub(crate) fn matmul<T: Element>(
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
        let defer = self.defer_stores != 0 && self.ping_pong == 0;
        let epilogue = CastAndStore::new(stores, self.block_n, defer);
        self.tiles(k, (m_size, n_size, k_size), (a_ptr, b_ptr), &epilogue, None);
    }
}

/// Where [`MatmulPersistent::tiles_on`] takes its operands from.
pub(crate) enum Operands<T: Element> {
    /// A `[m, k]` and B `[n, k]`, K-major and contiguous, at these pointers.
    Pointers(PtrVal<T>, PtrVal<T>),
    /// Views the caller declared, of `batch` products (None: one, views without a batch
    /// dimension).
    Views {
        ops: RingOperands<T>,
        batch: Option<Val>,
        /// B's loader, where the producer's threads fill B other than from its view (then
        /// `ops.b_loaded`, and B's view is not read).
        b_loader: Option<crate::gemm::cooperative::StageLoader<T>>,
    },
}

/// The two rings v6 runs on: a block's own ([`Cooperative`]), or a pair's sharing B or A
/// ([`PairRing`]).
enum Ring<T: Element> {
    One(Cooperative<T>),
    Pair(PairRing<T>),
}

impl<T: Element> Ring<T> {
    /// Consumer warp group `g`'s ring step `step` into `acc` (one product in flight): the
    /// same in a pair, whose shared tile holds both producers' halves.
    #[track_caller]
    fn multiply(&self, k: &mut Kernel, g: usize, step: Scalar, acc: &RegisterTensor<f32>) {
        self.cooperative().multiply(k, g, step, acc);
    }

    /// The block's own ring (a pair's differs only in its copies of the shared operand and
    /// its releases).
    fn cooperative(&self) -> &Cooperative<T> {
        match self {
            Ring::One(r) => r,
            Ring::Pair(p) => &p.ring,
        }
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
    /// The axis of the pairs the blocks run in, if they do (`cluster_m` or `cluster_n` 2).
    pub(crate) fn pair_axis(&self) -> Option<PairAxis> {
        if self.cluster_m == 2 {
            Some(PairAxis::M)
        } else if self.cluster_n == 2 {
            Some(PairAxis::N)
        } else {
            None
        }
    }

    /// Blocks per cluster: 2 in pairs, 1 alone.
    pub(crate) fn per_unit(&self) -> i32 {
        if self.pair_axis().is_some() {
            2
        } else {
            1
        }
    }

    /// Rows of a consumer warp group's share of a tile: half of it, or all of it in
    /// ping-pong.
    pub(crate) fn group_rows(&self) -> i32 {
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
    /// last tile, `epilogue.finish`. With `stream_k`, the last rounds' tiles are shared out
    /// by K steps instead ([`crate::gemm::stream_k`]; cooperative and persistent only, its
    /// epilogue the one `stream_k` holds).
    pub(crate) fn tiles<T: Element>(
        &self,
        k: &mut Kernel,
        dims: (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
        epilogue: &dyn TileEpilogue,
        stream_k: Option<&StreamK<T>>,
    ) {
        self.tiles_on(
            k,
            dims,
            Operands::Pointers(a_ptr, b_ptr),
            epilogue,
            stream_k,
        );
    }

    /// [`MatmulPersistent::tiles`] on operands given as pointers (K-major, contiguous) or as
    /// views declared by the caller, of a batch of products (the tiles of every product of
    /// the batch walked as one grid; [`TileAt::batch`] says whose a tile is).
    pub(crate) fn tiles_on<T: Element>(
        &self,
        k: &mut Kernel,
        dims: (Val, Val, Val),
        operands: Operands<T>,
        epilogue: &dyn TileEpilogue,
        stream_k: Option<&StreamK<T>>,
    ) {
        self.tiles_with(k, dims, operands, epilogue, stream_k, None);
    }

    /// [`MatmulPersistent::tiles`] with each K step's product promoted into the f32
    /// accumulator ([`Cooperative::multiply_promoted`]): the FP8 GEMM's main loop, on blocks
    /// alone or in pairs, no stream-K; each consumer warp group holds a second accumulator.
    /// `step_scale(k, i, at)`, when given, is the `[group_rows, 1]` factor of K step `i`'s
    /// product for the warp group's rows of the tile at `at` (fine-grained scales); with
    /// `overlap` > 0 the steps run in overlapped runs of `2 overlap`, each step's product
    /// issued while the one before it is promoted ([`Promote::overlapped`]: a third
    /// accumulator; no held result, no prefetch); with
    /// `turns` the cooperative warp groups issue each step in turn ([`Promote::turns`]).
    pub(crate) fn tiles_promoted<T: Element>(
        &self,
        k: &mut Kernel,
        dims: (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
        epilogue: &dyn TileEpilogue,
        (step_scale, overlap, turns): (Option<StepScale<'_>>, i32, bool),
    ) {
        let operands = Operands::Pointers(a_ptr, b_ptr);
        let promote = Promote {
            step_scale,
            overlap,
            turns,
        };
        self.tiles_with(k, dims, operands, epilogue, None, Some(&promote));
    }

    fn tiles_with<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size): (Val, Val, Val),
        operands: Operands<T>,
        epilogue: &dyn TileEpilogue,
        stream_k: Option<&StreamK<T>>,
        promote: Option<&Promote<'_>>,
    ) {
        if !(1..=2).contains(&self.cluster_m)
            || !(1..=2).contains(&self.cluster_n)
            || self.cluster_m * self.cluster_n > 2
        {
            k.refuse_config(format!(
                "{self:?}: blocks alone or in pairs along one axis (cluster_m or cluster_n 2)"
            ));
            return;
        }
        let axis = self.pair_axis();
        let pair = axis.is_some();
        if T::DTYPE.bits() == 16 {
            // 16-bit operands' misses widened to 128 bytes, not 256 (docs/perf.md,
            // 2026-12-07): 7% faster at 2048 × 2048 × 1000 in pairs and 13% alone, the same at
            // 4096³ and 8192³; FP8's operands keep 256 (1.3% slower at 4096³ with 128)
            k.tma_l2_promotion(L2Promotion::B128);
        }
        let batch = match &operands {
            Operands::Views { batch, .. } => *batch,
            Operands::Pointers(..) => None,
        };
        assert!(
            !(pair && matches!(operands, Operands::Views { .. })),
            "pairs share K-major B tiles of contiguous operands"
        );
        let ping_pong = self.ping_pong != 0;
        // an invariant of the callers (`MatmulStreamK` sets both)
        assert!(
            stream_k.is_none() || !(ping_pong || epilogue.prefetches()),
            "stream-K runs on cooperative warp groups whose epilogue prefetches nothing"
        );
        // chunks stored under the next tile's first K steps: cooperative warp groups whose
        // epilogue neither prefetches nor settles stream-K's shares
        let deferred = epilogue.deferred_chunks();
        assert!(
            deferred == 0 || !(ping_pong || stream_k.is_some() || epilogue.prefetches()),
            "deferred stores run on cooperative warp groups outside stream-K"
        );
        // the overlapped promotion's loop has neither a held result nor a prefetch
        let overlapped = promote.is_some_and(|p| p.overlap > 0);
        assert!(
            !overlapped || (deferred == 0 && !epilogue.prefetches()),
            "an overlapped promotion stores its tiles after their loops"
        );
        // a pair of blocks takes a unit of two tile rows and one tile column (along M), or
        // of one tile row and two tile columns (along N)
        let per_unit = self.per_unit();
        if pair {
            k.cluster_blocks([2]);
        }
        let (per_m, per_n) = match axis {
            Some(PairAxis::M) => (2, 1),
            Some(PairAxis::N) => (1, 2),
            None => (1, 1),
        };
        let tiles_m = k.name_next("tiles_m").let_i32(cdiv(m_size, self.block_m));
        let tiles_n = k.name_next("tiles_n").let_i32(cdiv(n_size, self.block_n));
        let units_m = k.name_next("units_m").let_i32(cdiv(tiles_m, per_m));
        let units_n = if per_n == 1 {
            tiles_n
        } else {
            k.name_next("units_n").let_i32(cdiv(tiles_n, per_n))
        };
        // a batch's products one after the other
        let per_product = k.name_next("units_per").let_i32(units_m * units_n);
        let units = match batch {
            Some(b) => k.name_next("units").let_i32(per_product * b),
            None => per_product,
        };
        let k_tiles = k.name_next("k_tiles").let_i32(cdiv(k_size, self.block_k));
        // the blocks launched: the loop over units strides by their units (pairs); stream-K
        // shares K steps out, so as many blocks as take an even share of them
        let blocks = if stream_k.is_some() {
            k.persistent_blocks(units * per_unit * k_tiles)
        } else if self.persistent != 0 {
            k.persistent_blocks(units * per_unit)
        } else {
            k.blocks([units * per_unit]);
            k.name_next("blocks").let_i32(units * per_unit)
        };
        let stream_k = stream_k.map(|s| s.bind(k));
        // two consumer warp groups, then the producer's warp group
        k.warps(12);
        let group_rows = self.group_rows();
        let stages = self.stages.max(1);

        let shape = CooperativeShape {
            block_m: self.block_m,
            block_n: self.block_n,
            block_k: self.block_k,
            stages,
            ping_pong,
        };
        let dims = (m_size, n_size, k_size);
        let ring = match operands {
            Operands::Pointers(a_ptr, b_ptr) if pair => {
                let axis = axis.unwrap_or(PairAxis::M);
                Ring::Pair(PairRing::new(k, shape, dims, (a_ptr, b_ptr), axis))
            }
            Operands::Pointers(a_ptr, b_ptr) => {
                Ring::One(Cooperative::new(k, shape, dims, (a_ptr, b_ptr)))
            }
            Operands::Views { ops, b_loader, .. } => {
                let mut ring = Cooperative::with_operands(k, shape, ops, shape.releases());
                ring.b_loader = b_loader;
                Ring::One(ring)
            }
        };
        let rank = match &ring {
            Ring::Pair(r) => Scalar::from(r.rank),
            Ring::One(_) => Scalar::from(0),
        };
        let order = ping_pong.then(|| PingPongOrder::new(k));
        // cooperative warp groups that promote their products may take turns at each K step
        // ([`Promote::turns`]): the same alternation, step by step
        let step_order = promote
            .is_some_and(|p| p.turns && p.overlap == 0 && !ping_pong)
            .then(|| PingPongOrder::new(k));
        let bx = k.block_idx().x;
        let first = k.name_next("first_unit").let_i32(bx.clone() / per_unit);
        let stride = k.name_next("unit_stride").let_i32(blocks / per_unit);
        let shares = stream_k
            .as_ref()
            .map(|_| Shares::new(k, (units, stride, k_tiles), (first, blocks)));
        // the units walked whole: all of them, or those before stream-K's
        let whole = shares.as_ref().map_or(units, |s| s.whole_units);
        // where unit `u`'s tile lies (`index`: its place in the block's walk)
        let place = |k: &mut Kernel, u: Val, index: Val| {
            let (batch, u) = match batch {
                Some(_) => {
                    let b = k.name_next("product").let_i32(u / per_product);
                    (Some(b), k.name_next("unit_in").let_i32(u % per_product))
                }
                None => (None, u),
            };
            let (unit_m, unit_n) = if self.hilbert != 0 {
                k.hilbert_tile(u, units_m, units_n, self.group_m)
            } else {
                k.grouped_tile(u, units_m, units_n, self.group_m)
            };
            // the pair's two tiles: the block of rank r takes the r-th
            let (tile_m, tile_n): (Scalar, Scalar) = match axis {
                Some(PairAxis::M) => (unit_m * 2 + rank.clone(), unit_n.into()),
                Some(PairAxis::N) => (unit_m.into(), unit_n * 2 + rank.clone()),
                None => (unit_m.into(), unit_n.into()),
            };
            let offset_m = k.name_next("offset_m").let_i32(tile_m * self.block_m);
            let offset_n = k.name_next("offset_n").let_i32(tile_n * self.block_n);
            TileAt {
                batch,
                rows: offset_m,
                cols: offset_n,
                index,
            }
        };
        // this block's tiles: its pair's units, then every `stride`-th, in grouped order;
        // a walker takes every `turns`-th of them from its `turn`-th (ping-pong's warp
        // groups take them in turn) and runs `body(k, done, at, part)` on each, `done` the
        // ring steps of the tiles before it, `part` the K steps it takes (all of them, or
        // stream-K's share); the walker's ring steps in all after its last tile
        let for_each_tile = |k: &mut Kernel,
                             (turn, turns): (i32, i32),
                             body: &dyn Fn(&mut Kernel, Val, &TileAt, &Part)|
         -> Val {
            let done = k.name_next("done").var_i32(k_tiles * turn);
            let index = k.name_next("tile_index").var_i32(0);
            let from = k.name_next("from_unit").let_i32(first + stride * turn);
            k.name_next("unit");
            k.for_range(from, whole, stride * turns, |k, u| {
                let at = place(k, u, index);
                body(k, done, &at, &Part::whole(k_tiles));
                k.assign(done, done + k_tiles * turns);
                k.assign(index, index + 1);
            });
            if let Some(shares) = &shares {
                shares.walk(k, k_tiles, &|k, u, part| {
                    let at = place(k, u, index);
                    body(k, done, &at, part);
                    k.assign(done, done + part.steps);
                    k.assign(index, index + 1);
                });
            }
            done
        };

        // stream-K's consumers keep its shares' bounds beside the accumulator: the producer
        // gives back all it can
        let loading = matches!(&ring, Ring::One(r) if r.ops.loaded());
        let (producer_registers, consumer_registers) = if stream_k.is_some() {
            (STREAM_K_PRODUCER_REGISTERS, STREAM_K_CONSUMER_REGISTERS)
        } else if loading {
            (LOADING_PRODUCER_REGISTERS, LOADING_CONSUMER_REGISTERS)
        } else {
            (PRODUCER_REGISTERS, CONSUMER_REGISTERS)
        };
        // the producer: the first warp of the last warp group fills the ring, tile after tile
        // (the whole warp group when its threads load an operand)
        let loaded = matches!(&ring, Ring::One(r) if r.ops.loaded());
        let fill = |k: &mut Kernel| {
            let filled = for_each_tile(k, (0, 1), &|k, done, at, part| {
                k.name_next("i");
                k.for_range(0, part.steps, 1, |k, i| {
                    let ki = k.name_next("k_step").let_i32(part.first + i);
                    let place = (at.batch, at.rows, at.cols);
                    match &ring {
                        Ring::One(r) if loaded => r.fill_loaded(k, done + i, ki, place),
                        Ring::One(r) => r.fill_at(k, done + i, ki, place),
                        Ring::Pair(r) => r.fill(k, done + i, ki, at.rows, at.cols),
                    }
                });
            });
            if let Ring::Pair(r) = &ring {
                // every release of this block's stages, the partner's included, has arrived
                // before the block may finish (no cluster barrier at the end)
                r.ring.pipe.producer_drain(k, filled);
            }
        };
        k.thread_group(256, 128, |k| {
            k.set_max_registers(producer_registers);
            if loaded {
                fill(k);
            } else {
                k.single_warp(0, fill);
            }
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
                k.set_max_registers(consumer_registers);
                epilogue.begin(k, g);
                for_each_tile(k, walk, &|k, done, tile, part| {
                    let acc = k
                        .name_next("acc")
                        .register_tensor::<f32>([group_rows, self.block_n], 0.0);
                    // (the overlapped loop declares its own two)
                    let partial = promote.filter(|_| !overlapped).map(|_| {
                        k.name_next("partial")
                            .register_tensor::<f32>([group_rows, self.block_n], None)
                    });
                    let rows = if ping_pong {
                        tile.rows
                    } else {
                        k.name_next("rows")
                            .let_i32(tile.rows + group_rows * g as i32)
                    };
                    let at = TileAt { rows, ..*tile };
                    let step = |k: &mut Kernel, i: Val| {
                        match &partial {
                            Some(partial) => {
                                let r = ring.cooperative();
                                // the step's scales asked for before its product
                                let scale = promote.and_then(|p| p.step_scale);
                                let factor = scale.map(|f| f(k, i, &at));
                                let pair = (partial, &acc);
                                match &step_order {
                                    Some(turns) => promote_in_turns(
                                        k,
                                        (r, g, turns),
                                        done + i,
                                        pair,
                                        factor.as_ref(),
                                    ),
                                    None => {
                                        r.multiply_promoted(k, g, done + i, pair, factor.as_ref())
                                    }
                                }
                            }
                            None => ring.multiply(k, g, done + i, &acc),
                        }
                        // this step's stage is freed by the next step (or after the tile)
                        k.if_(i.gt(0), |k| release(k, done + i - 1));
                    };
                    let steps = |k: &mut Kernel, from: Val, to: Val| {
                        k.name_next("i");
                        k.for_range_unrolled(from, to, 1, stages as u32, |k, i| step(k, i));
                    };
                    if let Some(order) = &order {
                        order.wait_turn(k, g, at.index);
                    }
                    match (halfway, part.share) {
                        _ if overlapped => {
                            let Some(p) = promote else {
                                unreachable!("an overlapped loop promotes its products")
                            };
                            let r = ring.cooperative();
                            let shape = [group_rows, self.block_n];
                            let behind = p.turns && !ping_pong && g == 1;
                            p.overlapped(
                                k,
                                (r, g, behind),
                                (done, part.steps),
                                &at,
                                (&acc, shape),
                                &release,
                            );
                        }
                        (Some(halfway), None) => {
                            // the loop in two halves, the prefetch between them
                            // (straight-line code: the checks see it run once per tile)
                            steps(k, Val::constant(0), halfway);
                            epilogue.prefetch(k, g, &at);
                            steps(k, halfway, k_tiles);
                        }
                        _ if deferred > 0 => {
                            // the held result of the tile before, a chunk after each of the
                            // first steps (those there are), the rest of the loop after
                            for j in 0..deferred {
                                k.if_(part.steps.gt(j), |k| step(k, Val::constant(j)));
                                epilogue.store_held(k, g, j);
                            }
                            steps(k, Val::constant(deferred), part.steps);
                        }
                        _ => steps(k, Val::constant(0), part.steps),
                    }
                    if let Some(order) = &order {
                        order.pass_turn(k, g);
                    }
                    k.wgmma().wait_group(0);
                    // (the overlapped loop has released every stage of its tile)
                    if !overlapped {
                        release(k, done + part.steps - 1);
                    }
                    match (&stream_k, part.share) {
                        (Some(sk), Some(share)) => sk.settle(k, g, &acc, &at, share, rank.clone()),
                        _ => epilogue.tile(k, g, &acc, &at),
                    }
                });
                epilogue.finish(k, g);
            });
        }
        // a pair needs no barrier at the end: the partner's copies into this block land
        // before this block's consumers are done with them, and its releases before this
        // block's producer is done waiting for them (`producer_drain`)
    }
}

impl MatmulPersistent {
    /// The stores of C (a `[m, n]` view) in chunks of `width` columns for this kernel's
    /// consumer warp groups (`CStores::plan`: staging buffers when `tma_store` asks for them
    /// and C's rows allow TMA).
    pub(crate) fn c_stores<T: Element>(
        &self,
        k: &mut Kernel,
        gc: GlobalTensor<T>,
        n_size: Val,
        width: i32,
    ) -> CStores<T> {
        let shape = (self.group_rows(), self.block_n, self.tma_store != 0);
        CStores::plan(k, gc, (n_size, width), shape)
    }
}

#[cfg(test)]
mod tests {
    use crate::gemm::general::MatmulGeneral;
    use crate::gemm::stream_k::MatmulStreamK;
    use tilus::tune::Tunable;

    /// Every hyperparameter of v6 can be set by name and read back (what `--set` and the
    /// subset spaces rely on), each into its own field.
    #[test]
    fn every_hyperparameter_is_set_and_read_by_name() {
        let names = [
            "block_m",
            "block_n",
            "block_k",
            "stages",
            "group_m",
            "persistent",
            "tma_store",
            "cluster_m",
            "cluster_n",
            "hilbert",
            "ping_pong",
            "defer_stores",
        ];
        let b = tilus::tune::Binding(
            names
                .iter()
                .enumerate()
                .map(|(i, &n)| (n.to_string(), 100 + i as i64))
                .collect(),
        );
        let t = super::MatmulPersistent::from_subset(&b, &names).unwrap();
        assert_eq!(t.subset_binding(&names), b);
        assert_eq!((t.block_k, t.cluster_n, t.defer_stores), (102, 108, 111));
    }

    /// The kernels on v6's tile whose spaces cover some of its hyperparameters give back
    /// every point of their space, and refuse a point that lacks one.
    #[test]
    fn subsets_of_v6_round_trip_through_their_bindings() {
        for b in MatmulGeneral::space().bindings() {
            let config = MatmulGeneral::from_binding(&b).unwrap();
            assert_eq!(config.to_binding(), Some(b));
        }
        for b in MatmulStreamK::space().bindings() {
            let config = MatmulStreamK::from_binding(&b).unwrap();
            assert_eq!(config.tile.cluster_m, b.get("cluster_m").unwrap() as i32);
            assert_eq!(config.to_binding(), Some(b));
        }
        let short = tilus::tune::Binding(vec![("block_m".into(), 128)]);
        let e = MatmulGeneral::from_binding(&short).unwrap_err();
        assert!(e.contains("no block_n"), "{e}");
    }
}
