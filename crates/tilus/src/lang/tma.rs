//! The `k.tma()` namespace: the bulk tensor copy engine.

use super::{Barrier, Element, GlobalTensor, Kernel, Scalars, SharedTensor};
use crate::ir::{BarrierRef, Inst, Loc, StmtKind, TmaInst};

/// Methods of `k.tma()`.
pub struct Tma<'k> {
    k: &'k mut Kernel,
}

impl Kernel {
    /// The TMA instructions.
    pub fn tma(&mut self) -> Tma<'_> {
        Tma { k: self }
    }
}

impl Tma<'_> {
    /// Copies the box of `src` starting at `offsets` (the box is `dst`'s shape) into `dst`,
    /// asynchronously; the bytes complete on `bar`. The tensor map is built for you, with the
    /// swizzle of `dst`'s layout. Elements outside `src` arrive as zeros.
    #[track_caller]
    pub fn global_to_shared<T: Element>(
        self,
        src: &GlobalTensor<T>,
        dst: &SharedTensor<T>,
        offsets: impl Scalars,
        bar: Barrier,
    ) {
        let loc = Loc::caller();
        self.k.plain_shared(dst, "tma.global_to_shared", loc);
        let offsets = offsets.into_exprs();
        let bar: BarrierRef = bar.to_ir();
        let inst = TmaInst::GlobalToShared {
            src: src.id,
            dst: dst.id,
            offsets,
            bar,
            map: None,
        };
        self.k.push(StmtKind::Inst(Inst::Tma(inst)), loc);
    }
}
