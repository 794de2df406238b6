//! `quant_matmul_fragments`: the quantized matmul on the tensor cores from weights prepacked
//! in fragment order ([`super::prepack`]): `Cᵀ = dequant(W) · Aᵀ`, dequantized W the
//! register operand of WGMMA (64 rows of W per block, its M) and A's `[block_m, 64]` tile the
//! shared one (WGMMA's N the rows of A: 8 for one row, the spare rows costing nothing where
//! the time is the weights' bytes; up to 256).
//!
//! A ring of `stages` stages in shared memory holds, per K step of 64, A's tile, the step's
//! words of W and its scales (and zero points), all brought by TMA on one mbarrier. Per step
//! each thread reads its run of words, unpacks the codes, relabels them as its part of the
//! `[64, 64]` register operand (no data moves: the host put them there, each f16 pair's two
//! codes in one word for integers of 1 to 8 bits), dequantizes them in f16 pairs (`q · s` rounded to
//! f16 as every path; `(q - z) · s` with zero points, whole numbers) and issues the product; the step
//! before's product completes meanwhile, and its stage then takes the step `stages` after it:
//! TMA keeps `stages - 1` steps in flight and no thread waits for global memory. With
//! `splits`, the blocks of a tile share its K steps and pass their partial sums on in turn
//! through a workspace; the last stores C. With `warp_groups = 2` a block holds two warp
//! groups, each its own 64 rows of W against the one tile of A (`fragments_wide.rs`; this
//! file keeps what both forms share: the block's plan, the views, a step's copies and its
//! dequantization).
//!
//! Rows of A past M arrive as zeros (TMA), rows of W past N are the prepack's padding (code
//! 0, scale 0), and C is stored under its bounds: every M and N are taken; K is a multiple of
//! 8 (TMA reads A's rows).

use super::group_sums::GroupSums;
use super::prepack::{
    code_layout, planes, Prepacked, CODES, LOW_PLANE_WORDS, THREADS, TILE_K, TILE_N,
};
use super::stage_tiles::StageTiles;
use half::f16;
use std::marker::PhantomData;
use tilus::layout::RegisterLayout;
use tilus::lowp::LowpElement;
use tilus::lowp::UInt;
use tilus::prelude::*;

/// Words per row of a stage of codes: a thread's run is 1 to 8 words, a tile's runs 2 to 16
/// such rows (TMA's box rows hold at most 256 elements and at least 16 bytes).
pub(super) const ROW_WORDS: i32 = 64;

/// The arguments: `m`, `n` (runtime); `k` (compile-time); `a [m, k]` f16; `w` the prepacked
/// words; scales and zero points as prepacked, `[groups, tiles_n · 64]` f16 (zero points read
/// for unsigned types only); `c [m, n]` f16.
pub type FragmentArgs = (
    i32,
    i32,
    Const<i32>,
    Ptr<f16>,
    Ptr<u32>,
    Ptr<f16>,
    Ptr<f16>,
    PtrMut<f16>,
);

/// The kernel for weights of type `T` (1, 2, 4 or 8 bits, or 3-bit integers in two planes). Fields are compile-time
/// hyperparameters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct QuantMatmulFragments<T> {
    /// Rows of A per block: WGMMA's N, a multiple of 8 up to 256.
    pub block_m: i32,
    /// Stages of the ring: one K step each (A's tile, W's words and scales).
    pub stages: i32,
    /// Elements of a row of W that share a scale (0: the whole row; otherwise 64 or more).
    pub group: i32,
    /// Blocks that share a tile's K steps (1: one block per tile). Their partial sums meet
    /// in a workspace, block by block in order, and the last stores C; the kernel takes
    /// the largest count up to this one that divides the K steps (1 with more than 128 rows
    /// of A per block).
    pub splits: i32,
    /// Warp groups that multiply, each its own 64 rows of W against the block's shared tile
    /// of A (1, or 2: A read from L2 once per 128 rows of W, and two warps per scheduler to
    /// hide each other's dequantization; no splits; see `fragments_wide.rs`).
    pub warp_groups: i32,
    /// K steps of 64 each stage holds (1, 2 or 4; one warp group only): a stage's wait,
    /// block barrier, refill and wait for the product before come once per `stage_steps`
    /// steps, and its copies are one TMA box per operand where they can be (A's steps where
    /// K is a multiple of 64, W's where a step's words are whole 1024-byte swizzle patterns;
    /// a copy per group of scales): at few rows of A the count of copies a step, not their
    /// bytes, looks like what sets the time (not yet measured on a GPU). Taken as the largest power of two up to this one that divides the block's
    /// steps and whose stage lies in one group or holds whole groups (1 otherwise).
    pub stage_steps: i32,
    /// Products by `mma.sync` m16n8k16 (one warp group, 8 or 16 rows of A per block): each
    /// warp its 16 rows of W against A's tile read from the stage by `ldmatrix`, instead of
    /// one WGMMA a K step of 16 for the warp group. Synchronous: a stage is refilled as soon
    /// as every warp has read it, with no product left in flight.
    pub mma_sync: bool,
    /// Scales applied to the f32 sums of each group of K instead of each f16 pair of codes
    /// (one warp group, WGMMA): the codes become exact f16 values (`q`, or `q - z`), two
    /// accumulators take the groups in turn, and as a group's products complete its sums
    /// are scaled into the total, so a step spends no multiply on scales. The result is the
    /// exact `Σ a·q·s` rounded in f32, where the other forms round each `q·s` to f16 first.
    /// Per channel (`group` 0) the scale comes once, at the end. Taken where a group is
    /// whole rounds of steps and a pass over the stages whole pairs of groups.
    pub scale_sums: bool,
    _t: PhantomData<fn() -> T>,
}

