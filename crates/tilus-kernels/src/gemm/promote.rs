//! Main loops whose K steps are promoted into an f32 accumulator on the CUDA cores (the FP8
//! GEMM's: the FP8 tensor cores keep fewer bits than f32 while they sum): each step's
//! product lands in a partial accumulator, is waited for, and is added (times its scales,
//! when it has them) into the accumulator that the epilogue reads.
//!
//! Waiting for each product before adding it leaves the tensor cores idle while a warp group
//! adds, unless the other warp group's product happens to run then. The overlapped form
//! keeps two partials: it issues step `i`'s product into one, then waits for step `i − 1`'s
//! (in the other) and promotes it while step `i` runs, so each warp group always has a
//! product queued.

use crate::gemm::cooperative::Cooperative;
use crate::gemm::tile_epilogue::TileAt;
use tilus::lang::Element;
use tilus::prelude::*;

/// The factor of one K step's product for a consumer warp group's rows of a tile
/// ([`crate::gemm::persistent::MatmulPersistent::tiles_promoted`]): `(k, step, at) ->
/// [group_rows, 1]`.
pub(crate) type StepScale<'a> = &'a dyn Fn(&mut Kernel, Val, &TileAt) -> RegisterTensor<f32>;

/// A main loop whose K steps are promoted into the f32 accumulator, each step's product
/// times its scales when they are given, one step behind the products when `overlap`.
pub(crate) struct Promote<'a> {
    /// Each step's factor (fine-grained scales), or none.
    pub step_scale: Option<StepScale<'a>>,
    /// Two partials: a step promoted while the next one's product runs.
    pub overlap: bool,
}

/// The two partial products of the overlapped loop and, with scales, each one's factor.
struct Partials {
    products: [RegisterTensor<f32>; 2],
    factors: Option<[RegisterTensor<f32>; 2]>,
}

impl Promote<'_> {
    /// Consumer warp group `g`'s K steps `0..steps` of the tile at `at` (`done` ring steps
    /// before it), overlapped: step `i` issued into partial `i % 2`, then step `i − 1` waited
    /// for, promoted into `acc` and its stage released; after the loop the last step is
    /// waited for and promoted, its stage left to the caller (as the plain loop leaves it).
    /// `steps` ≥ 1. The loop runs two steps an iteration, so that which partial a step uses
    /// is known when the kernel is written.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn overlapped<T: Element>(
        &self,
        k: &mut Kernel,
        (ring, g): (&Cooperative<T>, usize),
        (done, steps): (Val, Val),
        at: &TileAt,
        (acc, shape): (&RegisterTensor<f32>, [i32; 2]),
        release: &dyn Fn(&mut Kernel, Scalar),
    ) {
        let products = [0, 1].map(|_| k.name_next("partial").register_tensor::<f32>(shape, None));
        let factors = self.step_scale.map(|_| {
            [0, 1].map(|_| {
                k.name_next("factor")
                    .register_tensor::<f32>([shape[0], 1], None)
            })
        });
        let p = Partials { products, factors };
        // step `i` into partial `slot`, then the step before it (in the other) promoted
        let step = |k: &mut Kernel, i: Val, slot: usize, first: bool| {
            if let (Some(scale), Some(f)) = (self.step_scale, &p.factors) {
                // the step's scales asked for a step before they are needed
                let factor = scale(k, i, at);
                k.assign_tile(&f[slot], factor);
            }
            ring.issue_product(k, g, done + i, &p.products[slot]);
            if !first {
                k.wgmma().wait_group(1);
                self.promote_slot(k, &p, 1 - slot, acc);
                release(k, done + i - 1);
            }
        };
        step(k, Val::constant(0), 0, true);
        // steps 1 and 2, 3 and 4, ...: odd steps in partial 1, even ones in partial 0
        let pairs = k.name_next("pairs").let_i32((steps - 1) / 2);
        k.name_next("j");
        k.for_range(0, pairs, 1, |k, j| {
            let i = k.let_i32(j * 2 + 1);
            step(k, i, 1, false);
            let i = k.let_i32(j * 2 + 2);
            step(k, i, 0, false);
        });
        // an even count of steps leaves its last (odd) one
        let odd = k.name_next("odd").let_i32(steps % 2);
        k.if_(Scalar::from(odd).eq_(0), |k| {
            let i = k.let_i32(steps - 1);
            step(k, i, 1, false);
        });
        k.wgmma().wait_group(0);
        k.if_else(
            Scalar::from(odd).eq_(0),
            |k| self.promote_slot(k, &p, 1, acc),
            |k| self.promote_slot(k, &p, 0, acc),
        );
    }

    /// Adds partial `slot` (times its factor) into `acc`.
    fn promote_slot(&self, k: &mut Kernel, p: &Partials, slot: usize, acc: &RegisterTensor<f32>) {
        let factor = p.factors.as_ref().map(|f| &f[slot]);
        Cooperative::<f16>::promote(k, &p.products[slot], acc, factor);
    }
}
