//! The `k.mbarrier()` namespace: asynchronous barriers in shared memory.

use super::{Kernel, Scalar, Val};
use crate::ir::{
    BarrierArrayDecl, BarrierArrayId, BarrierRef, Expr, Inst, Loc, MbarrierInst, StmtKind,
};
use std::ops::Index;

/// One mbarrier: an array and an index into it. `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barrier {
    array: BarrierArrayId,
    index: Val,
}

impl Barrier {
    pub(crate) fn to_ir(self) -> BarrierRef {
        BarrierRef {
            array: self.array,
            index: Scalar::from(self.index).0,
        }
    }
}

/// An array of mbarriers; index it with `bar[i]` (constant) or `bar.at(v)` (a variable).
#[derive(Clone, Debug)]
pub struct Barriers {
    id: BarrierArrayId,
    items: Vec<Barrier>,
    /// What `bar[i]` gives for an index past the end: a barrier whose index is the array's
    /// length, which the verifier reports as out of range at the instruction that uses it.
    past_end: Barrier,
}

impl Barriers {
    /// The barrier at a variable index (e.g. a pipeline stage).
    pub fn at(&self, index: Val) -> Barrier {
        Barrier {
            array: self.id,
            index,
        }
    }

    /// Number of barriers.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl Index<usize> for Barriers {
    type Output = Barrier;
    fn index(&self, i: usize) -> &Barrier {
        self.items.get(i).unwrap_or(&self.past_end)
    }
}

/// Methods of `k.mbarrier()`.
pub struct Mbarrier<'k> {
    k: &'k mut Kernel,
}

impl Kernel {
    /// The mbarrier instructions.
    pub fn mbarrier(&mut self) -> Mbarrier<'_> {
        Mbarrier { k: self }
    }
}