/// The stages the host API gives the fragment kernel for weights of `bits` per code and
/// `block_m` rows of A per block: about 24 KB of copies (codes and A's tile) in flight per
/// block, 4 to 8 steps. int4 at one row of A carries 3 KB a step and takes 8 (2.9× cuBLAS
/// f16 at 1 × 28672 × 8192 on an H100, against 2.5× with 4); int8, FP8 and 64 rows of A
/// carry 5 KB or more and lose with more than 4 (docs/perf.md).
pub fn fragment_stages(bits: u32, block_m: i32) -> i32 {
    let step = (TILE_N * TILE_K) as i64 * bits as i64 / 8 + block_m as i64 * TILE_K as i64 * 2;
    (24 * 1024 / step).clamp(4, 8) as i32
}

/// How the host API holds the fragment kernel's `stages` (from [`fragment_stages`]) steps in
/// flight: `(stages, stage_steps)`. Eight or more one-step stages become half as many stages of
/// two steps each (the same steps in flight, half the copies of A's tile and of the words):
/// at 1 × 28672 × 8192 on an H100 (docs/perf.md, 2026-12-07) int4 ran 46.5 µs so against
/// 48.3 in eight stages of one step, int2 41.8 against 46.4, int3 60.7 against 63.0. Fewer
/// stages stay one step each: two stages of two steps ran 30-45% slower than four of one
/// (the refill of a stage waits for both its steps).
///
/// ```
/// use tilus_kernels::quant::{fragment_stage_steps, fragment_stages};
/// // int4 at 8 rows of A: eight stages of a step become four of two
/// assert_eq!(fragment_stage_steps(fragment_stages(4, 8)), (4, 2));
/// // int8 at 8 rows: four stages stay one step each
/// assert_eq!(fragment_stage_steps(fragment_stages(8, 8)), (4, 1));
/// ```
pub fn fragment_stage_steps(stages: i32) -> (i32, i32) {
    if stages >= 8 {
        (stages / 2, 2)
    } else {
        (stages, 1)
    }
}

/// The blocks the host API has share each tile's K steps: the fewest of 1, 2, 4 and 8 that
/// give 384 blocks or more (one block per tile of 64 rows of W leaves 192 blocks at
/// N = 12288 and 128 at N = 8192 for 132 multiprocessors), as long as each keeps 16 steps or
/// more. Measured on an H100 (docs/perf.md): int4 at 1 × 12288 × 4096 best with 2, at
/// 16 × 8192 × 8192 with 4, and at 1 × 28672 × 8192 (448 tiles) with 1, which 2 slows by 25%.
pub fn fragment_splits(tiles: usize, steps: usize) -> i32 {
    let mut splits = 1;
    while tiles * splits < 384 && steps / (splits * 2) >= 16 && steps.is_multiple_of(splits * 2) {
        splits *= 2;
    }
    splits.min(8) as i32
}

