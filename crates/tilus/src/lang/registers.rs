//! Moving registers between warp groups: [`Kernel::set_max_registers`].

use super::kernel::Kernel;
use crate::ir::{Inst, Loc, RegistersInst, StmtKind};

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
}
