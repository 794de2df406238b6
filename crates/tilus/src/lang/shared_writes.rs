//! Ordinary writes to shared memory, and the fence that publishes them to the async proxy.
//!
//! TMA and wgmma read shared memory through the *async proxy*, which does not see what threads
//! wrote with ordinary stores until those threads run `fence_proxy_async` (and a barrier orders
//! the fence before the asynchronous read). Forgetting the fence gives stale reads that no test
//! at one size may catch; Tilus reports it when it can see it, statically and in the
//! interpreter.

use super::{Element, Kernel, RegisterTensor, SharedTensor};
use crate::ir::{Inst, Loc, MemoryInst, StmtKind};

impl Kernel {
    /// Writes a register tile into a shared tile (or one stage of it) of the same shape, with
    /// ordinary stores.
    #[track_caller]
    pub fn store_shared<T: Element>(&mut self, dst: &SharedTensor<T>, src: &RegisterTensor<T>) {
        let loc = Loc::caller();
        let dst = self.shared_operand(dst, "store_shared", false, loc);
        let inst = MemoryInst::StoreShared { dst, src: src.view };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
    }

    /// `fence.proxy.async.shared::cta`: this thread's earlier shared-memory stores become
    /// visible to TMA and wgmma (after a barrier that orders them).
    #[track_caller]
    pub fn fence_proxy_async(&mut self) {
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::FenceProxyAsync)),
            Loc::caller(),
        );
    }
}