impl<T> QuantMatmulFragments<T> {
    /// The kernel for `group` (0: per channel) and `block_m` rows of A per block, four K
    /// steps in flight.
    pub fn new(group: i32, block_m: i32) -> QuantMatmulFragments<T> {
        QuantMatmulFragments {
            block_m,
            stages: 4,
            group,
            splits: 1,
            warp_groups: 1,
            stage_steps: 1,
            mma_sync: false,
            scale_sums: false,
            _t: PhantomData,
        }
    }

    /// The same kernel with `warp_groups` warp groups multiplying (1 or 2; see the field).
    pub fn with_warp_groups(mut self, warp_groups: i32) -> QuantMatmulFragments<T> {
        self.warp_groups = warp_groups;
        self
    }

    /// The same kernel with `stage_steps` K steps in each stage (see the field).
    pub fn with_stage_steps(mut self, stage_steps: i32) -> QuantMatmulFragments<T> {
        self.stage_steps = stage_steps;
        self
    }

    /// The same kernel with its products by `mma.sync` (see the field).
    pub fn with_mma_sync(mut self, mma_sync: bool) -> QuantMatmulFragments<T> {
        self.mma_sync = mma_sync;
        self
    }

    /// The same kernel with its scales applied to each group's sums (see the field).
    pub fn with_scale_sums(mut self, scale_sums: bool) -> QuantMatmulFragments<T> {
        self.scale_sums = scale_sums;
        self
    }

    /// Whether this kernel, with its scales applied to the sums by group, takes K = `k`
    /// (the refusals of [`GroupSums`] for the block's plan at that K, asked on the host:
    /// one warp group, products by WGMMA, whole groups of rounds), and if so the K steps
    /// its stages hold at that K.
    pub(super) fn sums_take(&self, k: usize) -> Option<i32>
    where
        T: LowpElement,
    {
        let plan = BlockPlan::new(self, <T as LowpElement>::DTYPE, k as i64);
        let takes = self.warp_groups == 1
            && !self.mma_sync
            && GroupSums::rounds_per_group(&plan, self.block_m).is_ok();
        takes.then_some(plan.stage_steps)
    }

    /// The same kernel with `splits` blocks sharing each tile's K steps.
    pub fn with_splits(mut self, splits: i32) -> QuantMatmulFragments<T> {
        self.splits = splits;
        self
    }

    /// The same kernel with a ring of `stages` stages (`stages - 1` K steps in flight).
    pub fn with_stages(mut self, stages: i32) -> QuantMatmulFragments<T> {
        self.stages = stages;
        self
    }
}

