//! Staged shared tiles (`sa.at(s)`) in a pipeline that several binaries run: the interpreter
//! against a CPU reference, NVRTC, the GPU.

use tilus::prelude::*;

use super::mark;

/// This file, as diagnostics name it.
pub const FILE: &str = file!();

/// Sums `tiles` `[rows, cols]` f32 tiles stacked in a `[tiles * rows, cols]` input through a
/// `STAGES`-stage TMA pipeline: tile `t` lands in stage `t % STAGES` of one staged tile, is
/// added to an accumulator kept in shared memory, and its stage is refilled with tile
/// `t + STAGES` once every thread has read it. One block of 4 warps. Marked calls: `wait`,
/// `refill`, `read`.
#[derive(Clone, Debug, Hash)]
pub struct StagedSum {
    pub rows: i32,
    pub cols: i32,
    /// Bugs the interpreter tests plant: refill the stage `t + 1 % STAGES` (still unread).
    pub refill_next_stage: bool,
    /// Skip the wait for the stage's copy.
    pub no_wait: bool,
}

impl StagedSum {
    /// Stages of the pipeline.
    pub const STAGES: i32 = 3;

    /// A pipeline of `[rows, cols]` tiles without planted bugs.
    pub fn new(rows: i32, cols: i32) -> StagedSum {
        StagedSum {
            rows,
            cols,
            refill_next_stage: false,
            no_wait: false,
        }
    }

    /// Tile shapes that exercise each swizzle, with stages that fill their alignment and
    /// stages the layout pads: (rows, cols).
    pub const SHAPES: [(i32, i32); 4] = [(32, 32), (4, 32), (8, 16), (16, 8)];

    /// The CPU reference: the tiles' sum, element for element, added in tile order (as the
    /// kernel adds them, so f32 rounding agrees bit for bit).
    pub fn expected(input: &[f32], tiles: usize, rows: usize, cols: usize) -> Vec<f32> {
        let mut acc = vec![0f32; rows * cols];
        for t in 0..tiles {
            for (i, a) in acc.iter_mut().enumerate() {
                *a += input[t * rows * cols + i];
            }
        }
        acc
    }
}

impl Script for StagedSum {
    type Args = (i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["tiles", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (tiles, src, dst): Handles<Self::Args>) {
        const S: i32 = StagedSum::STAGES;
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view::<f32>(src, (tiles * rows, cols));
        let sa = k.shared_tensor::<f32>([S, rows, cols]);
        let acc = k.shared_tensor::<f32>([rows, cols]);
        let zero = k.register_tensor::<f32>([rows, cols], 0.0);
        k.store_shared(&acc, &zero);
        let full = k.mbarrier().alloc([1, 1, 1]);
        // the first STAGES tiles (or fewer)
        k.single_thread(|k| {
            for s in 0..S {
                k.if_(tiles.gt(s), |k| {
                    k.mbarrier()
                        .arrive_and_expect_tx(full[s as usize], sa.at(s).nbytes());
                    k.tma()
                        .global_to_shared(&g, &sa.at(s), [s * rows, 0], full[s as usize]);
                });
            }
        });
        k.for_range(0, tiles, 1, |k, t| {
            let s = k.name_next("stage").let_i32(t % S);
            // the j-th use of a stage waits for the phase of parity j % 2
            let phase = k.name_next("phase").let_i32(t / S % 2);
            if !self.no_wait {
                #[rustfmt::skip]
                mark("wait", line!(), k.mbarrier().wait(full.at(s), phase));
            }
            #[rustfmt::skip]
            let x = mark("read", line!(), k.load_shared(&sa.at(s)));
            let a = k.load_shared(&acc);
            let y = k.compute(a + x);
            k.store_shared(&acc, &y);
            // every thread has read the stage before the copy engine refills it
            k.sync();
            let refill = if self.refill_next_stage {
                k.let_i32((t + 1) % S)
            } else {
                s
            };
            k.single_thread(|k| {
                k.if_((t + S).lt(tiles), |k| {
                    k.mbarrier()
                        .arrive_and_expect_tx(full.at(refill), sa.at(s).nbytes());
                    #[rustfmt::skip]
                    mark("refill", line!(), k.tma().global_to_shared(&g, &sa.at(refill), ((t + S) * rows, 0), full.at(refill)));
                });
            });
        });
        let sum = k.load_shared(&acc);
        let out = k.global_view::<f32>(dst, [rows, cols]);
        k.store_global(&out, &sum, [0, 0]);
    }
}

/// `c[64, 64] = a[64, K] · b[64, K]ᵀ` (f16 in, f32 out) with wgmma over `k_tiles` K steps of
/// 64, double-buffered: the wgmma of step `t` reads stage `t % 2` of the staged operand tiles
/// while the copy engine fills the other stage with step `t + 1` (`wait_group(1)` keeps one
/// product in flight). One block of one warp group. Marked calls: `mma`, `refill`.
#[derive(Clone, Debug, Hash)]
pub struct StagedMatmul {
    pub k_tiles: i32,
    /// Planted bug: refill the stage the wgmma in flight reads.
    pub refill_busy_stage: bool,
}

impl StagedMatmul {
    /// Rows of A and C; columns of C (rows of B).
    pub const MN: i32 = 64;
    /// Depth of one K step (128-byte rows: the 128B swizzle).
    pub const BK: i32 = 64;

