//! [`Pipeline`]: a ring of stages between a producer (who fills a stage with asynchronous
//! copies) and consumers (who read it and give it back), with the *full* and *empty* barrier
//! of each stage and the phases of both sides derived from the step number. The Rust
//! counterpart of a `tilus.Class` pipeline: its methods emit the waits and arrivals, so a
//! script says what it does (`producer_acquire`, `consumer_acquire`, `consumer_release`)
//! instead of which parity to wait for.
//!
//! What the types rule out: a producer's slot cannot be released and a consumer's cannot be
//! filled (they are different types), and a consumer's slot is released at most once (the
//! release takes it). What they cannot: which threads call what (the verifier's rules on
//! thread groups and arrival counts), and copies that do not match the bytes a producer
//! declared (the transaction rule and the interpreter). Every diagnostic names the line of
//! the call in the script: the methods pass their caller's location on.
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Stream;
//!
//! impl Script for Stream {
//!     type Args = (i32, Ptr<f16>, PtrMut<f16>);
//!     fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
//!         k.blocks([1]);
//!         k.warps(5);
//!         let g = k.global_view::<f16>(src, [rows, Val::constant(64)]);
//!         let o = k.global_view::<f16>(dst, [rows, Val::constant(64)]);
//!         let s = k.shared_tensor::<f16>([2, 16, 64]);
//!         let pipe = Pipeline::new(k, 2, 128);
//!         let steps = k.let_i32(cdiv(rows, 16));
//!         // the whole producer warp: an elected lane issues the copies
//!         k.single_warp(4, |k| {
//!             k.for_range(0, steps, 1, |k, i| {
//!                 let slot = pipe.producer_acquire(k, i, s.at(Val::constant(0)).nbytes());
//!                 let tile = s.at(slot.stage());
//!                 k.tma().global_to_shared(&g, &tile, [i * 16, Scalar::from(0)], slot.barrier());
//!             });
//!         });
//!         k.warp_group(0, |k| {
//!             k.for_range(0, steps, 1, |k, i| {
//!                 let slot = pipe.consumer_acquire(k, i);
//!                 let r = k.load_shared(&s.at(slot.stage()));
//!                 k.store_global(&o, &r, [i * 16, Scalar::from(0)]);
//!                 pipe.consumer_release(k, slot);
//!             });
//!         });
//!     }
//! }
//!
//! let src: Vec<f16> = (0..48 * 64).map(|i| f16::from_f32((i % 97) as f32)).collect();
//! let mut dst = vec![f16::ZERO; 48 * 64];
//! tilus::interp::run(&Stream, (48, &src[..], &mut dst[..])).unwrap();
//! assert_eq!(dst, src);
//! ```

use super::{Barrier, Barriers, Kernel, Scalar, Val};
use crate::ir::{GroupKind, Inst, Loc, MbarrierInst, StmtKind};

/// A ring of `stages` stages: per stage a *full* barrier (one producer arrival plus the
/// copies' bytes) and an *empty* barrier (the consumers' arrivals). Step `i` uses stage
/// `i % stages`; the producer waits until the stage is empty (a fresh barrier counts as
/// empty: the first trip round the ring does not wait), the consumers until it is full.
#[derive(Clone, Debug)]
pub struct Pipeline {
    stages: i32,
    full: Barriers,
    empty: Barriers,
}

/// A stage the producer holds: issue its copies on [`ProducerSlot::barrier`].
#[derive(Clone, Copy, Debug)]
#[must_use = "a producer slot is filled by copies completing on its barrier"]
pub struct ProducerSlot {
    stage: Val,
    full: Barrier,
}

impl ProducerSlot {
    /// The stage index (for `tile.at(stage)`).
    pub fn stage(&self) -> Val {
        self.stage
    }

    /// The barrier the copies into this stage complete on.
    pub fn barrier(&self) -> Barrier {
        self.full
    }
}

