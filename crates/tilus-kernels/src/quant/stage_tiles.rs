//! The one-warp-group fragment kernel's stages, each its own tiles: A's `[per, block_m, 64]`,
//! W's words `[per, rows, 64]`, and `[groups, 1, 64]` scales (and zero points) for the
//! `per = stage_steps` K steps it holds. Each stage is filled by one TMA copy per operand where
//! the operand's steps lie at a constant stride in global memory (a three-dimensional box):
//! A's K steps of 64 where K is a multiple of 64, W's steps where a step's words are whole
//! swizzle patterns (1024 bytes); otherwise one copy a step. Scales come one copy per group.
//!
//! Why: at few rows of A a step is 2 to 4 KB of words, and the count of copies a step (A's
//! tile, the words, the scales: three) rather than their bytes looks like what sets the time
//! (int2 took as long as int4 with half the bytes, and the ring alone as long as the kernel;
//! docs/perf.md). Measured since: two steps a stage beat one at the same steps in flight (int4
//! 4%, int2 10% at 1 × 28672 × 8192), four lose it to their registers. A stage's index is a compile-time
//! constant wherever the kernel names one, so each stage is a tile of its own rather than a
//! slice of a ring.

use super::fragments::{BlockPlan, FragmentViews, TileStage, ROW_WORDS};
use super::prepack::{TILE_K, TILE_N};
use half::f16;
use tilus::prelude::*;

/// Every stage's tiles, and the views that fill them a stage at a time.
pub(super) struct StageTiles {
    /// A's tiles of each stage, `[per, block_m, 64]`.
    a: Vec<SharedTensor<f16>>,
    /// W's words of each stage, `[per, rows, 64]`.
    words: Vec<SharedTensor<u32>>,
    /// Scales of each stage, `[groups, 1, 64]`.
    scales: Vec<SharedTensor<f16>>,
    /// Zero points as the scales (unsigned types only).
    zeros: Option<Vec<SharedTensor<f16>>>,
    /// A as `[k / 64, m, 64]` (a stage's steps of A one box), where K is a multiple of 64.
    a_steps: Option<GlobalTensor<f16>>,
    /// W's words as `[tiles_k, tiles_n · rows, 64]` (a stage's steps of a tile one box),
    /// where a step's words are whole swizzle patterns.
    word_steps: Option<GlobalTensor<u32>>,
    /// K steps a stage.
    per: i32,
    /// Groups of scales a stage (1 where a group spans the stage or more).
    groups: i32,
    /// Elements of K a scale (0: the whole row).
    group: i32,
    /// Rows of words a step.
    rows: i32,
}

impl StageTiles {
    /// The tiles of `plan`'s stages for `block_m` rows of A, and the views over `a` and `w`
    /// their copies take.
    pub fn new(
        k: &mut Kernel,
        plan: &BlockPlan,
        v: &FragmentViews,
        block_m: i32,
        (a, w): (PtrVal<f16>, PtrVal<u32>),
        (m, kk): (Val, Val),
    ) -> StageTiles {
        let (per, rows, stages) = (plan.stage_steps, plan.rows, plan.stages);
        let groups = plan.groups_per_stage();
        let width = kk.as_const().unwrap_or(1);
        let a_steps = (per > 1 && width % TILE_K as i64 == 0).then(|| {
            let steps = Val::constant((width / TILE_K as i64) as i32);
            k.global_view_strided::<f16>(
                a,
                [steps, m, Val::constant(TILE_K as i32)],
                [Val::constant(TILE_K as i32), kk, Val::constant(1)],
            )
        });
        let step_bytes = rows * ROW_WORDS * 4;
        let word_steps = (per > 1 && step_bytes % 1024 == 0).then(|| {
            let tile_rows = v.tiles_n.clone() * rows;
            k.global_view_strided::<u32>(
                w,
                [
                    Scalar::from(Val::constant(plan.tiles_k)),
                    tile_rows.clone(),
                    Scalar::from(Val::constant(ROW_WORDS)),
                ],
                [
                    tile_rows * ROW_WORDS,
                    Scalar::from(Val::constant(ROW_WORDS)),
                    Scalar::from(Val::constant(1)),
                ],
            )
        });
        let each = |k: &mut Kernel, make: &dyn Fn(&mut Kernel) -> SharedTensor<f16>| {
            (0..stages).map(|_| make(k)).collect::<Vec<_>>()
        };
        let a_tiles = each(k, &|k| {
            k.shared_tensor::<f16>([per, block_m, TILE_K as i32])
        });
        let words = (0..stages)
            .map(|_| k.shared_tensor::<u32>([per, rows, ROW_WORDS]))
            .collect();
        let scales = each(k, &|k| k.shared_tensor::<f16>([groups, 1, TILE_N as i32]));
        let zeros = v
            .zeros
            .is_some()
            .then(|| each(k, &|k| k.shared_tensor::<f16>([groups, 1, TILE_N as i32])));
        StageTiles {
            a: a_tiles,
            words,
            scales,
            zeros,
            a_steps,
            word_steps,
            per,
            groups,
            group: plan.group,
            rows,
        }
    }