impl Mbarrier<'_> {
    /// Allocates one barrier per entry of `counts`, each expecting that many arrivals per
    /// phase, and initializes them (block scope).
    #[track_caller]
    pub fn alloc<const N: usize>(self, counts: [u32; N]) -> Barriers {
        self.alloc_counts(&counts)
    }

    /// [`Mbarrier::alloc`] with as many barriers as a hyperparameter says (one per stage of
    /// a ring): `alloc_counts(&vec![1; stages])`.
    #[track_caller]
    pub fn alloc_counts(self, counts: &[u32]) -> Barriers {
        let n = counts.len();
        let loc = Loc::caller();
        let name = self.k.fresh_name("bar");
        let id = BarrierArrayId(self.k.prog.barriers.len() as u32);
        self.k.prog.barriers.push(BarrierArrayDecl {
            name,
            counts: counts.to_vec(),
            offset: None,
            loc,
        });
        self.k
            .push(StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Alloc(id))), loc);
        let items = (0..n)
            .map(|i| Barrier {
                array: id,
                index: Val::constant(i as i32),
            })
            .collect();
        let past_end = Barrier {
            array: id,
            index: Val::constant(i32::try_from(n).unwrap_or(i32::MAX)),
        };
        Barriers {
            id,
            items,
            past_end,
        }
    }

    /// Each thread of the current group arrives once.
    #[track_caller]
    pub fn arrive(self, bar: Barrier) {
        self.arrive_n(bar, 1, Loc::caller());
    }

    /// Each thread of the current group arrives `count` times in one instruction: one thread
    /// can stand for a whole warp (`single_thread` arriving 32 times), so a barrier may count
    /// threads while fewer of them signal it. The verifier checks that the group's arrivals
    /// fit in the barrier's count.
    #[track_caller]
    pub fn arrive_count(self, bar: Barrier, count: u32) {
        self.arrive_n(bar, count, Loc::caller());
    }

    fn arrive_n(self, bar: Barrier, count: u32, loc: Loc) {
        let inst = MbarrierInst::Arrive {
            bar: bar.to_ir(),
            count,
        };
        self.k.push(StmtKind::Inst(Inst::Mbarrier(inst)), loc);
    }

    /// Each thread of the current group arrives once on the barrier at the same place in the
    /// block of rank `rank` of this cluster (with release semantics at cluster scope): a
    /// consumer freeing a stage that another block's producer fills. The receiving block must
    /// have allocated the barrier: meet at `cluster_sync()` after allocating barriers that
    /// other blocks arrive on.
    #[track_caller]
    pub fn arrive_remote(self, bar: Barrier, rank: impl Into<Scalar>) {
        let inst = MbarrierInst::ArriveRemote {
            bar: bar.to_ir(),
            rank: rank.into().0,
            publishes: true,
        };
        self.k
            .push(StmtKind::Inst(Inst::Mbarrier(inst)), Loc::caller());
    }

    /// [`Mbarrier::arrive_remote`] for a thread whose reads of what the barrier guards are
    /// complete (a consumer whose WGMMAs on a stage have been waited for, freeing it for
    /// another block's producer): the arrival publishes nothing, so it carries no
    /// cluster-scope release. That release is a fence which holds the warp until its memory
    /// operations are done; in a consumer's main loop it costs the tensor cores their pace
    /// (v6 on pairs of blocks: 0.83x of cuBLAS with it, 1.04x without, 2026-12-01). Writes
    /// another block must see need [`Mbarrier::arrive_remote`].
    #[track_caller]
    pub fn arrive_remote_after_reads(self, bar: Barrier, rank: impl Into<Scalar>) {
        let inst = MbarrierInst::ArriveRemote {
            bar: bar.to_ir(),
            rank: rank.into().0,
            publishes: false,
        };
        self.k
            .push(StmtKind::Inst(Inst::Mbarrier(inst)), Loc::caller());
    }

    /// Each thread of the current group arrives once and raises the transaction count by
    /// `transaction_bytes`: the bytes the asynchronous copies of this phase will deliver.
    #[track_caller]
    pub fn arrive_and_expect_tx(self, bar: Barrier, transaction_bytes: impl Into<Scalar>) {
        self.arrive_and_expect_tx_at(bar, transaction_bytes, Loc::caller());
    }

    /// [`Mbarrier::arrive_and_expect_tx`] reported at `loc` (for library helpers that issue
    /// it from a closure).
    pub(crate) fn arrive_and_expect_tx_at(
        self,
        bar: Barrier,
        transaction_bytes: impl Into<Scalar>,
        loc: Loc,
    ) {
        let bytes = transaction_bytes.into().0;
        let bytes = match bytes {
            Expr::Int(v, _) => Expr::Int(v, crate::ir::DType::U32),
            e => e,
        };
        let inst = MbarrierInst::ArriveExpectTx {
            bar: bar.to_ir(),
            bytes,
        };
        self.k.push(StmtKind::Inst(Inst::Mbarrier(inst)), loc);
    }

    /// Blocks until the barrier's phase with parity `phase` has completed (its arrivals and
    /// transaction bytes are all in).
    #[track_caller]
    pub fn wait(self, bar: Barrier, phase: impl Into<Scalar>) {
        self.wait_with(bar, phase.into(), false, Loc::caller());
    }

    /// [`Mbarrier::wait`] with relaxed semantics (`try_wait.relaxed`): the wait returns at
    /// the same moment, but the thread's later ordinary reads are not ordered after what the
    /// arriving threads wrote before arriving. For waits followed only by asynchronous work —
    /// a producer waiting for an empty stage before issuing its copies — where the acquire
    /// ordering of a plain wait buys nothing.
    #[track_caller]
    pub fn wait_relaxed(self, bar: Barrier, phase: impl Into<Scalar>) {
        self.wait_with(bar, phase.into(), true, Loc::caller());
    }

    fn wait_with(self, bar: Barrier, phase: Scalar, relaxed: bool, loc: Loc) {
        let inst = MbarrierInst::Wait {
            bar: bar.to_ir(),
            phase: phase.0,
            relaxed,
        };
        self.k.push(StmtKind::Inst(Inst::Mbarrier(inst)), loc);
    }
}