impl<T> Script for QuantMatmulFragments<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = FragmentArgs;

    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "k", "a", "w", "scales", "zeros", "c"]
    }

    fn name(&self) -> String {
        format!("quant_matmul_fragments_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, (m, n, kk, a, w, s, z, c): Handles<Self::Args>) {
        let t = <T as LowpElement>::DTYPE;
        let plan = BlockPlan::new(self, t, kk.as_const().unwrap_or(1));
        let v = FragmentViews::new::<T>(k, &plan, (m, n, kk), (a, w, s, z, c));
        if self.mma_sync && self.block_m > 16 {
            // (past 16 columns `dot` splits the warps along them too, and the dequantized
            // registers would go through shared memory to reach that layout)
            return k.refuse_config("mma_sync takes 8 or 16 rows of A per block");
        }
        if self.warp_groups > 1 {
            if self.mma_sync {
                return k.refuse_config("mma_sync multiplies with one warp group only");
            }
            if self.scale_sums {
                return k.refuse_config("scale_sums takes one warp group");
            }
            return super::fragments_wide::body::<T>(k, self, &plan, &v, (m, n));
        }
        let (rounds, splits, per) = (plan.rounds(), plan.splits, plan.stage_steps);
        let (bm, stages) = (self.block_m, plan.stages);
        let steps = plan.steps;
        k.blocks([
            cdiv(n, TILE_N as i32),
            cdiv(m, bm),
            Val::constant(splits).into(),
        ]);
        k.warps(4);
        let tn = k.let_i32(k.block_idx().x);
        // this block's first step
        let split = k.let_i32(k.block_idx().z);
        let base = k.let_i32(split * steps);
        let n0 = k.let_i32(tn * TILE_N as i32);
        let m0 = k.let_i32(bm * k.block_idx().y);
        // each stage its own tiles, filled a stage at a time
        let tiles = StageTiles::new(k, &plan, &v, bm, (a, w), (m, kk));
        let bars = k.mbarrier().alloc_counts(&vec![1; stages as usize]);
        let acc = k.register_tensor::<f32>([TILE_N as i32, bm], 0.0);
        // with `scale_sums`, `acc` is the total the groups' sums are scaled into
        let sums = match self.scale_sums {
            false => None,
            true if self.mma_sync => {
                return k.refuse_config("scale_sums takes its products by WGMMA");
            }
            true => match GroupSums::new(k, &plan, bm) {
                Ok(sums) => Some(sums),
                Err(why) => return k.refuse_config(&why),
            },
        };
        // round `i`'s tiles of A, words of W and scales (and zero points) on their way into
        // stage `j`
        let fetch = |k: &mut Kernel, i: Val, j: i32| {
            k.single_thread(|k| {
                // the round's first step among W's
                let first = k.let_i32(base + i * per);
                let bar = bars[j as usize];
                k.mbarrier().arrive_and_expect_tx(bar, tiles.bytes(j));
                tiles.issue(k, &v, first, j, (m0, tn, n0), bar);
            });
        };
        for j in 0..stages {
            fetch(k, Val::constant(j), j);
        }
        let layouts = StepLayouts::new(t, &plan);
        // with one stage, each product completes before the next step's registers are written
        // (and `mma.sync`'s products complete as they are issued)
        let sync = self.mma_sync;
        let pending: i32 = if stages > 1 && !sync { 1 } else { 0 };
        // round `i` in stage `j` (filled for the `fill`-th time, from 0): its steps' words
        // read and dequantized (in f16 pairs) while the round before is multiplied, their
        // products issued, then the round before's stage refilled once its products are
        // complete; TMA has `stages - 1` rounds in flight meanwhile
        let step = |k: &mut Kernel, i: Val, j: i32, fill: Scalar| {
            k.mbarrier().wait(bars[j as usize], fill % 2);
            let scaled = sums.is_none();
            if sync {
                // each warp's rows of W times Aᵀ, A's tile in the registers `mma.sync` reads
                for s in 0..per {
                    let deq = layouts.dequantize::<T>(k, &tiles.step(j, s), scaled);
                    let at = k.load_shared(&tiles.a_tile(j, s)).transpose();
                    k.dot(&deq, &at, &acc, &acc);
                }
            } else {
                // each step's product issued as soon as its operand is dequantized, a commit
                // group of its own (the next step's conversion runs under it; its registers
                // are the step's own until the round after has waited for it)
                let position = GroupSums::position(&i, j);
                let target = sums.as_ref().map_or(&acc, |sums| sums.part(position));
                for s in 0..per {
                    let deq = layouts.dequantize::<T>(k, &tiles.step(j, s), scaled);
                    k.wgmma().fence();
                    k.wgmma().mma(&deq, &tiles.a_tile(j, s).transpose(), target);
                    k.wgmma().commit_group();
                }
                let starts_group = sums
                    .as_ref()
                    .is_some_and(|sums| sums.starts_group(position));
                // the round before complete: every group but this round's
                let wait = if starts_group { 0 } else { pending * per };
                k.wgmma().wait_group(wait as u32);
                if let Some(sums) = &sums {
                    sums.after_round(k, position, &tiles.first_scales(j), &acc);
                }
            }
            // the round `pending` before is complete: its stage takes the round `stages`
            // after it, once every warp has read its words (they have, their products being
            // complete; the barrier says so to the interpreter's race check)
            let refill = k.let_i32(i + (stages - pending));
            k.if_(i.ge(pending) & refill.lt(rounds), |k| {
                k.sync();
                fetch(k, refill, (j + stages - pending) % stages)
            });
        };
        plan.each_step(k, |k, i, j, fill| step(k, i, j, fill));
        if !sync {
            k.wgmma().wait_group(0);
        }
        if let Some(sums) = &sums {
            sums.finish(k, rounds - 1, (&v.scales, n0), &acc);
        }
        if splits == 1 {
            let out = k.compute(acc.cast::<f16>());
            k.store_global(&v.c, &out.transpose(), (m0, n0));
            return;
        }
        // the tile's blocks in turn (a block waits only for one dispatched before it): each
        // adds the sum so far and passes it on; the last stores C and releases the turn to 0
        let tiles = v.tiles_n.clone() * cdiv(m, bm);
        let turns = k.global_tensor::<i32>([tiles.clone()], true);
        let partial = k.global_tensor::<f32>(
            [tiles * TILE_N as i32, Scalar::from(Val::constant(bm))],
            false,
        );
        let tile = k.let_i32(k.block_idx().y * cdiv(n, TILE_N as i32) + tn);
        let at = k.let_i32(tile * TILE_N as i32);
        k.lock_semaphore(&turns, [tile], split);
        k.if_(split.ge(1), |k| {
            let before = k.load_global(&partial, (at, Val::constant(0)), [TILE_N as i32, bm]);
            k.assign_tile(&acc, acc + before);
        });
        k.if_else(
            split.eq_(splits - 1),
            |k| {
                let out = k.compute(acc.cast::<f16>());
                k.store_global(&v.c, &out.transpose(), (m0, n0));
                k.release_semaphore(&turns, [tile], 0);
            },
            |k| {
                k.store_global(&partial, &acc, (at, Val::constant(0)));
                k.release_semaphore(&turns, [tile], split + 1);
            },
        );
    }
}

