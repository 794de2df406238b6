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

use tilus::lang::Element;
use tilus::prelude::*;

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

/// Registers per producer thread when v5 moves registers.
pub const PRODUCER_REGISTERS: u32 = 40;

/// Registers per consumer thread when v5 moves registers: the rest of the pool of 384
/// threads at 168 (65536 / 384 in units of 8), `(3 · 168 - 40) / 2`.
pub const CONSUMER_REGISTERS: u32 = 232;

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

/// The tile shape of a block with two consumer warp groups.
#[derive(Clone, Copy, Debug)]
pub struct CooperativeShape {
    pub block_m: i32,
    pub block_n: i32,
    pub block_k: i32,
    pub stages: i32,
    /// false: the warp groups share each tile, `block_m / 2` rows each (cooperative);
    /// true: they take whole tiles in turn (ping-pong), so A is staged whole and a stage is
    /// freed by the one warp group that read it.
    pub ping_pong: bool,
}

impl CooperativeShape {
    /// The parts A is staged in: one per warp group sharing a tile.
    pub fn a_parts(&self) -> i32 {
        if self.ping_pong {
            1
        } else {
            2
        }
    }

    /// Arrivals that free a stage in one block: one per warp group that reads it.
    pub fn releases(&self) -> u32 {
        self.a_parts() as u32
    }
}

/// The ring of a block with two consumer warp groups, shared by v5 and v6 (and, filled
/// differently, by the pairs of [`crate::pair`]): per stage, A's two halves (one per consumer
/// warp group; A whole when they take tiles in turn, [`CooperativeShape::ping_pong`]) and the B
/// tile, filled by TMA copies, and the [`Pipeline`] whose empty barriers count one arrival per
/// consumer warp group that reads a stage.
pub struct Cooperative<T: Element = f16> {
    pub(crate) ga: GlobalTensor<T>,
    pub(crate) gb: GlobalTensor<T>,
    /// A's parts ([`CooperativeShape::a_parts`]), `[stages, block_m / parts, block_k]` each.
    pub(crate) sa: Vec<SharedTensor<T>>,
    pub(crate) sb: SharedTensor<T>,
    /// The ring's barriers (the callers release its stages).
    pub pipe: Pipeline,
    pub(crate) stage_bytes: i32,
    pub(crate) shape: CooperativeShape,
}

impl<T: Element> Cooperative<T> {
    /// Declares the views of A `[m, k]` and B `[n, k]`, the staged tiles and the pipeline
    /// (each consumer warp group that reads a stage releases it, one arrival each).
    pub fn new(
        k: &mut Kernel,
        shape: CooperativeShape,
        dims: (Val, Val, Val),
        ptrs: (PtrVal<T>, PtrVal<T>),
    ) -> Cooperative<T> {
        Cooperative::with_arrivals(k, shape, dims, ptrs, shape.releases())
    }

    /// [`Cooperative::new`] with empty barriers of `arrivals` (a pair's count both blocks'
    /// releases).
    pub fn with_arrivals(
        k: &mut Kernel,
        shape: CooperativeShape,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
        arrivals: u32,
    ) -> Cooperative<T> {
        let stages = shape.stages.max(1);
        let parts = shape.a_parts();
        let part_m = shape.block_m / parts;
        let ga = k.name_next("ga").global_view::<T>(a_ptr, [m_size, k_size]);
        let gb = k.name_next("gb").global_view::<T>(b_ptr, [n_size, k_size]);
        let names: &[&str] = if parts == 1 { &["sa"] } else { &["sa0", "sa1"] };
        let sa: Vec<_> = names
            .iter()
            .map(|name| {
                k.name_next(name)
                    .shared_tensor::<T>([stages, part_m, shape.block_k])
            })
            .collect();
        let sb = k
            .name_next("sb")
            .shared_tensor::<T>([stages, shape.block_n, shape.block_k]);
        let pipe = Pipeline::new(k, stages as u32, arrivals);
        let stage_bytes =
            parts * sa[0].at(Val::constant(0)).nbytes() + sb.at(Val::constant(0)).nbytes();
        Cooperative {
            ga,
            gb,
            sa,
            sb,
            pipe,
            stage_bytes,
            shape,
        }
    }

    /// The copies of A's parts of `stage` (the first at rows `offset_m ..`, the next the
    /// rows after it) for K offset `offset_k`, on the stage's barrier `bar`.
    #[track_caller]
    pub fn copy_a(
        &self,
        k: &mut Kernel,
        stage: Val,
        bar: Barrier,
        (offset_m, offset_k): (Val, Val),
    ) {
        let part_m = self.shape.block_m / self.shape.a_parts();
        for (p, sa) in self.sa.iter().enumerate() {
            let rows = if p == 0 {
                offset_m
            } else {
                k.name_next("offset_m1")
                    .let_i32(offset_m + part_m * p as i32)
            };
            k.tma()
                .global_to_shared(&self.ga, &sa.at(stage), [rows, offset_k], bar);
        }
    }

    /// The producer's ring step `step`: waits for its stage, then copies K step `i` of the
    /// tile at `(offset_m, offset_n)`: A's parts and B.
    #[track_caller]
    pub fn fill(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        i: Val,
        offset_m: Val,
        offset_n: Val,
    ) {
        let slot = self.pipe.producer_acquire(k, step, self.stage_bytes);
        let stage = slot.stage();
        let bar = slot.barrier();
        let offset_k = k.name_next("offset_k").let_i32(i * self.shape.block_k);
        self.copy_a(k, stage, bar, (offset_m, offset_k));
        k.tma()
            .global_to_shared(&self.gb, &self.sb.at(stage), [offset_n, offset_k], bar);
    }

    /// The part of A consumer warp group `g` multiplies: its half, or all of A in ping-pong.
    fn a_of(&self, g: usize) -> &SharedTensor<T> {
        if self.shape.ping_pong {
            &self.sa[0]
        } else {
            &self.sa[g]
        }
    }

    /// Consumer warp group `g`'s ring step `step`: waits for its stage, multiplies its half of
    /// A (all of A in ping-pong) by B into `acc` and keeps that product in flight
    /// (`wait_group(1)`); the stage is the caller's to release once the next step's wait has
    /// returned.
    #[track_caller]
    pub fn multiply(
        &self,
        k: &mut Kernel,
        g: usize,
        step: impl Into<Scalar>,
        acc: &RegisterTensor<f32>,
    ) {
        let slot = self.pipe.consumer_acquire(k, step);
        let stage = slot.stage();
        k.wgmma().fence();
        k.wgmma()
            .mma(&self.a_of(g).at(stage), &self.sb.at(stage).transpose(), acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(1);
        // released later, by step (the slot's stage is named by its step number)
        drop(slot);
    }
    /// Frees ring step `step`'s stage (nothing for a negative step) on behalf of the calling
    /// consumer warp group: one of its threads arrives, once the group's products that read
    /// the stage are complete (a WGMMA is one operation of the whole warp group, so its
    /// completion, seen by any of its threads, is the group's). One arrival per warp group
    /// instead of one per thread: the barrier's atomics are off the consumers' path.
    #[track_caller]
    pub fn release(&self, k: &mut Kernel, step: impl Into<Scalar>) {
        let step = step.into();
        k.single_thread(|k| self.pipe.consumer_release_step(k, step));
    }
}
