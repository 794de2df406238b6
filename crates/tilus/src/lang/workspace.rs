//! Global workspaces the kernel owns (Python Tilus's `global_tensor`): scratch in global memory
//! that the host allocates once, zeroed, and passes launch after launch — the flags of a
//! split-K sum, the semaphores blocks take turns on, counters — so that the caller allocates
//! nothing. A workspace declared `zeroed` is a promise that every launch leaves it all zeros,
//! so the next finds it zeroed without a memset; the interpreter checks the promise.

use super::{Element, GlobalTensor, Kernel, PtrVal, Scalars};
use crate::ir::{BinOp, DType, Expr, Loc, VarKind, Workspace};

impl Kernel {
    /// A global tensor of `shape` (runtime arguments, constants and `let`s of them: the host
    /// sizes it before the launch) in a buffer the kernel owns, row-major, as
    /// [`Kernel::global_view`] over it. It is allocated zeroed on the first launch (again,
    /// larger and zeroed, when a launch needs more) and kept between launches; launches of one
    /// kernel on several streams at once share it.
    ///
    /// With `zeroed`, the kernel promises to leave it all zeros when it ends (a semaphore
    /// released back to 0, a counter reset by the block that read it last): each launch then
    /// finds it zeroed. Without, a launch finds what the last one left. The interpreter runs
    /// every launch on a fresh zeroed workspace and reports a `zeroed` one that is not all
    /// zeros at the end (`Fault::DirtyWorkspace`, at this line).
    ///
    /// ```
    /// use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, m: Val) {
    /// // one flag per row block, back to 0 when the kernel ends
    /// let flags = k.global_tensor::<i32>([cdiv(m, 128)], true);
    /// # }
    /// ```
    #[track_caller]
    pub fn global_tensor<T: Element>(
        &mut self,
        shape: impl Scalars,
        zeroed: bool,
    ) -> GlobalTensor<T> {
        let loc = Loc::caller();
        let dims = shape.into_exprs();
        let elems = dims.iter().fold(Expr::Int(1, DType::I64), |a, d| {
            Expr::binary(BinOp::Mul, a, Expr::Cast(DType::I64, Box::new(d.clone())))
        });
        let elems = match self.host_expr(&elems) {
            Ok(e) => e,
            Err(what) => {
                let what = self.kernel_value_name(what);
                self.error(
                    loc,
                    format!(
                        "global_tensor: its shape must be known to the host before the launch \
                         (runtime arguments, constants and `let`s of them), but it reads {what}, \
                         which the kernel computes"
                    ),
                );
                Expr::Int(1, DType::I64)
            }
        };
        let name = self.fresh_name("ws");
        let kind = VarKind::Workspace(Box::new(Workspace { elems, zeroed, loc }));
        let var = self.new_var(name, DType::U64, kind);
        self.prog.vars[var.0 as usize].pointee = Some(T::DTYPE);
        let dims: Vec<super::Scalar> = dims.into_iter().map(super::Scalar).collect();
        self.global_view(PtrVal::<T>::of_var(var), dims)
    }
}
