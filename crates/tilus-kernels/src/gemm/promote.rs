//! Main loops whose K steps are promoted into an f32 accumulator on the CUDA cores (the FP8
//! GEMM's: the FP8 tensor cores keep fewer bits than f32 while they sum): each step's
//! product lands in a partial accumulator, is waited for, and is added (times its scales,
//! when it has them) into the accumulator that the epilogue reads.
//!
//! Waiting for each product before adding it leaves the tensor cores idle while a warp group
//! adds, unless the other warp group's product happens to run then. The overlapped form
//! keeps two partials and walks the steps in runs of `2n`: within a run each step's product
//! is issued into one partial while the step before it, in the other, is promoted, so only
//! the run's last addition waits with nothing of the warp group's own in flight (half of
//! them in pairs, `n = 1`; one in eight in runs of eight, `n = 4`).

use crate::gemm::cooperative::Cooperative;
use crate::gemm::pingpong::PingPongOrder;
use crate::gemm::tile_epilogue::TileAt;
use tilus::lang::Element;
use tilus::prelude::*;

/// The factor of one K step's product for a consumer warp group's rows of a tile
/// ([`crate::gemm::persistent::MatmulPersistent::tiles_promoted`]): `(k, step, at) ->
/// [group_rows, 1]`.
pub(crate) type StepScale<'a> = &'a dyn Fn(&mut Kernel, Val, &TileAt) -> RegisterTensor<f32>;

/// A main loop whose K steps are promoted into the f32 accumulator, each step's product
/// times its scales when they are given.
pub(crate) struct Promote<'a> {
    /// Each step's factor (fine-grained scales), or none.
    pub step_scale: Option<StepScale<'a>>,
    /// Pairs of steps per overlapped run ([`Promote::overlapped`]); 0: each step waited for
    /// and promoted before the next is issued.
    pub overlap: i32,
    /// Cooperative warp groups take turns: without [`Promote::overlap`], each step's products
    /// are issued in turn (warp group 0's, then 1's, then 0's next:
    /// [`crate::gemm::pingpong::PingPongOrder`] step by step); overlapped, warp group 1 runs
    /// half a run behind warp group 0. Either way one's addition runs under the other's
    /// products instead of beside them.
    pub turns: bool,
}

/// The two partial products of the overlapped loop and, with scales, each one's factor.
struct Partials {
    products: [RegisterTensor<f32>; 2],
    factors: Option<[RegisterTensor<f32>; 2]>,
}

impl Promote<'_> {
    /// Consumer warp group `g`'s K steps `0..steps` of the tile at `at` (`done` ring steps
    /// before it), overlapped in runs of `2 n` steps (`n` = [`Promote::overlap`]): in a run,
    /// step `i` is issued into partial `i % 2`, then step `i - 1` waited for
    /// (`wait_group(1)`) and promoted while step `i` runs; the run's last step is waited for
    /// alone (`wait_group(0)`). The steps after the last whole run go in pairs, then an odd
    /// last step alone. A run is straight-line code and nothing is in flight where a loop
    /// turns back (ptxas serializes every wgmma of a kernel whose loop carries one product in
    /// flight while it reads another's registers). Every step's stage is released here, the
    /// last one's included. `steps` ≥ 1. `behind`: the warp group starts with half a run
    /// (where it has that many steps), so that its runs end halfway through the other warp
    /// group's and one's last addition runs under the other's products
    /// ([`Promote::turns`] on cooperative warp groups).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn overlapped<T: Element>(
        &self,
        k: &mut Kernel,
        (ring, g, behind): (&Cooperative<T>, usize, bool),
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
        // step `i`'s scales (asked for before its product) and its product into `slot`
        let issue = |k: &mut Kernel, i: Val, slot: usize| {
            if let (Some(scale), Some(f)) = (self.step_scale, &p.factors) {
                let factor = scale(k, i, at);
                k.assign_tile(&f[slot], factor);
            }
            ring.issue_product(k, g, done + i, &p.products[slot]);
        };
        // steps `first .. first + count` (count ≥ 1, known here) rolled: one product in
        // flight while the one before it is promoted (a single step waited for alone)
        let rolled = |k: &mut Kernel, first: Val, count: i32| {
            let at_step = |k: &mut Kernel, t: i32| k.let_i32(first + t);
            let mut before = at_step(k, 0);
            issue(k, before, 0);
            for t in 1..count {
                let now = at_step(k, t);
                issue(k, now, (t % 2) as usize);
                k.wgmma().wait_group(1);
                self.promote_slot(k, &p, ((t - 1) % 2) as usize, acc);
                release(k, done + before);
                before = now;
            }
            k.wgmma().wait_group(0);
            self.promote_slot(k, &p, ((count - 1) % 2) as usize, acc);
            release(k, done + before);
        };
        let run = 2 * self.overlap.max(1);
        // the half run of a warp group behind the other, where there are steps for it
        let lead = if behind && run > 2 {
            let half = run / 2;
            let lead = k.name_next("lead").var_i32(0);
            k.if_(steps.ge(half), |k| {
                rolled(k, Val::constant(0), half);
                k.assign(lead, half);
            });
            lead
        } else {
            Val::constant(0)
        };
        let paired = if run > 2 {
            let runs = k.name_next("runs").let_i32((steps - lead) / run);
            k.name_next("r");
            k.for_range(0, runs, 1, |k, r| {
                let first = k.let_i32(lead + r * run);
                rolled(k, first, run);
            });
            k.name_next("paired").let_i32(lead + runs * run)
        } else {
            Val::constant(0)
        };
        let pairs = k.name_next("pairs").let_i32((steps - paired) / 2);
        k.name_next("j");
        k.for_range(0, pairs, 1, |k, j| {
            let first = k.let_i32(paired + j * 2);
            rolled(k, first, 2);
        });
        let odd = k.name_next("odd").let_i32((steps - paired) % 2);
        k.if_(Scalar::from(odd).eq_(1), |k| {
            let last = k.let_i32(steps - 1);
            rolled(k, last, 1);
        });
    }

    /// Adds partial `slot` (times its factor) into `acc`.
    fn promote_slot(&self, k: &mut Kernel, p: &Partials, slot: usize, acc: &RegisterTensor<f32>) {
        let factor = p.factors.as_ref().map(|f| &f[slot]);
        Cooperative::<f16>::promote(k, &p.products[slot], acc, factor);
    }
}

/// [`Cooperative::multiply_promoted`] in turns ([`Promote::turns`]): consumer warp group `g`
/// waits for its turn at ring step `step`, issues its product, passes the turn, then waits
/// for the product and promotes it.
pub(crate) fn promote_in_turns<T: Element>(
    k: &mut Kernel,
    (ring, g, turns): (&Cooperative<T>, usize, &PingPongOrder),
    step: impl Into<Scalar>,
    (partial, acc): (&RegisterTensor<f32>, &RegisterTensor<f32>),
    factor: Option<&RegisterTensor<f32>>,
) {
    let index = k.let_i32(step);
    turns.wait_turn(k, g, index);
    ring.issue_product(k, g, index, partial);
    turns.pass_turn(k, g);
    k.wgmma().wait_group(0);
    Cooperative::<T>::promote(k, partial, acc, factor);
}