/// A block's compile-time shape of work.
pub(super) struct BlockPlan {
    /// Rows of `ROW_WORDS` words a tile's step of W takes (a TMA box's rows).
    pub rows: i32,
    /// K steps of W's rows.
    pub tiles_k: i32,
    /// Groups of scales along K.
    pub groups: i32,
    /// Blocks sharing a tile's steps (see [`QuantMatmulFragments::splits`]).
    pub splits: i32,
    /// Each block's steps.
    pub steps: i32,
    /// Stages of the ring (no more than the rounds: every copy issued is waited for).
    pub stages: i32,
    /// Elements of a row of W per scale (0: the whole row).
    pub group: i32,
    /// K steps per stage (see [`QuantMatmulFragments::stage_steps`]): a block's steps come
    /// in rounds of this many.
    pub stage_steps: i32,
}

impl BlockPlan {
    pub(super) fn new<T>(
        cfg: &QuantMatmulFragments<T>,
        t: tilus::ir::DType,
        width: i64,
    ) -> BlockPlan {
        let run = Prepacked::words_per_thread(t) as i32;
        let width = width.max(1);
        let tiles_k = ((width + TILE_K as i64 - 1) / TILE_K as i64) as i32;
        // the blocks of a tile share its steps evenly: the largest count up to `splits` that
        // divides them (none past 128 rows of A per block: the partial sum read back beside
        // the accumulator would not fit the registers; none with two warp groups)
        let most = if cfg.block_m > 128 || cfg.warp_groups > 1 {
            1
        } else {
            cfg.splits
        };
        let splits = (1..=most.clamp(1, tiles_k))
            .rev()
            .find(|d| tiles_k % d == 0)
            .unwrap_or(1);
        let steps = tiles_k / splits;
        // a power of two up to 4 that divides the block's steps and whose stage lies in one
        // group or holds whole groups (one warp group only)
        let rows = THREADS as i32 * run / ROW_WORDS;
        let stage_steps = if cfg.warp_groups == 1 {
            let fits = |per: i32| {
                let span = per * TILE_K as i32;
                steps % per == 0
                    && (cfg.group == 0 || cfg.group % span == 0 || span % cfg.group == 0)
            };
            // (at most 4: a round's products wait on as commit groups, which a wait counts
            // to 7 at most)
            [4, 2, 1]
                .into_iter()
                .find(|&per| per <= cfg.stage_steps && fits(per))
                .unwrap_or(1)
        } else {
            1
        };
        let groups = if cfg.group > 0 {
            (width + cfg.group as i64 - 1) / cfg.group as i64
        } else {
            1
        } as i32;
        BlockPlan {
            rows,
            tiles_k,
            groups,
            splits,
            steps,
            stages: cfg.stages.clamp(1, (steps / stage_steps).max(1)),
            group: cfg.group,
            stage_steps,
        }
    }

    /// The rounds of a block: its steps, `stage_steps` at a time.
    pub fn rounds(&self) -> i32 {
        self.steps / self.stage_steps
    }

    /// Groups of scales a stage holds: its steps' groups where a stage holds whole groups,
    /// else one (per channel, or a group spanning the stage).
    pub fn groups_per_stage(&self) -> i32 {
        let span = self.stage_steps * TILE_K as i32;
        if self.group > 0 && self.group < span {
            span / self.group
        } else {
            1
        }
    }

