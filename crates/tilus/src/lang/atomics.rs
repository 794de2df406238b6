//! Global atomics (the memory family): read-modify-writes of global memory, elementwise from
//! register tiles into the box of a view, or of one element by one thread.
//!
//! The tile forms update every element of the box that lies inside the view (each once, by one
//! thread: threads holding replicated copies of an element do not repeat the update) and
//! return the old values where the operation is about them (exchange, compare-and-swap). The
//! scalar forms run on one thread (inside `single_thread`) and return the old value as a
//! [`Val`] of the view's type, usable in that thread's later scalar expressions.
//!
//! Element types: `add` takes f32, i32, u32, f16 and bf16 tiles; `min`, `max`, `exchange`
//! and `cas` take f32, i32 and u32 tiles (f32 `min`/`max` order values as numbers, with
//! `-0.0 < +0.0`; `cas` compares f32 bits); the scalar forms take i32 and u32 views.

use super::{Element, GlobalTensor, Kernel, RegisterTensor, Scalar, Scalars, Val};
use crate::ir::{AtomicOp, DType, Expr, Inst, Loc, MemoryInst, StmtKind, VarKind};

impl Kernel {
    /// `fence.acq_rel.gpu` (CUDA's `__threadfence()`): this thread's global-memory accesses
    /// before the fence are ordered before its accesses after it, as every thread of the GPU
    /// sees them. The atomics here are relaxed, so a pattern such as "each block stores its
    /// partial, then takes a ticket; the block with the last ticket sums the partials" needs
    /// a fence between the stores and the ticket, and one between the last ticket and the
    /// reads. Any thread, any scope.
    #[track_caller]
    pub fn fence_gpu(&mut self) {
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::FenceGpu)),
            Loc::caller(),
        );
    }

    fn atomic_tile<T: Element>(
        &mut self,
        op: AtomicOp,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        compare: Option<&RegisterTensor<T>>,
        offsets: impl Scalars,
        loc: Loc,
    ) -> Option<RegisterTensor<T>> {
        let out = op.returns_old().then(|| {
            let shape = self.prog.view_shape(&src.view);
            self.new_register::<T>(shape, loc)
        });
        let inst = MemoryInst::AtomicGlobal {
            op,
            dst: dst.id,
            src: src.view,
            compare: compare.map(|c| c.view),
            out,
            offsets: offsets.into_exprs(),
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
        out.map(RegisterTensor::plain)
    }

    /// Atomically adds every element of `src` into the box of `dst` at `offsets` (outermost
    /// first); elements outside the view are skipped. Blocks may add into the same elements
    /// (split-K sums, accumulations across blocks).
    #[track_caller]
    pub fn atomic_add<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) {
        self.atomic_tile(AtomicOp::Add, dst, src, None, offsets, Loc::caller());
    }

    /// Atomically replaces every element of the box of `dst` at `offsets` by the smaller of it
    /// and the element of `src`; elements outside the view are skipped.
    #[track_caller]
    pub fn atomic_min<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) {
        self.atomic_tile(AtomicOp::Min, dst, src, None, offsets, Loc::caller());
    }

    /// Atomically replaces every element of the box of `dst` at `offsets` by the larger of it
    /// and the element of `src`; elements outside the view are skipped.
    #[track_caller]
    pub fn atomic_max<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) {
        self.atomic_tile(AtomicOp::Max, dst, src, None, offsets, Loc::caller());
    }

    /// Atomically writes `src` into the box of `dst` at `offsets` and returns a new tile of
    /// the values it replaced (0 for elements outside the view, which are not written).
    #[track_caller]
    pub fn atomic_exchange<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let out = self.atomic_tile(AtomicOp::Exchange, dst, src, None, offsets, loc);
        out.expect("exchange returns the old values")
    }

    /// Atomic compare-and-swap of every element of the box of `dst` at `offsets`: where the
    /// element equals the one of `compare` (bitwise for f32) it becomes the one of `value`.
    /// Returns a new tile of the old values (0 outside the view): an element was swapped
    /// where the old value equals `compare`.
    #[track_caller]
    pub fn atomic_cas<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        compare: &RegisterTensor<T>,
        value: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let out = self.atomic_tile(AtomicOp::Cas, dst, value, Some(compare), offsets, loc);
        out.expect("compare-and-swap returns the old values")
    }

    fn atomic_scalar<T: Element>(
        &mut self,
        op: AtomicOp,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        compare: Option<Scalar>,
        value: Scalar,
        loc: Loc,
    ) -> Val {
        let dtype = T::DTYPE;
        let name = self.fresh_name("old");
        let out = self.new_var(name, dtype, VarKind::Let);
        let inst = MemoryInst::AtomicScalar {
            op,
            dst: dst.id,
            index: index.into_exprs(),
            value: typed(value.0, dtype),
            compare: compare.map(|c| typed(c.0, dtype)),
            out,
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
        Val::var(out, dtype)
    }

    /// Atomically adds `value` to the element of `dst` at `index` and returns the old value.
    /// Runs on one thread (inside `single_thread`); i32 and u32 views.
    #[track_caller]
    pub fn atomic_add_scalar<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) -> Val {
        let loc = Loc::caller();
        self.atomic_scalar(AtomicOp::Add, dst, index, None, value.into(), loc)
    }

    /// Atomically replaces the element of `dst` at `index` by the smaller of it and `value`
    /// and returns the old value. One thread; i32 and u32 views.
    #[track_caller]
    pub fn atomic_min_scalar<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) -> Val {
        let loc = Loc::caller();
        self.atomic_scalar(AtomicOp::Min, dst, index, None, value.into(), loc)
    }

    /// Atomically replaces the element of `dst` at `index` by the larger of it and `value`
    /// and returns the old value. One thread; i32 and u32 views.
    #[track_caller]
    pub fn atomic_max_scalar<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) -> Val {
        let loc = Loc::caller();
        self.atomic_scalar(AtomicOp::Max, dst, index, None, value.into(), loc)
    }

    /// Atomically writes `value` into the element of `dst` at `index` and returns the old
    /// value. One thread; i32 and u32 views.
    #[track_caller]
    pub fn atomic_exchange_scalar<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) -> Val {
        let loc = Loc::caller();
        self.atomic_scalar(AtomicOp::Exchange, dst, index, None, value.into(), loc)
    }

    /// Atomic compare-and-swap of the element of `dst` at `index`: if it equals `compare` it
    /// becomes `value`. Returns the old value (the swap happened when it equals `compare`).
    /// One thread; i32 and u32 views.
    #[track_caller]
    pub fn atomic_cas_scalar<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        index: impl Scalars,
        compare: impl Into<Scalar>,
        value: impl Into<Scalar>,
    ) -> Val {
        let loc = Loc::caller();
        let c = Some(compare.into());
        self.atomic_scalar(AtomicOp::Cas, dst, index, c, value.into(), loc)
    }
}

