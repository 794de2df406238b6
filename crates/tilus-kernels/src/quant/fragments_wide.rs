//! The fragment kernel with two warp groups multiplying ([`QuantMatmulFragments::warp_groups`]):
//! a block takes 128 rows of W (64 per warp group, each its own words and scales) against one
//! shared tile of A, so A's tiles cross L2 once per 128 rows of W instead of once per 64, and
//! each scheduler holds two warps whose dequantizations hide each other's latency under the
//! tensor cores' products. The warp groups give a stage back when the product reading it is
//! complete; one thread of the first refills it once both have (no producer warp: a ninth
//! warp would take a third warp's registers on one scheduler, 168 a thread, and the
//! [64, 256] accumulator spills there). For many rows of A, where one warp group's
//! dequantization, issued instruction after dependent instruction, takes about as long as
//! its product (docs/perf.md).

use super::fragments::{BlockPlan, FragmentViews, StepCopies, StepLayouts, TileStage};
use super::prepack::{TILE_K, TILE_N};
use super::QuantMatmulFragments;
use half::f16;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The body: `(m, n)` the runtime sizes; `v` the views, `plan` the block's steps.
pub(super) fn body<T>(
    k: &mut Kernel,
    cfg: &QuantMatmulFragments<T>,
    plan: &BlockPlan,
    v: &FragmentViews,
    (m, n): (Val, Val),
) where
    T: Element + LowpElement,
{
    let t = <T as LowpElement>::DTYPE;
    let (bm, stages, rows, groups) = (cfg.block_m, plan.stages, plan.rows, cfg.warp_groups);
    let block_n = TILE_N as i32 * groups;
    k.blocks([cdiv(n, block_n), cdiv(m, bm)]);
    k.warps(4 * groups as u32);
    let bx = k.let_i32(k.block_idx().x);
    let m0 = k.let_i32(bm * k.block_idx().y);
    let sa = k.shared_tensor::<f16>([stages, bm, TILE_K as i32]);
    // stage `j`'s part for warp group `g` at `j · groups + g`
    let parts = stages * groups;
    let sw = k.shared_tensor::<u32>([parts, rows, super::fragments::ROW_WORDS]);
    let ss = k.shared_tensor::<f16>([parts, 1, TILE_N as i32]);
    let sz = v
        .zeros
        .is_some()
        .then(|| k.shared_tensor::<f16>([parts, 1, TILE_N as i32]));
    let part = |at: Val| -> TileStage { (sw.at(at), ss.at(at), sz.as_ref().map(|z| z.at(at))) };
    // every thread of the warp groups gives a stage back
    let pipe = Pipeline::new(k, stages as u32, 128 * groups as u32);
    let bytes =
        sa.at(Val::constant(0)).nbytes() + groups * StepCopies::bytes(&part(Val::constant(0)));
    // the tile of W warp group `g` multiplies
    let tile_of = |k: &mut Kernel, g: i32| k.let_i32(bx * groups + g);

    // step `i`'s tile of A and both tiles' words and scales, once the stage is free (from
    // one thread of the first warp group)
    let fetch = |k: &mut Kernel, i: Val| {
        k.single_thread(|k| {
            let slot = pipe.producer_acquire(k, i, bytes);
            let k0 = k.let_i32(i * TILE_K as i32);
            k.tma()
                .global_to_shared(&v.a, &sa.at(slot.stage()), (m0, k0), slot.barrier());
            for g in 0..groups {
                let tile = tile_of(k, g);
                let copies = StepCopies::of_tile(plan, v, tile.into());
                let at = k.let_i32(slot.stage() * groups + g);
                copies.issue(k, plan, v, i, &part(at), slot.barrier());
            }
        });
    };

    // the warp groups: each its tile of W, one product in flight
    let layouts = StepLayouts::new(t, plan);
    // with one stage, each product completes before the next step's registers are written
    let pending: i32 = if stages > 1 { 1 } else { 0 };
    // the first warp group refills the stage of the step `lag` before with the step `stages`
    // after that one: a step later than its own product's completion would allow, so that
    // the other warp group has given the stage back by then (it runs up to a step behind)
    // and the wait for it seldom holds the first warp group's warps up
    let lag = if stages > 2 { pending + 1 } else { pending };
    for g in 0..groups {
        k.thread_group(128 * g as u32, 128, |k| {
            if g == 0 {
                for j in 0..stages {
                    fetch(k, Val::constant(j));
                }
            }
            let acc = k.register_tensor::<f32>([TILE_N as i32, bm], 0.0);
            plan.each_step(k, |k, i, j, _| {
                let slot = pipe.consumer_acquire(k, i);
                // (the stage is `j`, a constant: the steps come in whole passes)
                drop(slot);
                let deq = layouts.dequantize::<T>(k, &part(Val::constant(j * groups + g)), true);
                k.wgmma().fence();
                k.wgmma()
                    .mma(&deq, &sa.at(Val::constant(j)).transpose(), &acc);
                k.wgmma().commit_group();
                k.wgmma().wait_group(pending as u32);
                // the product `pending` steps before is complete: its stage is free
                pipe.consumer_release_step(k, i - pending);
                if g == 0 {
                    let refill = k.let_i32(i - lag + stages);
                    k.if_(i.ge(lag) & refill.lt(plan.steps), |k| fetch(k, refill));
                }
            });
            k.wgmma().wait_group(0);
            let out = k.compute(acc.cast::<f16>());
            let tile = tile_of(k, g);
            let n0 = k.let_i32(tile * TILE_N as i32);
            k.store_global(&v.c, &out.transpose(), (m0, n0));
        });
    }
}