    /// Runs `step(k, i, j, fill)` for each round `i` of a block (each step with one step per
    /// stage), in stage `j` filled for the `fill`-th time: whole passes over the stages in a
    /// loop, the rounds left over after it (a compile-time count). No round is conditional
    /// and each stage's index is a constant, so that the verifier sees each product complete
    /// before its registers and stage are written again.
    ///
    /// Over an odd count of stages the loop's body takes two passes: with one, ptxas
    /// serializes every product of the kernel (C7513, NVRTC 13.0), an odd count of commit
    /// groups in the body.
    pub fn each_step(&self, k: &mut Kernel, mut step: impl FnMut(&mut Kernel, Val, i32, Scalar)) {
        let (rounds, stages) = (self.rounds(), self.stages);
        let span = if stages % 2 == 1 { 2 * stages } else { stages };
        let looped = rounds / span * span;
        k.for_range(0, looped, span, |k, i0| {
            for r in 0..span {
                let i = k.let_i32(i0 + r);
                step(k, i, r % stages, Scalar::from(i0) / stages + r / stages);
            }
        });
        for r in looped..rounds {
            let i = Val::constant(r);
            step(k, i, r % stages, Scalar::from(Val::constant(r / stages)));
        }
    }
}

/// The kernel's pointer arguments: A, W's words, scales, zero points, C.
type Pointers = (
    PtrVal<f16>,
    PtrVal<u32>,
    PtrVal<f16>,
    PtrVal<f16>,
    PtrVal<f16>,
);

/// The kernel's views of its arguments (expressions of them: the host checks the buffers
/// against them).
pub(super) struct FragmentViews {
    /// A `[m, k]`.
    pub a: GlobalTensor<f16>,
    /// W's words: per K step, each tile's `rows × ROW_WORDS` words in turn.
    pub w: GlobalTensor<u32>,
    /// Scales as prepacked, `[groups, tiles_n · 64]`.
    pub scales: GlobalTensor<f16>,
    /// Zero points as the scales (unsigned types only).
    pub zeros: Option<GlobalTensor<f16>>,
    /// C `[m, n]`.
    pub c: GlobalTensor<f16>,
    /// Tiles of 64 rows of W.
    pub tiles_n: Scalar,
}

impl FragmentViews {
    fn new<T: LowpElement>(
        k: &mut Kernel,
        plan: &BlockPlan,
        (m, n, kk): (Val, Val, Val),
        (a, w, s, z, c): Pointers,
    ) -> FragmentViews {
        let tiles_n = cdiv(n, TILE_N as i32);
        let tile_rows = Scalar::from(Val::constant(plan.tiles_k * plan.rows));
        let width_n = tiles_n.clone() * TILE_N as i32;
        let groups = Scalar::from(Val::constant(plan.groups));
        let unsigned = matches!(T::DTYPE, tilus::ir::DType::UInt(_));
        FragmentViews {
            a: k.global_view::<f16>(a, [m, kk]),
            w: k.global_view::<u32>(
                w,
                [tiles_n.clone() * tile_rows, Val::constant(ROW_WORDS).into()],
            ),
            scales: k.global_view::<f16>(s, [groups.clone(), width_n.clone()]),
            zeros: unsigned.then(|| k.global_view::<f16>(z, [groups, width_n])),
            c: k.global_view::<f16>(c, [m, n]),
            tiles_n,
        }
    }
}

/// One tile's part of a stage: its words of W, its scales and (unsigned types) zero points.
pub(super) type TileStage = (
    SharedTensor<u32>,
    SharedTensor<f16>,
    Option<SharedTensor<f16>>,
);

/// The copies of one tile of W's step into a [`TileStage`] (two warp groups, one step a
/// stage; one warp group's stages are [`super::stage_tiles::StageTiles`]).
pub(super) struct StepCopies {
    /// The tile's first row of words (`tile · rows`: its first step's).
    first_row: Scalar,
    /// Rows of words from one of the tile's steps to the next (`tiles_n · rows`: the
    /// prepack puts a step's words of every tile together).
    stride: Scalar,
    /// The tile's first row of W (its scales' column).
    n0: Scalar,
}

impl StepCopies {
    /// The copies of tile `tile` (of 64 rows of W).
    pub fn of_tile(plan: &BlockPlan, v: &FragmentViews, tile: Scalar) -> StepCopies {
        StepCopies {
            first_row: tile.clone() * plan.rows,
            stride: v.tiles_n.clone() * plan.rows,
            n0: tile * TILE_N as i32,
        }
    }

