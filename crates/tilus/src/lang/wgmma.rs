//! The `k.wgmma()` namespace: Hopper's warp-group MMA, whose operands come straight from shared
//! memory through descriptors, asynchronously.

use super::{Element, Kernel, RegisterTensor, SharedTensor};
use crate::ir::{Inst, Loc, StmtKind, WgmmaA, WgmmaInst, WgmmaTarget};

/// What can be the `[M, K]` operand of [`Wgmma::mma`]: a shared tile (or one stage of one) or
/// a register tile.
pub trait WgmmaOperand<T> {
    /// The IR operand.
    fn operand(&self) -> WgmmaA;
    /// Why the handle cannot be used, if it cannot (a misused shared view).
    fn misuse(&self) -> Option<&'static str> {
        None
    }
}

impl<T> WgmmaOperand<T> for SharedTensor<T> {
    fn operand(&self) -> WgmmaA {
        WgmmaA::Shared(self.view())
    }
    fn misuse(&self) -> Option<&'static str> {
        SharedTensor::misuse(self)
    }
}

impl<T> WgmmaOperand<T> for RegisterTensor<T> {
    fn operand(&self) -> WgmmaA {
        WgmmaA::Register(self.view)
    }
}

/// Methods of `k.wgmma()`. Every one runs on a warp group: a block of 4 warps, or a
/// `warp_group(..)` scope.
pub struct Wgmma<'k> {
    k: &'k mut Kernel,
}

impl Kernel {
    /// The warp-group MMA instructions.
    pub fn wgmma(&mut self) -> Wgmma<'_> {
        Wgmma { k: self }
    }
}

impl Wgmma<'_> {
    fn push(self, i: WgmmaInst, loc: Loc) {
        self.k.push(StmtKind::Inst(Inst::Wgmma(i)), loc);
    }

    /// Makes earlier register writes (e.g. zeroing the accumulator) visible to the wgmmas that
    /// follow. Required before the first `mma` and after any other write to its accumulator.
    #[track_caller]
    pub fn fence(self) {
        self.push(WgmmaInst::Fence, Loc::caller())
    }

    /// `d += a @ b` on the tensor cores: `a` is `[M, K]`, `b` is `[K, N]`, `d` is the `[M, N]`
    /// f32 accumulator. Asynchronous: `d` may not be read until a `wait_group` covers the group
    /// this instruction is committed in.
    ///
    /// Each shared operand is used as stored, in either order (16-bit types):
    /// - `a`: an `[M, K]` tile (K-major), or a `[K, M]` tile seen through `.transpose()`
    ///   (MN-major: a column-major A as it lies in global memory), or registers;
    /// - `b`: an `[N, K]` tile seen through `.transpose()` (K-major: the rows of `Bᵀ`, as a
    ///   weight `[N, K]` is stored), or a `[K, N]` tile as it is (MN-major: a row-major B).
    ///
    /// The instruction's transpose bits say which; an MN-major tile wider than 128 bytes is
    /// stored in column blocks of 128 bytes (layout inference chooses it, and TMA copies
    /// fill it block by block), so no data is transposed anywhere.
    ///
    /// FP8 operands (`F8E4M3`, `F8E5M2`, mixed as the hardware allows) are K-major shared
    /// tiles only (`a` `[M, K]`, `b` an `[N, K]` tile seen through `.transpose()`), 32 of K
    /// per instruction, into an f32 accumulator.
    #[track_caller]
    pub fn mma<T: Element, U: Element, C: Element>(
        self,
        a: &impl WgmmaOperand<T>,
        b: &SharedTensor<U>,
        d: &RegisterTensor<C>,
    ) {
        self.mma_to(a, b, d, WgmmaTarget::all());
    }

    /// [`Wgmma::mma`] into `target`: a window of the accumulator's columns
    /// (`WgmmaTarget::window(start)`: `d[:, start .. start + N] += a @ b`, `N` being `b`'s
    /// columns, a multiple of 8; the other columns untouched), and/or overwriting instead of
    /// adding (`.overwriting()`: `d = a @ b`, no zeroing needed first). Work in flight on a
    /// window does not conflict with uses of the accumulator's other columns (slices of
    /// them), so a warp group can start a product in the columns it has finished with while
    /// it still reads the others.
    #[track_caller]
    pub fn mma_to<T: Element, U: Element, C: Element>(
        self,
        a: &impl WgmmaOperand<T>,
        b: &SharedTensor<U>,
        d: &RegisterTensor<C>,
        target: WgmmaTarget,
    ) {
        let loc = Loc::caller();
        if d.view.transposed {
            self.k.error(
                loc,
                "wgmma.mma: the accumulator must not be a transposed view",
            );
        }
        if let Some(why) = a.misuse() {
            self.k.error(loc, format!("wgmma.mma operand a: {why}"));
        }
        let b = self.k.shared_operand(b, "wgmma.mma operand b", true, loc);
        let i = WgmmaInst::Mma {
            a: a.operand(),
            b,
            d: d.view.tensor,
            target,
            plan: None,
        };
        self.push(i, loc)
    }

    /// Closes the group of wgmmas issued since the previous commit.
    #[track_caller]
    pub fn commit_group(self) {
        self.push(WgmmaInst::Commit, Loc::caller())
    }

    /// Waits until at most `n` committed groups are still running (`0`: all done).
    #[track_caller]
    pub fn wait_group(self, n: u32) {
        self.push(WgmmaInst::Wait(n), Loc::caller())
    }
}
