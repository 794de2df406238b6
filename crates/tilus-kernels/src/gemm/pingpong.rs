//! The turns of ping-pong consumers ([`crate::gemm::persistent::MatmulPersistent::ping_pong`]): the two
//! consumer warp groups take a block's tiles in turn (warp group 0 the block's tiles 0, 2, ..,
//! warp group 1 tiles 1, 3, ..) from one ring, and their main loops alternate: a warp group
//! starts its tile's products only once the other has issued all of its previous tile's. One
//! warp group's epilogue then runs while the other's products keep the tensor cores busy.
//!
//! The alternation is also what keeps the ring's waits sound. A consumer waits on a stage's
//! full barrier by phase parity, which tells two phases apart but not three: a warp group
//! that waited for a step of its next tile while the other was still consuming the stages of
//! the tile before would see an earlier phase of the same parity complete and read a stage
//! not yet filled. Once the other warp group has passed every wait of its tile, the phases
//! behind each of this one's steps are complete, and each wait is for the phase right after.
//!
//! One barrier per warp group, of one arrival: warp group `g` waits on its own barrier for
//! its turn and, when its products are issued, one of its threads arrives on the other's.

use tilus::prelude::*;

/// The two barriers of the turns, see the module documentation.
pub struct PingPongOrder {
    turns: Barriers,
}

impl PingPongOrder {
    /// Allocates the barriers (block scope, once).
    pub fn new(k: &mut Kernel) -> PingPongOrder {
        PingPongOrder {
            turns: k.mbarrier().alloc([1, 1]),
        }
    }

    /// Consumer warp group `g`, before the products of its tile number `index` (0, 1, .. in
    /// its own walk): waits until the other warp group has issued the products of the tile
    /// before (warp group 0's first tile has none before it).
    #[track_caller]
    pub fn wait_turn(&self, k: &mut Kernel, g: usize, index: Val) {
        let bar = self.turns.at(Val::constant(g as i32));
        if g == 0 {
            // the turn passed after warp group 1's tile `index - 1`
            k.if_(index.gt(0), |k| {
                let phase = k.name_next("turn_phase").let_i32((index - 1) % 2);
                k.mbarrier().wait(bar, phase);
            });
        } else {
            // the turn passed after warp group 0's tile `index`
            let phase = k.name_next("turn_phase").let_i32(index % 2);
            k.mbarrier().wait(bar, phase);
        }
    }

    /// Consumer warp group `g`, once its tile's products are issued (all of its waits on the
    /// ring are behind it): one thread passes the turn to the other warp group.
    #[track_caller]
    pub fn pass_turn(&self, k: &mut Kernel, g: usize) {
        let other = self.turns.at(Val::constant(1 - g as i32));
        k.single_thread(|k| k.mbarrier().arrive(other));
    }

    /// [`PingPongOrder::wait_turn`] for a warp group known at run time (the index of
    /// [`Kernel::thread_groups`]): warp group `g`'s wait before its tile `index` is for the
    /// turn passed after the other's tile `index + g - 1`, none before warp group 0's first.
    #[track_caller]
    pub fn wait_turn_of(&self, k: &mut Kernel, g: Val, index: Val) {
        let bar = self.turns.at(g);
        let turn = k.let_i32(index + g);
        k.if_(turn.gt(0), |k| {
            let phase = k.name_next("turn_phase").let_i32((turn - 1) % 2);
            k.mbarrier().wait(bar, phase);
        });
    }

    /// [`PingPongOrder::pass_turn`] for a warp group known at run time.
    #[track_caller]
    pub fn pass_turn_of(&self, k: &mut Kernel, g: Val) {
        let other = self.turns.at(k.let_i32(Val::constant(1) - g));
        k.single_thread(|k| k.mbarrier().arrive(other));
    }
}