    /// The bytes the copies deliver.
    pub fn bytes((words, scales, zeros): &TileStage) -> i32 {
        words.nbytes() + scales.nbytes() + zeros.as_ref().map_or(0, |z| z.nbytes())
    }

    /// Issues step `i`'s copies (from one thread) on `bar`.
    pub fn issue(
        &self,
        k: &mut Kernel,
        plan: &BlockPlan,
        v: &FragmentViews,
        i: Val,
        (words, scales, zeros): &TileStage,
        bar: Barrier,
    ) {
        let row = k.let_i32(self.first_row.clone() + i * self.stride.clone());
        k.tma()
            .global_to_shared(&v.w, words, (row, Val::constant(0)), bar);
        let g = if plan.group > 0 {
            k.let_i32(i * TILE_K as i32 / plan.group)
        } else {
            k.let_i32(0)
        };
        k.tma()
            .global_to_shared(&v.scales, scales, (g, self.n0.clone()), bar);
        if let (Some(gz), Some(zeros)) = (&v.zeros, zeros) {
            k.tma()
                .global_to_shared(gz, zeros, (g, self.n0.clone()), bar);
        }
    }
}

/// How a thread's words (of one type, or of one plane) become its part of the `[64, 64]`
/// register operand.
pub(super) struct RunLayouts {
    /// A thread's run of words in the rows that hold them.
    runs: RegisterLayout,
    /// The same registers as codes, in those rows.
    plain: RegisterLayout,
    /// The same registers as the fragment (in the prepack's order of codes: the f16 pairs'
    /// halves in one word).
    fragment: RegisterLayout,
    /// The rows of `ROW_WORDS` words the runs take.
    rows: i32,
}

impl RunLayouts {
    /// Runs of `run` words a thread over `rows` rows of `ROW_WORDS`, codes of type `t`.
    fn new(t: tilus::ir::DType, rows: i64, run: i64) -> RunLayouts {
        let threads = RegisterLayout::spatial(&[rows, ROW_WORDS as i64 / run]);
        RunLayouts {
            runs: threads.compose(&RegisterLayout::local(&[1, run])),
            plain: threads.compose(&RegisterLayout::local(&[1, CODES as i64])),
            fragment: code_layout(t),
            rows: rows as i32,
        }
    }

    /// `words` read, unpacked as `T` and relabelled as the fragment.
    fn codes<T: Element + LowpElement>(
        &self,
        k: &mut Kernel,
        words: &SharedTensor<u32>,
    ) -> RegisterTensor<T> {
        let words = k.load_shared(words);
        k.annotate_layout(&words, self.runs.clone());
        let codes = k.unpack::<T>(&words);
        k.relabel(&codes, self.plain.clone(), self.fragment.clone())
    }
}

/// How a thread's words become its part of the `[64, 64]` register operand: one run of
/// codes, or (3-bit integers) the low plane's run and the top plane's word ([`planes`]).
pub(super) struct StepLayouts {
    /// The codes, or the low plane (its rows first).
    main: RunLayouts,
    /// The top plane, for types in two planes.
    top: Option<RunLayouts>,
}

impl StepLayouts {
    pub fn new(t: tilus::ir::DType, plan: &BlockPlan) -> StepLayouts {
        match planes(t) {
            Some((low, top)) => {
                let low_rows = (THREADS * LOW_PLANE_WORDS) as i64 / ROW_WORDS as i64;
                StepLayouts {
                    main: RunLayouts::new(low, low_rows, LOW_PLANE_WORDS as i64),
                    top: Some(RunLayouts::new(top, plan.rows as i64 - low_rows, 1)),
                }
            }
            None => StepLayouts {
                main: RunLayouts::new(t, plan.rows as i64, Prepacked::words_per_thread(t) as i64),
                top: None,
            },
        }
    }