/// A scalar operand in the view's type: literals are retyped, other expressions converted.
fn typed(e: Expr, dtype: DType) -> Expr {
    match e {
        Expr::Int(v, _) if dtype.is_int() => Expr::Int(crate::ir::wrap_to(v, dtype), dtype),
        Expr::Int(v, _) if dtype.is_float() => Expr::Float((v as f64).to_bits(), dtype),
        e if e.dtype() == dtype => e,
        e => Expr::Cast(dtype, Box::new(e)),
    }
}

impl Kernel {
    /// Waits until the element of `sem` at `index` holds `value`, for the whole block: one
    /// thread spins on it (an atomic read), the block meets, and every thread runs
    /// `fence_gpu` (acquire) so that what the releasing block published is seen. With
    /// [`Kernel::release_semaphore`], blocks take turns: block `b` waits for `b`, works, and
    /// releases `b + 1` (a serial reduction, a fix-up in order).
    ///
    /// The interpreter runs such a kernel's blocks one after another in block order, so a
    /// block that waits for a later one never sees its value: a `while` that does not end
    /// (`RunawayLoop`); on the GPU, waiting for a block that is not resident deadlocks too.
    #[track_caller]
    pub fn lock_semaphore(
        &mut self,
        sem: &GlobalTensor<i32>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) {
        let index: Vec<Scalar> = index.into_exprs().into_iter().map(Scalar).collect();
        let value = value.into();
        self.single_thread(|k| {
            let seen = k.atomic_add_scalar(sem, index.clone(), 0);
            let now = k.var_i32(seen);
            k.while_(now.ne_(value.clone()), |k| {
                let again = k.atomic_add_scalar(sem, index.clone(), 0);
                k.assign(now, again);
            });
        });
        self.sync();
        self.fence_gpu();
    }

    /// Sets the element of `sem` at `index` to `value` once the whole block's global writes
    /// are published: the block meets, every thread runs `fence_gpu` (release), and one
    /// thread stores the value atomically. See [`Kernel::lock_semaphore`].
    #[track_caller]
    pub fn release_semaphore(
        &mut self,
        sem: &GlobalTensor<i32>,
        index: impl Scalars,
        value: impl Into<Scalar>,
    ) {
        let index: Vec<Scalar> = index.into_exprs().into_iter().map(Scalar).collect();
        let value = value.into();
        self.sync();
        self.fence_gpu();
        self.single_thread(|k| {
            k.atomic_exchange_scalar(sem, index, value);
        });
    }
}
