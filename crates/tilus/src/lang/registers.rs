//! Moving registers between warp groups ([`Kernel::set_max_registers`]), and fixing how a
//! tile is spread over the threads ([`Kernel::annotate_layout`]).

use super::kernel::Kernel;
use super::{Element, RegisterTensor};
use crate::ir::{Inst, Loc, RegistersInst, StmtKind};
use crate::layout::RegisterLayout;

impl Kernel {
    /// From here on, every thread of the current warp groups owns `n` registers (`setmaxnreg`,
    /// sm_90a). Warp-specialized kernels call it first thing in each role: a producer that
    /// only issues copies gives registers back (`k.set_max_registers(40)`), consumers that
    /// hold large accumulators take them (`k.set_max_registers(232)`), so the consumers'
    /// tiles fit without spilling.
    ///
    /// The verifier checks that `n` is a multiple of 8 from 24 to 256, that the group is made
    /// of whole warp groups (128 threads each, aligned) and not inside a condition that may
    /// differ between its threads, that the block is made of whole warp groups, and that the
    /// counts asked for fit in the block's pool: what its threads were given at launch
    /// ([`crate::ir::launch_registers`], 65536 registers over the block's threads and
    /// `min_blocks_per_sm`, in units of 8, at most 255 each). A program that calls it keeps
    /// the occupancy it was written with (no occupancy search).
    #[track_caller]
    pub fn set_max_registers(&mut self, n: u32) {
        self.push(
            StmtKind::Inst(Inst::Registers(RegistersInst::SetMax(n))),
            Loc::caller(),
        );
    }

    /// The extents of a register tile (of the view: a transposed view's are swapped).
    pub fn shape_of<T: Element>(&self, t: &RegisterTensor<T>) -> Vec<i64> {
        self.prog.view_shape(&t.view)
    }

    /// Fixes the layout of `t`: layout inference starts from it, as from a tensor-core
    /// operand's, and every other instruction on `t` adapts to it or says at its line that it
    /// needs another (then `k.convert_layout` moves the data). For a tile whose best layout
    /// the inference would not find by itself: the threads along the dimension a later
    /// reduction or scan runs on, or a conversion made free.
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # use tilus::layout::RegisterLayout;
    /// # fn body(k: &mut Kernel, x: RegisterTensor<f32>) {
    /// // a [128, 4] tile: one row of 4 per thread, 128 threads down the rows
    /// let rows = RegisterLayout::spatial(&[128, 1]).compose(&RegisterLayout::local(&[1, 4]));
    /// k.annotate_layout(&x, rows);
    /// # }
    /// ```
    ///
    /// The verifier checks that the layout has the tile's shape and spreads it over the
    /// tile's group (every element held, none twice, no more threads than the group has).
    #[track_caller]
    pub fn annotate_layout<T: Element>(&mut self, t: &RegisterTensor<T>, layout: RegisterLayout) {
        let loc = Loc::caller();
        if t.view.transposed {
            self.error(
                loc,
                "annotate_layout: the tile itself, not a transposed view",
            );
        }
        let inst = RegistersInst::Layout {
            tile: t.view.tensor,
            layout,
        };
        self.push(StmtKind::Inst(Inst::Registers(inst)), loc);
    }
}
