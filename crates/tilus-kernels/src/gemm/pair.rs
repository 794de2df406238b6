//! The ring of a pair of blocks (a cluster of two along M) that share their B tile: each
//! block copies its own A (in halves, or whole in ping-pong), and half of the B tile,
//! multicast into both blocks, so that B is read from L2 once per pair. B is staged whole
//! (`[stages, block_n, block_k]`); the producers' halves land in its two halves of rows
//! (`rows`), so each consumer warp group multiplies its rows of A by all of it in one WGMMA per
//! K step, as in a block alone. A stage is written by both producers (its B halves), so the
//! consumers of both blocks free it in both blocks: each empty barrier counts an arrival from
//! each consumer warp group of either block that reads the stage (four; two in ping-pong,
//! where one warp group of each block takes a tile).

use crate::gemm::cooperative::{Cooperative, CooperativeShape};
use tilus::lang::Element;
use tilus::prelude::*;

/// See the module documentation.
pub struct PairRing<T: Element = f16> {
    /// The block's ring, as a block alone has it; only the copies of B and the releases
    /// differ.
    pub ring: Cooperative<T>,
    /// This block's rank in the pair.
    pub rank: Val,
    /// The other block's rank.
    pub partner: Val,
}

impl<T: Element> PairRing<T> {
    /// Declares the views of A `[m, k]` and B `[n, k]`, the staged tiles and the pipeline
    /// (the consumer warp groups of both blocks that read a stage release it, one arrival
    /// each), and meets the partner (`cluster_sync_relaxed`: the barriers' initialization is
    /// fenced already, and nothing else crosses) so that neither block's copies or arrivals
    /// reach barriers the other has not allocated. The kernel declares the pair
    /// (`cluster_blocks([2])`); the producer drains the ring at the end
    /// (`Pipeline::producer_drain`), so that no release reaches a finished block.
    pub fn new(
        k: &mut Kernel,
        shape: CooperativeShape,
        dims: (Val, Val, Val),
        ptrs: (PtrVal<T>, PtrVal<T>),
    ) -> PairRing<T> {
        let ring = Cooperative::with_arrivals(k, shape, dims, ptrs, 2 * shape.releases());
        let rank = k.cluster_rank();
        let rank = k.name_next("rank").let_i32(rank);
        let partner = k.name_next("partner").let_i32(Scalar::from(1) - rank);
        k.cluster_sync_relaxed();
        PairRing {
            ring,
            rank,
            partner,
        }
    }

    /// The producer's ring step `step`: waits for its stage (freed by both blocks'
    /// consumers), then copies K step `i` of its tile at `(offset_m, offset_n)`: A's parts
    /// into this block, and its half of B (`rank`) into both blocks.
    #[track_caller]
    pub fn fill(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        i: Val,
        offset_m: Val,
        offset_n: Val,
    ) {
        let r = &self.ring;
        let slot = r.pipe.producer_acquire(k, step, r.stage_bytes);
        let stage = slot.stage();
        let bar = slot.barrier();
        let offset_k = k.name_next("offset_k").let_i32(i * r.shape.block_k);
        r.copy_a(k, stage, bar, (offset_m, offset_k), None);
        // this block's half of B, into both blocks' tile of that half
        let half_n = r.shape.block_n / 2;
        let offset_nb = k
            .name_next("offset_nb")
            .let_i32(offset_n + self.rank * half_n);
        let rank = self.rank;
        k.if_else(
            rank.eq_(0),
            |k| {
                let b = r.sb.at(stage).rows(0, half_n);
                k.tma()
                    .global_to_shared_multicast(&r.ops.gb, &b, [offset_nb, offset_k], bar, 0b11);
            },
            |k| {
                let b = r.sb.at(stage).rows(half_n, half_n);
                k.tma()
                    .global_to_shared_multicast(&r.ops.gb, &b, [offset_nb, offset_k], bar, 0b11);
            },
        );
    }

    /// Frees ring step `step`'s stage in both blocks on behalf of the calling consumer warp
    /// group: one of its threads arrives here and in the partner (see
    /// [`crate::gemm::cooperative::Cooperative::release`]).
    #[track_caller]
    pub fn release(&self, k: &mut Kernel, step: impl Into<Scalar>) {
        let step = step.into();
        let partner = Scalar::from(self.partner);
        k.single_thread(|k| {
            self.ring
                .pipe
                .consumer_release_step_in_cluster(k, step, &[partner])
        });
    }
}