    /// Random `[64, K]` operands of multiples of 1/16 in `[-1/4, 1/4]`: every partial sum of
    /// the product is exact in f32, in any order.
    pub fn inputs(k_tiles: i32, seed: u64) -> (Vec<half::f16>, Vec<half::f16>) {
        let len = (Self::MN * Self::BK * k_tiles) as usize;
        let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            half::f16::from_f32(((x >> 33) % 9) as f32 / 16.0 - 0.25)
        };
        let a = (0..len).map(|_| next()).collect();
        let b = (0..len).map(|_| next()).collect();
        (a, b)
    }

    /// The CPU reference `a · bᵀ`.
    pub fn expected(a: &[half::f16], b: &[half::f16], k_tiles: i32) -> Vec<f32> {
        let (mn, k) = (Self::MN as usize, (Self::BK * k_tiles) as usize);
        let mut c = vec![0f32; mn * mn];
        for i in 0..mn {
            for j in 0..mn {
                c[i * mn + j] = (0..k)
                    .map(|l| a[i * k + l].to_f32() * b[j * k + l].to_f32())
                    .sum();
            }
        }
        c
    }
}

impl Script for StagedMatmul {
    type Args = (Ptr<half::f16>, Ptr<half::f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        let (mn, bk, tiles) = (Self::MN, Self::BK, self.k_tiles);
        k.blocks([1]);
        k.warps(4);
        let ga = k.global_view::<half::f16>(a, [mn, bk * tiles]);
        let gb = k.global_view::<half::f16>(b, [mn, bk * tiles]);
        let sa = k.shared_tensor::<half::f16>([2, mn, bk]);
        let sb = k.shared_tensor::<half::f16>([2, mn, bk]);
        let acc = k.register_tensor::<f32>([mn, mn], 0.0);
        let full = k.mbarrier().alloc([1, 1]);
        let ops = Operands {
            ga,
            gb,
            sa,
            sb,
            full: &full,
        };
        k.single_thread(|k| ops.load(k, Val::constant(0), Scalar::from(0)));
        k.for_range(0, tiles, 1, |k, t| {
            let s = k.name_next("stage").let_i32(t % 2);
            let phase = k.name_next("phase").let_i32(t / 2 % 2);
            k.mbarrier().wait(full.at(s), phase);
            k.wgmma().fence();
            #[rustfmt::skip]
            mark("mma", line!(), k.wgmma().mma(&sa.at(s), &sb.at(s).transpose(), &acc));
            k.wgmma().commit_group();
            // the product of step t - 1 is done: its stage may be refilled
            k.wgmma().wait_group(1);
            k.sync();
            let next = if self.refill_busy_stage {
                s
            } else {
                k.name_next("next").let_i32((t + 1) % 2)
            };
            k.single_thread(|k| {
                k.if_((t + 1).lt(tiles), |k| {
                    #[rustfmt::skip]
                    mark("refill", line!(), ops.load(k, next, t + 1));
                });
            });
        });
        k.wgmma().wait_group(0);
        let gc = k.global_view::<f32>(c, [mn, mn]);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

/// The operands of [`StagedMatmul`] and the barriers of their stages.
struct Operands<'a> {
    ga: GlobalTensor<half::f16>,
    gb: GlobalTensor<half::f16>,
    sa: SharedTensor<half::f16>,
    sb: SharedTensor<half::f16>,
    full: &'a Barriers,
}

impl Operands<'_> {
    /// Copies K step `t` of both operands into `stage` (from one thread); diagnostics name the
    /// caller's line.
    #[track_caller]
    fn load(&self, k: &mut Kernel, stage: Val, t: Scalar) {
        let bar = self.full.at(stage);
        let (sa, sb) = (self.sa.at(stage), self.sb.at(stage));
        k.mbarrier()
            .arrive_and_expect_tx(bar, sa.nbytes() + sb.nbytes());
        let off = t * StagedMatmul::BK;
        k.tma()
            .global_to_shared(&self.ga, &sa, (0, off.clone()), bar);
        k.tma().global_to_shared(&self.gb, &sb, (0, off), bar);
    }
}

/// A `Pipeline` of two `[16, 64]` f16 stages streaming `rows` rows from `src` to `dst`: a
/// producer warp (warp 4) fills the stages, warp group 0 copies each one out and releases it.
/// `whole_warp`: the producer's copies are issued by the whole warp (one elected lane);
/// otherwise by one thread of it.
#[derive(Clone, Debug, Hash)]
pub struct PipelineStream {
    pub whole_warp: bool,
}

impl Script for PipelineStream {
    type Args = (i32, Ptr<half::f16>, PtrMut<half::f16>);
    fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
        use half::f16;
        k.blocks([1]);
        k.warps(5);
        let g = k.global_view::<f16>(src, [rows, Val::constant(64)]);
        let o = k.global_view::<f16>(dst, [rows, Val::constant(64)]);
        let s = k.shared_tensor::<f16>([2, 16, 64]);
        let pipe = Pipeline::new(k, 2, 128);
        let steps = k.let_i32(cdiv(rows, 16));
        let produce = |k: &mut Kernel| {
            k.for_range(0, steps, 1, |k, i| {
                let slot = pipe.producer_acquire(k, i, s.at(Val::constant(0)).nbytes());
                let tile = s.at(slot.stage());
                k.tma()
                    .global_to_shared(&g, &tile, [i * 16, Scalar::from(0)], slot.barrier());
            });
        };
        k.single_warp(4, |k| {
            if self.whole_warp {
                produce(k)
            } else {
                k.single_thread(produce)
            }
        });
        k.warp_group(0, |k| {
            k.for_range(0, steps, 1, |k, i| {
                let slot = pipe.consumer_acquire(k, i);
                let r = k.load_shared(&s.at(slot.stage()));
                k.store_global(&o, &r, [i * 16, Scalar::from(0)]);
                pipe.consumer_release(k, slot);
            });
        });
    }
}
