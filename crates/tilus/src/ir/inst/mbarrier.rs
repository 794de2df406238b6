//! The mbarrier family: asynchronous barriers with arrival and transaction counts.

use crate::ir::{BarrierArrayId, BarrierRef, Expr};

/// Barrier allocation, arrival and waiting.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MbarrierInst {
    /// Allocates and initializes an array of mbarriers (block scope).
    Alloc(BarrierArrayId),
    /// Each executing thread arrives once.
    Arrive(BarrierRef),
    /// Each executing thread arrives once and adds `bytes` to the expected transaction count.
    ArriveExpectTx {
        /// The barrier.
        bar: BarrierRef,
        /// Bytes the async copies tracked by this phase will deliver.
        bytes: Expr,
    },
    /// Blocks until the barrier's phase with parity `phase` has completed.
    Wait {
        /// The barrier.
        bar: BarrierRef,
        /// Parity of the phase to wait for.
        phase: Expr,
    },
}

impl MbarrierInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            MbarrierInst::Alloc(_) => "mbarrier.alloc",
            MbarrierInst::Arrive(_) => "mbarrier.arrive",
            MbarrierInst::ArriveExpectTx { .. } => "mbarrier.arrive_and_expect_tx",
            MbarrierInst::Wait { .. } => "mbarrier.wait",
        }
    }

    /// The barrier the instruction acts on, if it acts on one.
    pub fn barrier(&self) -> Option<&BarrierRef> {
        match self {
            MbarrierInst::Alloc(_) => None,
            MbarrierInst::Arrive(b) => Some(b),
            MbarrierInst::ArriveExpectTx { bar, .. } | MbarrierInst::Wait { bar, .. } => Some(bar),
        }
    }
}
