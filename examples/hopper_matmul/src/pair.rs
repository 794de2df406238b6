//! The ring of a pair of cooperative blocks (a cluster of two along M) that share their B
//! tile: each block copies its own A halves, and half of the B tile, multicast into both
//! blocks, so that B is read from L2 once per pair. B is staged whole (`[stages, block_n,
//! block_k]`); the producers' halves land in its two halves of rows (`rows`), so each consumer
//! warp group multiplies its half of A by all of it in one WGMMA per K step, as in a block
//! alone. A stage is written by both
//! producers (its B halves), so the consumers of both blocks free it in both blocks: each
//! empty barrier counts four arrivals, one from each consumer warp group of either block.

use crate::v5::{copy_a_halves, operands, CooperativeShape};
use tilus::lang::Element;
use tilus::prelude::*;

/// See the module documentation.
pub struct PairRing<T: Element = f16> {
    ga: GlobalTensor<T>,
    gb: GlobalTensor<T>,
    sa: [SharedTensor<T>; 2],
    sb: SharedTensor<T>,
    /// The ring's barriers (the callers release its stages, here and in the partner).
    pub pipe: Pipeline,
    stage_bytes: i32,
    shape: CooperativeShape,
    /// This block's rank in the pair.
    pub rank: Val,
    /// The other block's rank.
    pub partner: Val,
}

impl<T: Element> PairRing<T> {
    /// Declares the pair (`cluster_blocks([2])`), the views of A `[m, k]` and B `[n, k]`, the
    /// staged tiles and the pipeline, and meets the partner (`cluster_sync`) so that neither
    /// block's copies or arrivals reach barriers the other has not allocated.
    pub fn new(
        k: &mut Kernel,
        shape: CooperativeShape,
        (m_size, n_size, k_size): (Val, Val, Val),
        (a_ptr, b_ptr): (PtrVal<T>, PtrVal<T>),
    ) -> PairRing<T> {
        let stages = shape.stages.max(1);
        let (ga, gb, sa) = operands(k, shape, (m_size, n_size, k_size), (a_ptr, b_ptr));
        let sb = k
            .name_next("sb")
            .shared_tensor::<T>([stages, shape.block_n, shape.block_k]);
        // both consumer warp groups of both blocks release each stage, one arrival each
        let pipe = Pipeline::new(k, stages as u32, 4);
        let stage_bytes =
            2 * sa[0].at(Val::constant(0)).nbytes() + sb.at(Val::constant(0)).nbytes();
        let rank = k.cluster_rank();
        let rank = k.name_next("rank").let_i32(rank);
        let partner = k.name_next("partner").let_i32(Scalar::from(1) - rank);
        k.cluster_sync();
        PairRing {
            ga,
            gb,
            sa,
            sb,
            pipe,
            stage_bytes,
            shape,
            rank,
            partner,
        }
    }

    /// The producer's ring step `step`: waits for its stage (freed by both blocks'
    /// consumers), then copies K step `i` of its tile at `(offset_m, offset_n)`: A's two
    /// halves into this block, and its half of B (`rank`) into both blocks.
    #[track_caller]
    pub fn fill(
        &self,
        k: &mut Kernel,
        step: impl Into<Scalar>,
        i: Val,
        offset_m: Val,
        offset_n: Val,
    ) {
        let slot = self.pipe.producer_acquire(k, step, self.stage_bytes);
        let stage = slot.stage();
        let bar = slot.barrier();
        let offset_k = k.name_next("offset_k").let_i32(i * self.shape.block_k);
        let a = [self.sa[0].at(stage), self.sa[1].at(stage)];
        copy_a_halves(k, (&self.ga, a), bar, (offset_m, offset_k), self.shape);
        // this block's half of B, into both blocks' tile of that half
        let half_n = self.shape.block_n / 2;
        let offset_nb = k
            .name_next("offset_nb")
            .let_i32(offset_n + self.rank * half_n);
        let rank = self.rank;
        k.if_else(
            rank.eq_(0),
            |k| {
                let b = self.sb.at(stage).rows(0, half_n);
                k.tma()
                    .global_to_shared_multicast(&self.gb, &b, [offset_nb, offset_k], bar, 0b11);
            },
            |k| {
                let b = self.sb.at(stage).rows(half_n, half_n);
                k.tma()
                    .global_to_shared_multicast(&self.gb, &b, [offset_nb, offset_k], bar, 0b11);
            },
        );
    }

    /// Consumer warp group `g`'s ring step `step`: waits for its stage, multiplies its half of
    /// A by the whole B tile (both producers' halves) into `acc` and keeps that product in
    /// flight (`wait_group(1)`); the stage is the caller's to release, here and in the partner.
    #[track_caller]
    pub fn multiply(
        &self,
        k: &mut Kernel,
        g: usize,
        step: impl Into<Scalar>,
        acc: &RegisterTensor<f32>,
    ) {
        let slot = self.pipe.consumer_acquire(k, step);
        let stage = slot.stage();
        k.wgmma().fence();
        k.wgmma()
            .mma(&self.sa[g].at(stage), &self.sb.at(stage).transpose(), acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(1);
        drop(slot);
    }
    /// Frees ring step `step`'s stage in both blocks on behalf of the calling consumer warp
    /// group: one of its threads arrives here and in the partner (see
    /// [`crate::v5::Cooperative::release`]).
    #[track_caller]
    pub fn release(&self, k: &mut Kernel, step: impl Into<Scalar>) {
        let step = step.into();
        let partner = Scalar::from(self.partner);
        k.single_thread(|k| {
            self.pipe
                .consumer_release_step_in_cluster(k, step, &[partner])
        });
    }
}
