//! The ring of a block with two consumer warp groups and a producer (the structure of the
//! series' v5, which the persistent kernel runs on): the tile shape, A's parts, the TMA copies
//! that fill a stage, each warp group's product and the release of its stage, and the
//! registers moved from the producer to the consumers.

use half::f16;
use tilus::lang::{Element, WgmmaTarget};
use tilus::prelude::*;

use crate::gemm::ring_operands::{load_into, RingOperands};

/// Registers per producer thread when registers are moved.
///
/// ```
/// use tilus_kernels::gemm::cooperative::{CONSUMER_REGISTERS, PRODUCER_REGISTERS};
/// // a block of 384 threads shares 65536 registers: 168 each, moved to the two consumers
/// assert_eq!(PRODUCER_REGISTERS + 2 * CONSUMER_REGISTERS, 3 * 168);
/// ```
pub const PRODUCER_REGISTERS: u32 = 40;

/// Registers per consumer thread when registers are moved: the rest of the pool of 384
/// threads at 168 (65536 / 384 in units of 8), `(3 · 168 - 40) / 2`.
pub const CONSUMER_REGISTERS: u32 = 232;

/// Registers per producer thread when its threads load an operand
/// ([`RingOperands::loaded`]): the loads of a chunk in flight need more than TMA copies.
pub const LOADING_PRODUCER_REGISTERS: u32 = 104;

/// Registers per consumer thread beside a loading producer: the rest of the pool, `(3 · 168
/// - 104) / 2`.
pub const LOADING_CONSUMER_REGISTERS: u32 = 200;