    /// A tile's step dequantized: its words read and unpacked, relabelled as the fragment and
    /// scaled in f16 pairs (`q · s` rounded to f16 as every path; `(q - z) · s` with zero
    /// points, the difference exact); without `scaled`, the exact values `q` (or `q - z`)
    /// alone, for sums scaled by group.
    pub fn dequantize<T: Element + LowpElement>(
        &self,
        k: &mut Kernel,
        (words, scales, zeros): &TileStage,
        scaled: bool,
    ) -> RegisterTensor<f16> {
        let values = match &self.top {
            None => self.main.codes::<T>(k, words).cast::<f16>(),
            Some(top) => {
                let low = &self.main;
                // the code's value from its planes, each an exact f16 (the low two bits, the
                // top bit times 4: its weight, negative for signed codes), their sum exact
                let lo = low.codes::<UInt<2>>(k, &words.rows(0, low.rows));
                let hi = top.codes::<UInt<1>>(k, &words.rows(low.rows, top.rows));
                let hi4 = (hi.cast::<f16>() * 4.0).cast::<f16>();
                if matches!(<T as LowpElement>::DTYPE, tilus::ir::DType::Int(_)) {
                    (lo.cast::<f16>() - hi4).cast::<f16>()
                } else {
                    (lo.cast::<f16>() + hi4).cast::<f16>()
                }
            }
        };
        let zero = zeros.as_ref().map(|z| k.load_shared(z).transpose());
        if !scaled {
            // (one code in a word's field: a product by one, the form the f16 pair
            // conversions take and fold into their constants, though not past a zero
            // point's subtraction; the planes' sum is in pairs)
            return match (zero, self.top.is_none()) {
                (Some(zero), true) => k.compute((values - zero).cast::<f16>() * 1.0),
                (None, true) => k.compute(values * 1.0),
                (Some(zero), false) => k.compute((values - zero).cast::<f16>()),
                (None, false) => k.compute(values),
            };
        }
        // the step's scales as a column, `[64, 1]`
        let scale = k.load_shared(scales).transpose();
        match zero {
            // (whole zero points of the codes' range, which `prepack` checks: the difference
            // is exact in f16, and the pair form's rounding of it changes nothing)
            Some(zero) => k.compute((values - zero).cast::<f16>() * scale),
            None => k.compute(values * scale),
        }
    }
}

// by hand: the type marker is named in the kernel's name, not among its hyperparameters
impl<T> std::fmt::Debug for QuantMatmulFragments<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatmulFragments")
            .field("block_m", &self.block_m)
            .field("stages", &self.stages)
            .field("group", &self.group)
            .field("splits", &self.splits)
            .field("warp_groups", &self.warp_groups)
            .field("stage_steps", &self.stage_steps)
            .field("mma_sync", &self.mma_sync)
            .field("scale_sums", &self.scale_sums)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    /// int4 at few rows of A gets the deep ring it was measured to want; int8 and 64 rows of A
    /// the four stages; every count within 4 to 8.
    /// The hyperparameters print (the tuner's and the bench's logs name configurations so).
    #[test]
    fn configurations_print_their_hyperparameters() {
        let c = super::QuantMatmulFragments::<tilus::lowp::I4>::new(128, 8).with_splits(2);
        let s = format!("{c:?}");
        for part in ["block_m: 8", "stages: 4", "group: 128", "splits: 2"] {
            assert!(s.contains(part), "{s}");
        }
    }

    /// Small grids split K until 384 blocks or more run, never below 16 steps a block.
    #[test]
    fn splits_fill_the_machine_without_short_blocks() {
        assert_eq!(super::fragment_splits(448, 128), 1);
        assert_eq!(super::fragment_splits(192, 64), 2);
        assert_eq!(super::fragment_splits(128, 128), 4);
        assert_eq!(super::fragment_splits(8, 1024), 8);
        assert_eq!(super::fragment_splits(64, 20), 1);
        // 8 splits would leave 12 steps a block
        assert_eq!(super::fragment_splits(32, 96), 4);
        assert_eq!(super::fragment_splits(1000, 128), 1);
    }

    /// Eight or more one-step stages become half as many of two steps (the same steps in
    /// flight); fewer stay one step each.
    #[test]
    fn deep_rings_hold_two_steps_a_stage() {
        assert_eq!(super::fragment_stage_steps(8), (4, 2));
        assert_eq!(super::fragment_stage_steps(10), (5, 2));
        assert_eq!(super::fragment_stage_steps(7), (7, 1));
        assert_eq!(super::fragment_stage_steps(4), (4, 1));
    }

    #[test]
    fn stages_follow_the_bytes_a_step_carries() {
        assert_eq!(super::fragment_stages(4, 8), 8);
        assert_eq!(super::fragment_stages(8, 8), 4);
        assert_eq!(super::fragment_stages(4, 64), 4);
        for bits in [1, 2, 4, 8] {
            for bm in [8, 16, 32, 64, 128] {
                assert!((4..=8).contains(&super::fragment_stages(bits, bm)));
            }
        }
    }
}
