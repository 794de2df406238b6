//! The fragment kernel's sums by group ([`super::QuantMatmulFragments::scale_sums`]): the
//! products of a group of K's steps accumulate unscaled in one of two f32 accumulators, the
//! groups in turn, and once a group's products are complete (the next group's first round
//! waits for them, as every round waits for the one before) its sums are scaled by the
//! group's scales into the block's total. A step then multiplies codes by nothing: it turns
//! them into exact f16 values and issues the products.
//!
//! Which accumulator a round feeds is a compile-time fact: a group is whole rounds, and
//! where the stages are passed over more than once, a pass (each stage's index a constant)
//! is whole pairs of groups, so round `j` of a pass feeds the same accumulator in every
//! pass; the rounds after the passes have constant indices of their own.

use super::fragments::BlockPlan;
use super::prepack::{TILE_K, TILE_N};
use half::f16;
use tilus::prelude::*;

/// The two accumulators, the scales of the group in flight, and the shape of the groups.
pub(super) struct GroupSums {
    /// The groups' sums in turn (one accumulator per channel: `group` 0).
    parts: [RegisterTensor<f32>; 2],
    /// The scales of the group the last group's first round loaded, `[64, 1]`.
    scale: RegisterTensor<f32>,
    /// Rounds of a group (0: one group, the whole row).
    rounds_per_group: i32,
}

impl GroupSums {
    /// The rounds of a group for the sums by group of `plan` with `block_m` rows of A (0: one
    /// group, the whole row), or why the plan cannot take them: a host can ask before it
    /// picks the kernel (the plan is the kernel's compile-time shape of work, K's included).
    pub fn rounds_per_group(plan: &BlockPlan, block_m: i32) -> Result<i32, String> {
        // three accumulators beside a round's operands: past these the registers spill
        let most_rows = if plan.stage_steps > 1 { 32 } else { 64 };
        if block_m > most_rows {
            return Err(format!(
                "scale_sums takes up to {most_rows} rows of A per block with {} steps a stage \
                 (three accumulators)",
                plan.stage_steps
            ));
        }
        let per_round = TILE_K as i32 * plan.stage_steps;
        let rounds_per_group = if plan.group == 0 {
            0
        } else if plan.group % per_round != 0 {
            return Err(format!(
                "scale_sums: a group of {} elements is not whole rounds of {per_round}",
                plan.group
            ));
        } else {
            plan.group / per_round
        };
        let passes = plan.rounds() / plan.stages;
        if rounds_per_group > 0
            && ((passes > 1 && plan.stages % (2 * rounds_per_group) != 0)
                || (plan.splits > 1 && plan.rounds() % rounds_per_group != 0))
        {
            return Err(format!(
                "scale_sums: {} stages are not whole pairs of groups of {rounds_per_group} \
                 rounds, or a block's {} rounds not whole groups",
                plan.stages,
                plan.rounds()
            ));
        }
        Ok(rounds_per_group)
    }

    /// The accumulators for `block_m` rows of A, or why the plan cannot take them
    /// ([`GroupSums::rounds_per_group`]).
    pub fn new(k: &mut Kernel, plan: &BlockPlan, block_m: i32) -> Result<GroupSums, String> {
        let rounds_per_group = GroupSums::rounds_per_group(plan, block_m)?;
        let part = |k: &mut Kernel| k.register_tensor::<f32>([TILE_N as i32, block_m], 0.0);
        Ok(GroupSums {
            parts: [part(k), part(k)],
            scale: k.register_tensor::<f32>([TILE_N as i32, 1], 0.0),
            rounds_per_group,
        })
    }

    /// The position of a round in the block for [`GroupSums::part`]: the round `i` itself
    /// where it is a constant (the rounds after the passes), its stage `j` otherwise (which
    /// says as much, [`GroupSums::new`] has checked).
    pub fn position(i: &Val, j: i32) -> i32 {
        i.as_const().map_or(j, |i| i as i32)
    }

    /// The accumulator the round at position `j` feeds.
    pub fn part(&self, j: i32) -> &RegisterTensor<f32> {
        match self.rounds_per_group {
            0 => &self.parts[0],
            g => &self.parts[((j / g) % 2) as usize],
        }
    }

    /// Whether the round at position `j` is a group's first: the products issued before it
    /// must all be complete once its own are issued (`wait_group(0)`, not the ring's 1), so
    /// that no accumulator is read while a product is in flight: ptxas would serialize every
    /// WGMMA of the kernel otherwise (C7514).
    pub fn starts_group(&self, j: i32) -> bool {
        self.rounds_per_group > 0 && j % self.rounds_per_group == 0
    }

    /// After the products of the round at position `j` are issued and every product before
    /// them is complete: at
    /// a group's first round, the group before is scaled into `total` and its accumulator
    /// cleared, and this group's scales (`scales`, the round's stage, `[1, 64]`) kept.
    pub fn after_round(
        &self,
        k: &mut Kernel,
        j: i32,
        scales: &SharedTensor<f16>,
        total: &RegisterTensor<f32>,
    ) {
        let g = self.rounds_per_group;
        if g == 0 || j % g != 0 {
            return;
        }
        let before = &self.parts[((j / g + 1) % 2) as usize];
        // (the first group's "group before" is zeros scaled by zeros)
        k.assign_tile(total, total + before * self.scale);
        k.assign_tile(before, 0.0f32);
        let now = k.load_shared(scales).transpose();
        k.assign_tile(&self.scale, now.cast::<f32>());
    }

    /// Once every product is complete: the last group, scaled into `total`, round `last` of
    /// the block's having fed it; per channel, `scales` (the row's, `[1, 64]` in global
    /// memory at the tile's first column) scale the one accumulator.
    pub fn finish(
        &self,
        k: &mut Kernel,
        last: i32,
        scales: (&GlobalTensor<f16>, Val),
        total: &RegisterTensor<f32>,
    ) {
        if self.rounds_per_group == 0 {
            let (view, n0) = scales;
            let row = k.load_global(view, (Val::constant(0), n0), [1, TILE_N as i32]);
            let column = row.transpose();
            k.assign_tile(total, total + self.parts[0] * column.cast::<f32>());
            return;
        }
        let part = self.part(last);
        k.assign_tile(total, total + part * self.scale);
    }
}
