//! The `k.tma()` namespace: the bulk tensor copy engine.

use super::{Barrier, Element, GlobalTensor, Kernel, Scalar, Scalars, SharedTensor};
use crate::ir::{Inst, L2Promotion, Loc, StmtKind, TmaInst};

/// Methods of `k.tma()`.
pub struct Tma<'k> {
    k: &'k mut Kernel,
}

impl Kernel {
    /// The TMA instructions.
    pub fn tma(&mut self) -> Tma<'_> {
        Tma { k: self }
    }

    /// The L2 promotion of every tensor map of the kernel (the host encodes it; the default
    /// is [`L2Promotion::B256`]): how far an L2 miss of a copy is widened when it goes to
    /// memory. Wider lines prefetch what the next copies along a row read; where a row's
    /// copies are few (a short K) the extra lines are traffic nobody asked for. The
    /// interpreter has no L2: it ignores the setting.
    pub fn tma_l2_promotion(&mut self, promotion: L2Promotion) {
        self.prog.l2_promotion = promotion;
    }
}

impl Tma<'_> {
    /// Copies the box of `src` starting at `offsets` (the box is `dst`'s shape) into `dst`,
    /// asynchronously; the bytes complete on `bar`. The tensor map is built for you, with the
    /// swizzle of `dst`'s layout. Elements outside `src` arrive as zeros. `dst` may be one stage
    /// of a staged tile (`sa.at(s)`): the box is the stage's shape. The tile may have fewer
    /// dimensions than the view (`offsets` has the view's): the box is one element deep in the
    /// leading dimensions it leaves out (a `[rows, cols]` tile of a `[batch, m, n]` view is one
    /// matrix of the batch).
    #[track_caller]
    pub fn global_to_shared<T: Element>(
        self,
        src: &GlobalTensor<T>,
        dst: &SharedTensor<T>,
        offsets: impl Scalars,
        bar: Barrier,
    ) {
        let loc = Loc::caller();
        self.load(src, dst, offsets.into_exprs(), bar, None, loc);
    }

    /// [`Tma::global_to_shared`] into every block of the cluster whose rank's bit is set in
    /// `mask` (a 16-bit mask; this block's own bit included or not): each receives the box
    /// in its tile at the same place and its bytes on its barrier at the same place, so
    /// that each declares the bytes it receives (the blocks that share an operand each load
    /// a part of it for all). A kernel with clusters; the receiving blocks must have
    /// allocated the barrier (meet at `cluster_sync()` first).
    #[track_caller]
    pub fn global_to_shared_multicast<T: Element>(
        self,
        src: &GlobalTensor<T>,
        dst: &SharedTensor<T>,
        offsets: impl Scalars,
        bar: Barrier,
        mask: impl Into<Scalar>,
    ) {
        let mask = mask.into().0;
        self.load(
            src,
            dst,
            offsets.into_exprs(),
            bar,
            Some(mask),
            Loc::caller(),
        );
    }

    fn load<T: Element>(
        self,
        src: &GlobalTensor<T>,
        dst: &SharedTensor<T>,
        offsets: Vec<crate::ir::Expr>,
        bar: Barrier,
        multicast: Option<crate::ir::Expr>,
        loc: Loc,
    ) {
        let dst = self
            .k
            .shared_operand(dst, "tma.global_to_shared", false, loc);
        let inst = TmaInst::GlobalToShared {
            src: src.id,
            dst,
            offsets,
            bar: bar.to_ir(),
            map: None,
            multicast,
        };
        self.k.push(StmtKind::Inst(Inst::Tma(inst)), loc);
    }

    /// Copies `src` into the box of `dst` starting at `offsets` (the box is `src`'s shape),
    /// asynchronously; elements outside `dst` are not written. Issue it from one thread
    /// (`single_thread`), after the tile's ordinary stores were published with
    /// `fence_proxy_async` and a `sync`; then `commit_group()` and `wait_group(..)` from the
    /// same thread before the tile is written again or the kernel ends.
    #[track_caller]
    pub fn shared_to_global<T: Element>(
        self,
        src: &SharedTensor<T>,
        dst: &GlobalTensor<T>,
        offsets: impl Scalars,
    ) {
        let loc = Loc::caller();
        let src = self
            .k
            .shared_operand(src, "tma.shared_to_global", false, loc);
        let inst = TmaInst::SharedToGlobal {
            src,
            dst: dst.id,
            offsets: offsets.into_exprs(),
            map: None,
        };
        self.k.push(StmtKind::Inst(Inst::Tma(inst)), loc);
    }

    /// Closes this thread's group of TMA stores issued since its last commit.
    #[track_caller]
    pub fn commit_group(self) {
        let loc = Loc::caller();
        self.k
            .push(StmtKind::Inst(Inst::Tma(TmaInst::CommitGroup)), loc);
    }

    /// Waits until at most `pending` of this thread's committed groups of TMA stores are
    /// still running: their writes are in global memory and their source tiles may be
    /// reused.
    #[track_caller]
    pub fn wait_group(self, pending: u32) {
        let loc = Loc::caller();
        let inst = TmaInst::WaitGroup {
            pending,
            read: false,
        };
        self.k.push(StmtKind::Inst(Inst::Tma(inst)), loc);
    }

    /// Waits until at most `pending` of this thread's committed groups of TMA stores are
    /// still reading their sources (Python Tilus's `wait_group(n, read=True)`): the source
    /// tiles may be reused, but global memory may not show the writes yet.
    #[track_caller]
    pub fn wait_group_read(self, pending: u32) {
        let loc = Loc::caller();
        let inst = TmaInst::WaitGroup {
            pending,
            read: true,
        };
        self.k.push(StmtKind::Inst(Inst::Tma(inst)), loc);
    }
}
