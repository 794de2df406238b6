//! Tensor-core products.

use super::{Element, Kernel, RegisterTensor};
use crate::ir::{Inst, Loc, MmaInst, StmtKind};

impl Kernel {
    /// `out = a @ b + c` on the tensor cores: `a` is `[M, K]`, `b` is `[K, N]`, `c` and `out`
    /// are `[M, N]` (pass the accumulator as both to accumulate in place). With 16-bit inputs
    /// and an f32 accumulator this lowers to mma.sync m16n8k16; the operands' layouts are
    /// inferred from it.
    #[track_caller]
    pub fn dot<A: Element, C: Element>(
        &mut self,
        a: &RegisterTensor<A>,
        b: &RegisterTensor<A>,
        c: &RegisterTensor<C>,
        out: &RegisterTensor<C>,
    ) {
        let loc = Loc::caller();
        if out.view.transposed {
            self.error(loc, "dot: the output must not be a transposed view");
        }
        let inst = MmaInst::Dot {
            a: a.view,
            b: b.view,
            c: c.view,
            out: out.view.tensor,
            plan: None,
        };
        self.push(StmtKind::Inst(Inst::Mma(inst)), loc);
    }
}
