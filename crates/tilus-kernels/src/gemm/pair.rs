//! The ring of a pair of blocks (a cluster of two) that share one operand's tile, each block
//! copying half of it, multicast into both, so that the tile is read from L2 once per pair.
//! Along M ([`PairAxis::M`]: neighbouring tile rows) the pair shares its B tile: each block
//! copies its own A (in halves, or whole in ping-pong) and half of B's rows. Along N
//! ([`PairAxis::N`]: neighbouring tile columns) it shares its A tile: each block copies its
//! own B and half of A's rows (one of A's two parts, or half of the whole A in ping-pong).
//! The shared tile is staged whole (`[stages, rows, block_k]`); the producers' halves land in
//! its two halves of rows, so each consumer warp group multiplies as in a block alone. A stage
//! is written by both producers (the shared halves), so the consumers of both blocks free it in
//! both blocks: each empty barrier counts an arrival from each consumer warp group of either
//! block that reads the stage (four; two in ping-pong, where one warp group of each block
//! takes a tile).

use crate::gemm::cooperative::{Cooperative, CooperativeShape};
use tilus::lang::Element;
use tilus::prelude::*;

/// Which neighbours a pair's two blocks are, and so which operand they share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairAxis {
    /// Neighbouring tile rows (`cluster_m = 2`): the pair shares B's tile.
    M,
    /// Neighbouring tile columns (`cluster_n = 2`): the pair shares A's tile.
    N,
}

/// See the module documentation.
pub struct PairRing<T: Element = f16> {
    /// The block's ring, as a block alone has it; only the copies of the shared operand and
    /// the releases differ.
    pub ring: Cooperative<T>,
    /// This block's rank in the pair.
    pub rank: Val,
    /// The other block's rank.
    pub partner: Val,
    /// The operand the pair shares.
    pub axis: PairAxis,
}

impl<T: Element> PairRing<T> {
    /// Declares the views of A `[m, k]` and B `[n, k]`, the staged tiles and the pipeline
    /// of a pair along `axis`
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
        axis: PairAxis,
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
            axis,
        }
    }

    /// The producer's ring step `step`: waits for its stage (freed by both blocks'
    /// consumers), then copies K step `i` of its tile at `(offset_m, offset_n)`: the operand
    /// it does not share into this block, and its half (`rank`) of the shared one into both.
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
        match self.axis {
            PairAxis::M => {
                r.copy_a(k, stage, bar, (offset_m, offset_k), None);
                let b = r.sb.at(stage);
                self.copy_half(
                    k,
                    (&r.ops.gb, &b),
                    r.shape.block_n,
                    (offset_n, offset_k),
                    bar,
                );
            }
            PairAxis::N => {
                let b = r.sb.at(stage);
                k.tma()
                    .global_to_shared(&r.ops.gb, &b, [offset_n, offset_k], bar);
                let half_m = r.shape.block_m / 2;
                if r.sa.len() == 2 {
                    // A's two parts are its two halves: this block copies its rank's part
                    let offset_ma = k
                        .name_next("offset_ma")
                        .let_i32(offset_m + self.rank * half_m);
                    let (a0, a1) = (r.sa[0].at(stage), r.sa[1].at(stage));
                    let ga = &r.ops.ga;
                    k.if_else(
                        self.rank.eq_(0),
                        |k| {
                            k.tma().global_to_shared_multicast(
                                ga,
                                &a0,
                                [offset_ma, offset_k],
                                bar,
                                0b11,
                            )
                        },
                        |k| {
                            k.tma().global_to_shared_multicast(
                                ga,
                                &a1,
                                [offset_ma, offset_k],
                                bar,
                                0b11,
                            )
                        },
                    );
                } else {
                    let a = r.sa[0].at(stage);
                    self.copy_half(
                        k,
                        (&r.ops.ga, &a),
                        r.shape.block_m,
                        (offset_m, offset_k),
                        bar,
                    );
                }
            }
        }
    }

    /// This block's half (`rank`) of the shared operand's tile `tile` (`rows` rows) at
    /// `(offset, offset_k)` of `global`, multicast into both blocks' tile of that half.
    #[track_caller]
    fn copy_half(
        &self,
        k: &mut Kernel,
        (global, tile): (&GlobalTensor<T>, &SharedTensor<T>),
        rows: i32,
        (offset, offset_k): (Val, Val),
        bar: Barrier,
    ) {
        let half = rows / 2;
        let offset_half = k
            .name_next("offset_half")
            .let_i32(offset + self.rank * half);
        k.if_else(
            self.rank.eq_(0),
            |k| {
                let t = tile.rows(0, half);
                k.tma()
                    .global_to_shared_multicast(global, &t, [offset_half, offset_k], bar, 0b11);
            },
            |k| {
                let t = tile.rows(half, half);
                k.tma()
                    .global_to_shared_multicast(global, &t, [offset_half, offset_k], bar, 0b11);
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