    /// The group of step `s` of a stage among the stage's scales.
    fn group_of(&self, s: i32) -> i32 {
        if self.groups > 1 {
            s * TILE_K as i32 / self.group
        } else {
            0
        }
    }

    /// Step `s` of stage `j`: its words, scales (and zero points).
    pub fn step(&self, j: i32, s: i32) -> TileStage {
        let g = Val::constant(self.group_of(s));
        (
            self.words[j as usize].at(Val::constant(s)),
            self.scales[j as usize].at(g),
            self.zeros.as_ref().map(|z| z[j as usize].at(g)),
        )
    }

    /// A's tile of step `s` of stage `j`.
    pub fn a_tile(&self, j: i32, s: i32) -> SharedTensor<f16> {
        self.a[j as usize].at(Val::constant(s))
    }

    /// The scales of stage `j`'s first group (a group's scales where a group is whole
    /// stages).
    pub fn first_scales(&self, j: i32) -> SharedTensor<f16> {
        self.scales[j as usize].at(Val::constant(0))
    }

    /// The bytes a stage's copies deliver.
    pub fn bytes(&self, j: i32) -> i32 {
        let j = j as usize;
        self.a[j].nbytes()
            + self.words[j].nbytes()
            + self.scales[j].nbytes()
            + self.zeros.as_ref().map_or(0, |z| z[j].nbytes())
    }

    /// Issues (from one thread, on `bar`) the copies of stage `j` for the block's K step
    /// `first` and the `per - 1` after it: rows `m0..` of A, tile `tile` of W (its words and
    /// scales at columns `n0..`).
    pub fn issue(
        &self,
        k: &mut Kernel,
        v: &FragmentViews,
        first: Val,
        j: i32,
        (m0, tile, n0): (Val, Val, Val),
        bar: Barrier,
    ) {
        let at = j as usize;
        match &self.a_steps {
            Some(view) => {
                k.tma()
                    .global_to_shared(view, &self.a[at], (first, m0, Val::constant(0)), bar)
            }
            None => {
                for s in 0..self.per {
                    let k0 = k.let_i32((first + s) * TILE_K as i32);
                    k.tma()
                        .global_to_shared(&v.a, &self.a_tile(j, s), (m0, k0), bar);
                }
            }
        }
        // the prepack puts a step's words of every tile together: a tile's steps lie
        // `tiles_n · rows` rows apart
        let stride = v.tiles_n.clone() * self.rows;
        match &self.word_steps {
            Some(view) => {
                let row = k.let_i32(tile * self.rows);
                k.tma()
                    .global_to_shared(view, &self.words[at], (first, row, Val::constant(0)), bar)
            }
            None => {
                for s in 0..self.per {
                    let row = k.let_i32((tile * self.rows) + (first + s) * stride.clone());
                    let dst = self.words[at].at(Val::constant(s));
                    k.tma()
                        .global_to_shared(&v.w, &dst, (row, Val::constant(0)), bar);
                }
            }
        }
        for g in 0..self.groups {
            let group = if self.group > 0 {
                k.let_i32((first * TILE_K as i32 + g * self.group) / self.group)
            } else {
                k.let_i32(0)
            };
            let dst = self.scales[at].at(Val::constant(g));
            k.tma().global_to_shared(&v.scales, &dst, (group, n0), bar);
            if let (Some(view), Some(zeros)) = (&v.zeros, &self.zeros) {
                let dst = zeros[at].at(Val::constant(g));
                k.tma().global_to_shared(view, &dst, (group, n0), bar);
            }
        }
    }
}
