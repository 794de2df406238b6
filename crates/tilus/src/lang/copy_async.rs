//! Copies from global to shared memory by the threads themselves (`cp.async`), for views TMA
//! cannot read (rows that do not start on 16-byte boundaries, strides of any size, gathers of
//! rows at computed offsets) and kernels without mbarriers: each thread of the group copies
//! its part of the tile asynchronously, into its open group; `copy_async_commit_group` closes
//! the group and `copy_async_wait_group(n)` waits until at most `n` groups are still running.

use super::{Element, GlobalTensor, Kernel, Scalars, SharedTensor};
use crate::ir::{CpAsyncInst, Inst, Loc, StmtKind};

impl Kernel {
    /// Copies the box of `src` starting at `offsets` (the box is `dst`'s shape; `dst` may be
    /// one stage of a staged tile, `s.at(i)`) into `dst`, asynchronously: every thread of the
    /// current group copies its vectors of the box (16, 8 or 4 bytes each, as the view's
    /// alignment allows), and elements outside `src` arrive as zeros. The view, the tile and
    /// `offsets` have the same rank.
    ///
    /// The tile may be used once the copy is covered: `copy_async_commit_group()`, then
    /// `copy_async_wait_group(n)` by the same threads, then `sync()` so that every thread sees
    /// every other thread's part (and `fence_proxy_async()` before that `sync` when wgmma or
    /// TMA reads the tile). Using it earlier is an error of the verifier and a fault of the
    /// interpreter, and so is a kernel that ends with a copy in flight.
    #[track_caller]
    pub fn copy_async<T: Element>(
        &mut self,
        src: &GlobalTensor<T>,
        offsets: impl Scalars,
        dst: &SharedTensor<T>,
    ) {
        let loc = Loc::caller();
        let dst = self.shared_operand(dst, "copy_async", false, loc);
        let inst = CpAsyncInst::Copy {
            src: src.id,
            dst,
            offsets: offsets.into_exprs(),
            threads: self.group_threads(),
            vector: None,
        };
        self.push(StmtKind::Inst(Inst::CpAsync(inst)), loc);
    }

    /// Closes each thread's group of copies issued since its last commit.
    #[track_caller]
    pub fn copy_async_commit_group(&mut self) {
        let loc = Loc::caller();
        self.push(StmtKind::Inst(Inst::CpAsync(CpAsyncInst::Commit)), loc);
    }

    /// Waits until at most `pending` of each thread's committed groups of copies are still
    /// running (`0`: all of them have landed). Other threads' copies are visible after a
    /// `sync()` that follows.
    #[track_caller]
    pub fn copy_async_wait_group(&mut self, pending: u32) {
        let loc = Loc::caller();
        let inst = CpAsyncInst::Wait { pending };
        self.push(StmtKind::Inst(Inst::CpAsync(inst)), loc);
    }

    /// Commits the open group and waits for every copy (`commit_group` then `wait_group(0)`).
    #[track_caller]
    pub fn copy_async_wait_all(&mut self) {
        let loc = Loc::caller();
        self.push(StmtKind::Inst(Inst::CpAsync(CpAsyncInst::Commit)), loc);
        let inst = CpAsyncInst::Wait { pending: 0 };
        self.push(StmtKind::Inst(Inst::CpAsync(inst)), loc);
    }
}