/// A stage the consumers hold: read it, then give it back with
/// [`Pipeline::consumer_release`] (which takes the slot: once).
#[derive(Debug)]
#[must_use = "a consumer slot must be released, or the producer waits for it forever"]
pub struct ConsumerSlot {
    stage: Val,
    empty: Barrier,
}

impl ConsumerSlot {
    /// The stage index (for `tile.at(stage)`).
    pub fn stage(&self) -> Val {
        self.stage
    }
}

impl Pipeline {
    /// Allocates the ring's barriers (block scope, once): `stages` full barriers of one
    /// arrival and `stages` empty barriers of `consumer_arrivals` (the threads that release a
    /// stage, e.g. 128 for one consumer warp group, 256 for two).
    #[track_caller]
    pub fn new(k: &mut Kernel, stages: u32, consumer_arrivals: u32) -> Pipeline {
        let n = stages as usize;
        let full = k.mbarrier().alloc_counts(&vec![1; n]);
        let empty = k.mbarrier().alloc_counts(&vec![consumer_arrivals; n]);
        Pipeline {
            stages: i32::try_from(stages).unwrap_or(i32::MAX).max(1),
            full,
            empty,
        }
    }

    /// Number of stages.
    pub fn stages(&self) -> i32 {
        self.stages
    }

    /// The producer's step `i` (one thread, or one warp whose copies an elected lane issues):
    /// waits until stage `i % stages` is empty (a relaxed wait: only asynchronous copies
    /// follow it), then declares the `bytes` its copies will deliver on the stage's full
    /// barrier (from one thread of a warp).
    #[track_caller]
    pub fn producer_acquire(
        &self,
        k: &mut Kernel,
        i: impl Into<Scalar>,
        bytes: impl Into<Scalar>,
    ) -> ProducerSlot {
        let loc = Loc::caller();
        let slot = self.wait_empty(k, i.into(), true);
        self.declare(k, &slot, bytes.into(), loc);
        slot
    }

    /// The producer's step `i` when its threads write the stage themselves (loads and
    /// `store_shared`, beside or instead of copies): every calling thread waits until stage
    /// `i % stages` is empty (an acquiring wait: the consumers' reads are over before the
    /// threads' writes), and nothing is declared yet; [`Pipeline::producer_commit`] arrives
    /// once the threads have written it.
    #[track_caller]
    pub fn producer_wait(&self, k: &mut Kernel, i: impl Into<Scalar>) -> ProducerSlot {
        self.wait_empty(k, i.into(), false)
    }

    /// Completes [`Pipeline::producer_wait`]'s step: one thread of the calling group declares
    /// the `bytes` the stage's copies will deliver (0 without copies) with the stage's one
    /// producer arrival. Call it once every thread's writes to the stage are made visible to
    /// the async proxy (`fence_proxy_async`) and the group has met (`sync_group`), and before
    /// the copies are issued.
    #[track_caller]
    pub fn producer_commit(&self, k: &mut Kernel, slot: &ProducerSlot, bytes: impl Into<Scalar>) {
        self.declare(k, slot, bytes.into(), Loc::caller());
    }

    /// Waits until step `i`'s stage is empty (`relaxed`: only asynchronous copies follow).
    #[track_caller]
    fn wait_empty(&self, k: &mut Kernel, i: Scalar, relaxed: bool) -> ProducerSlot {
        let stage = k.name_next("stage").let_i32(i.clone() % self.stages);
        let free = k
            .name_next("empty_phase")
            .let_i32((i / self.stages + 1) % 2);
        let (full, empty) = (self.full.at(stage), self.empty.at(stage));
        if relaxed {
            k.mbarrier().wait_relaxed(empty, free);
        } else {
            k.mbarrier().wait(empty, free);
        }
        ProducerSlot { stage, full }
    }

