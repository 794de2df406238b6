//! Scatters (the memory family): each element of a register tile to coordinates of a global
//! view that other tiles hold, one per dimension of the view: a KV-cache append through a
//! page table, a permutation of tokens, a histogram (`atomic_add_at`).

use super::arith::{IntoTile, Tile};
use super::{Element, GlobalTensor, Kernel, RegisterTensor};
use crate::ir::{ArithInst, Inst, Loc, MemoryInst, RegView, StmtKind};

/// The coordinates of a scatter: a tuple of `i32` tiles or expressions, one per dimension of
/// the view (`(rows, cols)`), or an array of one kind.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of coordinate tiles",
    note = "give one `i32` tile or expression per dimension of the view, as a tuple: `(rows, \
            cols)`"
)]
pub trait IndexTiles {
    /// The expressions, outermost dimension first.
    fn into_tiles(self) -> Vec<Tile<i32>>;
}

macro_rules! index_tuple {
    ($($t:ident $v:ident),+) => {
        impl<$($t: IntoTile<i32>),+> IndexTiles for ($($t,)+) {
            fn into_tiles(self) -> Vec<Tile<i32>> {
                let ($($v,)+) = self;
                vec![$($v.into_tile()),+]
            }
        }
    };
}
index_tuple!(A a);
index_tuple!(A a, B b);
index_tuple!(A a, B b, C c);
index_tuple!(A a, B b, C c, D d);

impl<T: IntoTile<i32>, const N: usize> IndexTiles for [T; N] {
    fn into_tiles(self) -> Vec<Tile<i32>> {
        self.into_iter().map(|t| t.into_tile()).collect()
    }
}

impl Kernel {
    /// Stores each element of `src` at the coordinates of `dst` that `at` gives it: one `i32`
    /// tile or expression per dimension of the view, each broadcast to `src`'s shape
    /// (`k.arange(..)` plus offsets, or indices loaded from a table). Elements whose
    /// coordinates fall outside the view are skipped; each element is stored once, by one
    /// thread. Two elements at the same coordinates: one of them lands (which, the GPU does
    /// not say).
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, cache: GlobalTensor<f32>, kv: RegisterTensor<f32>, slot: RegisterTensor<i32>) {
    /// // append 16 new rows of 64 to a cache of rows, each at the slot its table gave it
    /// let cols = k.arange([1, 64], 1);
    /// k.store_global_at(&cache, &kv, (slot, cols));
    /// # }
    /// ```
    #[track_caller]
    pub fn store_global_at<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        at: impl IndexTiles,
    ) {
        self.scatter(dst, src, at, false, Loc::caller());
    }

    /// Atomically adds each element of `src` at the coordinates of `dst` that `at` gives it,
    /// as [`Kernel::store_global_at`] stores; elements at the same coordinates all add
    /// (a histogram, a scatter-add of gradients). Element types as `atomic_add`.
    #[track_caller]
    pub fn atomic_add_at<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        at: impl IndexTiles,
    ) {
        self.scatter(dst, src, at, true, Loc::caller());
    }

    fn scatter<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        at: impl IndexTiles,
        add: bool,
        loc: Loc,
    ) {
        let shape = self.prog.view_shape(&src.view);
        let index: Vec<RegView> = at
            .into_tiles()
            .into_iter()
            .map(|t| {
                // each coordinate as an i32 tile of the values' shape (its operands broadcast)
                let out = self.new_register::<i32>(shape.clone(), loc);
                let inst = ArithInst::Map { expr: t.e, out };
                self.push(StmtKind::Inst(Inst::Arith(inst)), loc);
                RegView::plain(out)
            })
            .collect();
        let inst = MemoryInst::ScatterGlobal {
            dst: dst.id,
            src: src.view,
            index,
            add,
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
    }
}