/// The tile shape of a block with two consumer warp groups.
///
/// ```
/// use tilus_kernels::gemm::cooperative::CooperativeShape;
/// let shape = |ping_pong| CooperativeShape { block_m: 128, block_n: 256, block_k: 64, stages: 4, ping_pong };
/// assert_eq!((shape(false).a_parts(), shape(false).releases()), (2, 2)); // A in halves
/// assert_eq!((shape(true).a_parts(), shape(true).releases()), (1, 1)); // whole tiles in turn
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CooperativeShape {
    /// Rows of C per tile.
    pub block_m: i32,
    /// Columns of C per tile.
    pub block_n: i32,
    /// Depth of one K step.
    pub block_k: i32,
    /// Stages in the ring.
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

/// The ring of a block with two consumer warp groups, shared by the series' v5 and the persistent kernel (and, filled
/// differently, by the pairs of `gemm/pair.rs`): per stage, A's two halves (one per consumer
/// warp group; A whole when they take tiles in turn, [`CooperativeShape::ping_pong`]) and the B
/// tile, filled by TMA copies, and the [`Pipeline`] whose empty barriers count one arrival per
/// consumer warp group that reads a stage.
///
/// ```
/// // the tutorial's v5 is a whole kernel on it, run here on the interpreter
/// use hopper_matmul::v5::MatmulCooperative;
/// let (m, n, k) = (256, 256, 128);
/// let (a, b) = (vec![half::f16::ONE; m * k], vec![half::f16::ONE; n * k]);
/// let mut c = vec![half::f16::NAN; m * n];
/// tilus::interpret(&MatmulCooperative::default(), (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(128.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
pub struct Cooperative<T: Element = f16> {
    /// Where A and B come from.
    pub(crate) ops: RingOperands<T>,
    /// A's parts ([`CooperativeShape::a_parts`]), `[stages, block_m / parts, block_k]` each
    /// (`[stages, block_k, block_m / parts]` MN-major).
    pub(crate) sa: Vec<SharedTensor<T>>,
    /// B, `[stages, block_n, block_k]` (`[stages, block_k, block_n]` MN-major).
    pub(crate) sb: SharedTensor<T>,
    /// The ring's barriers (the callers release its stages).
    pub pipe: Pipeline,
    pub(crate) stage_bytes: i32,
    pub(crate) shape: CooperativeShape,
    /// B's loader when the producer's threads fill B some other way than by loading its view
    /// ([`StageLoader`]: the quantized matmul's dequantizing load); None: [`load_into`].
    pub(crate) b_loader: Option<StageLoader<T>>,
}

/// A loader of one stage of B by the producer's warp group: `(kernel, tile, at)` fills
/// `tile` (`[block_n, block_k]`, K-major) with the operand's box at `at`, zeros outside it,
/// as `load_into` does from a view.
pub type StageLoader<T> = std::rc::Rc<dyn Fn(&mut Kernel, &SharedTensor<T>, &StageAt)>;

/// Where a [`StageLoader`]'s stage lies: the box's first element `(row, k_at)`, and the ring
/// step and the tile's K step it fills (a loader that prefetches ahead counts by them).
pub struct StageAt {
    /// The box's first row (along N).
    pub row: Val,
    /// The box's first element along K.
    pub k_at: Val,
    /// The ring step: steps of every tile the producer has filled before this one, counted
    /// across tiles.
    pub step: Scalar,
    /// The K step within the tile.
    pub k_step: Val,
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
        dims: (Val, Val, Val),
        ptrs: (PtrVal<T>, PtrVal<T>),
        arrivals: u32,
    ) -> Cooperative<T> {
        let ops = RingOperands::k_major(k, dims, ptrs);
        Cooperative::with_operands(k, shape, ops, arrivals)
    }

    /// The ring on operands declared by the caller, with empty barriers of `arrivals`.
    pub fn with_operands(
        k: &mut Kernel,
        shape: CooperativeShape,
        ops: RingOperands<T>,
        arrivals: u32,
    ) -> Cooperative<T> {
        let stages = shape.stages.max(1);
        let parts = shape.a_parts();
        let part_m = shape.block_m / parts;
        let names: &[&str] = if parts == 1 { &["sa"] } else { &["sa0", "sa1"] };
        let a_tile = RingOperands::<T>::tile_shape(ops.a_mn, stages, part_m, shape.block_k);
        let sa: Vec<_> = names
            .iter()
            .map(|name| k.name_next(name).shared_tensor::<T>(a_tile))
            .collect();
        let b_tile = RingOperands::<T>::tile_shape(ops.b_mn, stages, shape.block_n, shape.block_k);
        let sb = k.name_next("sb").shared_tensor::<T>(b_tile);
        let pipe = Pipeline::new(k, stages as u32, arrivals);
        let stage_bytes =
            parts * sa[0].at(Val::constant(0)).nbytes() + sb.at(Val::constant(0)).nbytes();
        Cooperative {
            ops,
            sa,
            sb,
            pipe,
            stage_bytes,
            shape,
            b_loader: None,
        }
    }

    /// The copies of A's parts of `stage` (the first at rows `offset_m ..`, the next the
    /// rows after it) for K offset `offset_k`, on the stage's barrier `bar`; `batch`: A's
    /// batch coordinate (batched views).
    #[track_caller]
    pub fn copy_a(
        &self,
        k: &mut Kernel,
        stage: Val,
        bar: Barrier,
        (offset_m, offset_k): (Val, Val),
        batch: Option<Val>,
    ) {
        let part_m = self.shape.block_m / self.shape.a_parts();
        for (p, sa) in self.sa.iter().enumerate() {
            let rows = if p == 0 {
                offset_m
            } else {
                k.name_next("offset_m1")
                    .let_i32(offset_m + part_m * p as i32)
            };
            let at = RingOperands::<T>::offsets(self.ops.a_mn, batch, rows, offset_k);
            k.tma()
                .global_to_shared(&self.ops.ga, &sa.at(stage), at, bar);
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
        self.fill_at(k, step, i, (None, offset_m, offset_n));
    }

    /// [`Cooperative::fill`] of the tile of product `batch` (batched operands) at
    /// `(offset_m, offset_n)`.
    #[track_caller]
    pub fn fill_at(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        i: Val,
        (batch, offset_m, offset_n): (Option<Val>, Val, Val),
    ) {
        let slot = self.pipe.producer_acquire(k, step, self.stage_bytes);
        let stage = slot.stage();
        let bar = slot.barrier();
        let offset_k = k.name_next("offset_k").let_i32(i * self.shape.block_k);
        let (batch_a, batch_b) = self.ops.batch_of(k, batch);
        self.copy_a(k, stage, bar, (offset_m, offset_k), batch_a);
        let at = RingOperands::<T>::offsets(self.ops.b_mn, batch_b, offset_n, offset_k);
        k.tma()
            .global_to_shared(&self.ops.gb, &self.sb.at(stage), at, bar);
    }

    /// [`Cooperative::fill_at`] when the producer's threads load an operand
    /// ([`RingOperands::a_loaded`], `b_loaded`), run by the whole producer warp group: every
    /// thread waits for the stage, the loaded operands go from global memory through
    /// registers into the stage in chunks (out-of-bounds elements read 0, as TMA fills them),
    /// the threads publish their writes to the async proxy and meet, then one thread arrives
    /// with the bytes the other operands' TMA copies will deliver and issues those copies.
    #[track_caller]
    pub fn fill_loaded(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        i: Val,
        (batch, offset_m, offset_n): (Option<Val>, Val, Val),
    ) {
        let ops = &self.ops;
        let step: Scalar = step.into();
        let slot = self.pipe.producer_wait(k, step.clone());
        let stage = slot.stage();
        let offset_k = k.name_next("offset_k").let_i32(i * self.shape.block_k);
        let (batch_a, batch_b) = ops.batch_of(k, batch);
        let part_m = self.shape.block_m / self.shape.a_parts();
        let a_rows = |k: &mut Kernel, p: usize| -> Val {
            if p == 0 {
                offset_m
            } else {
                k.name_next("offset_m1")
                    .let_i32(offset_m + part_m * p as i32)
            }
        };
        let mut tma_bytes = 0;
        for (p, sa) in self.sa.iter().enumerate() {
            let tile = sa.at(stage);
            if ops.a_loaded {
                let rows = a_rows(k, p);
                let shape = RingOperands::<T>::stage_shape(ops.a_mn, part_m, self.shape.block_k);
                load_into(
                    k,
                    (&ops.ga, ops.a_mn, batch_a),
                    (&tile, shape),
                    (rows, offset_k),
                );
            } else {
                tma_bytes += tile.nbytes();
            }
        }
        let b_tile = self.sb.at(stage);
        if let (true, Some(loader)) = (ops.b_loaded, &self.b_loader) {
            let at = StageAt {
                row: offset_n,
                k_at: offset_k,
                step: step.clone(),
                k_step: i,
            };
            loader(k, &b_tile, &at);
        } else if ops.b_loaded {
            let shape =
                RingOperands::<T>::stage_shape(ops.b_mn, self.shape.block_n, self.shape.block_k);
            load_into(
                k,
                (&ops.gb, ops.b_mn, batch_b),
                (&b_tile, shape),
                (offset_n, offset_k),
            );
        } else {
            tma_bytes += b_tile.nbytes();
        }
        k.fence_proxy_async();
        k.sync_group();
        self.pipe.producer_commit(k, &slot, tma_bytes);
        let bar = slot.barrier();
        k.single_thread(|k| {
            if !ops.a_loaded {
                for (p, sa) in self.sa.iter().enumerate() {
                    let rows = a_rows(k, p);
                    let at = RingOperands::<T>::offsets(ops.a_mn, batch_a, rows, offset_k);
                    k.tma().global_to_shared(&ops.ga, &sa.at(stage), at, bar);
                }
            }
            if !ops.b_loaded {
                let at = RingOperands::<T>::offsets(ops.b_mn, batch_b, offset_n, offset_k);
                k.tma().global_to_shared(&ops.gb, &b_tile, at, bar);
            }
        });
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
        self.issue(k, g, step, acc, WgmmaTarget::all());
        k.wgmma().wait_group(1);
    }

    /// Waits for step `step`'s stage and issues consumer warp group `g`'s product of it into
    /// `target` of `acc`, committed; the stage is released later, by step number.
    #[track_caller]
    fn issue(
        &self,
        k: &mut Kernel,
        g: usize,
        step: impl Into<Scalar>,
        acc: &RegisterTensor<f32>,
        target: WgmmaTarget,
    ) {
        let slot = self.pipe.consumer_acquire(k, step);
        let stage = slot.stage();
        k.wgmma().fence();
        // each operand as stored: a K-major tile as it is (A) or transposed (B), an MN-major
        // one the other way
        let a = self.a_of(g).at(stage);
        let a = if self.ops.a_mn { a.transpose() } else { a };
        let b = self.sb.at(stage);
        let b = if self.ops.b_mn { b } else { b.transpose() };
        k.wgmma().mma_to(&a, &b, acc, target);
        k.wgmma().commit_group();
        drop(slot);
    }

    /// [`Cooperative::multiply`] promoted: the step's product overwrites `partial`, is waited
    /// for, and is added to `acc` in f32 on the CUDA cores, times `factor` (`[rows, 1]`: each
    /// row's scale for this step) when there is one. The FP8 tensor cores keep fewer bits than
    /// f32 while they accumulate; one step's 128 codes of K are what they sum before the
    /// registers take over (as DeepGEMM does). The stage is the caller's to release.
    #[track_caller]
    pub fn multiply_promoted(
        &self,
        k: &mut Kernel,
        g: usize,
        step: impl Into<Scalar>,
        (partial, acc): (&RegisterTensor<f32>, &RegisterTensor<f32>),
        factor: Option<&RegisterTensor<f32>>,
    ) {
        self.issue_product(k, g, step, partial);
        k.wgmma().wait_group(0);
        Cooperative::<T>::promote(k, partial, acc, factor);
    }

    /// Issues step `step`'s product of consumer warp group `g` into `partial` (overwriting
    /// it), committed and left in flight: the promoted loop that overlaps a step's promotion
    /// with the next step's product waits for it one step later.
    #[track_caller]
    pub fn issue_product(
        &self,
        k: &mut Kernel,
        g: usize,
        step: impl Into<Scalar>,
        partial: &RegisterTensor<f32>,
    ) {
        self.issue(k, g, step, partial, WgmmaTarget::all().overwriting());
    }

    /// Adds a completed step's `partial` product into `acc` in f32, times `factor` (`[rows,
    /// 1]`) when there is one.
    #[track_caller]
    pub fn promote(
        k: &mut Kernel,
        partial: &RegisterTensor<f32>,
        acc: &RegisterTensor<f32>,
        factor: Option<&RegisterTensor<f32>>,
    ) {
        match factor {
            Some(f) => k.assign_tile(acc, partial.mul_add(*f, *acc)),
            None => k.assign_tile(acc, *acc + *partial),
        }
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