    /// After the producer's last step (`end` steps in all): waits until the consumers have
    /// released the stages of the last `stages` steps, as it would before filling steps
    /// `end .. end + stages` (the waits of stages never filled pass at once). Once every
    /// release has arrived, no other block's consumer can still arrive on this block's
    /// barriers: a block of a cluster whose consumers release stages in other blocks may
    /// then finish without meeting them at a `cluster_sync()`.
    #[track_caller]
    pub fn producer_drain(&self, k: &mut Kernel, end: impl Into<Scalar>) {
        let end = end.into();
        k.name_next("drained");
        k.for_range(0, self.stages, 1, |k, j| {
            // (the slot is not filled: nothing is declared on its full barrier)
            let _ = self.wait_empty(k, end.clone() + j, true);
        });
    }

    /// The producer's one arrival on the slot's full barrier with the bytes its copies will
    /// deliver, from one thread of the calling group.
    fn declare(&self, k: &mut Kernel, slot: &ProducerSlot, bytes: Scalar, loc: Loc) {
        if k.group_threads() == 1 {
            k.mbarrier().arrive_and_expect_tx_at(slot.full, bytes, loc);
        } else {
            // a warp declares the bytes from one thread (its copies are issued once too)
            k.group(0, 1, GroupKind::SingleThread, loc, |k| {
                k.mbarrier().arrive_and_expect_tx_at(slot.full, bytes, loc)
            });
        }
    }

    /// The consumers' step `i`: waits until stage `i % stages` is full.
    #[track_caller]
    pub fn consumer_acquire(&self, k: &mut Kernel, i: impl Into<Scalar>) -> ConsumerSlot {
        let i = i.into();
        let stage = k.name_next("stage").let_i32(i.clone() % self.stages);
        let phase = k.name_next("full_phase").let_i32(i / self.stages % 2);
        k.mbarrier().wait(self.full.at(stage), phase);
        ConsumerSlot {
            stage,
            empty: self.empty.at(stage),
        }
    }

    /// Gives a stage back to the producer: every calling thread arrives on its empty barrier.
    /// Only once nothing reads it any more (after the `wgmma().wait_group` that covers the
    /// products reading it).
    #[track_caller]
    pub fn consumer_release(&self, k: &mut Kernel, slot: ConsumerSlot) {
        k.mbarrier().arrive(slot.empty);
    }

    /// Gives back the stage of an earlier step, when there was one (`step >= 0`): with one
    /// product kept in flight, step `i` releases step `i - 1`'s stage once
    /// `wait_group(1)` has returned.
    #[track_caller]
    pub fn consumer_release_step(&self, k: &mut Kernel, step: impl Into<Scalar>) {
        self.release_step(k, step.into(), &[], Loc::caller());
    }

    /// [`Pipeline::consumer_release_step`] in this block and on the same stage's empty
    /// barrier in the blocks of ranks `others` of the cluster: when other blocks' producers
    /// fill this block's stages too (a multicast copy), every block's consumers free the
    /// stage in every producer's block (count those arrivals in `consumer_arrivals`).
    #[track_caller]
    pub fn consumer_release_step_in_cluster(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        others: &[Scalar],
    ) {
        self.release_step(k, step.into(), others, Loc::caller());
    }

    fn release_step(&self, k: &mut Kernel, step: Scalar, others: &[Scalar], loc: Loc) {
        let cond = step.clone().ge(0).0;
        let stage = k
            .name_next("released_stage")
            .let_i32((step + self.stages) % self.stages);
        let empty = self.empty.at(stage);
        let body = k.nested(|k| {
            let here = MbarrierInst::Arrive {
                bar: empty.to_ir(),
                count: 1,
            };
            k.push(StmtKind::Inst(Inst::Mbarrier(here)), loc);
            for rank in others {
                // the consumer's reads of the stage are complete: nothing to publish
                let there = MbarrierInst::ArriveRemote {
                    bar: empty.to_ir(),
                    rank: rank.0.clone(),
                    publishes: false,
                };
                k.push(StmtKind::Inst(Inst::Mbarrier(there)), loc);
            }
        });
        k.push(
            StmtKind::If {
                cond,
                then_body: body,
                else_body: vec![],
            },
            loc,
        );
    }
}
