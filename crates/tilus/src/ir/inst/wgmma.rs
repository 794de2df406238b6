//! The wgmma family: Hopper's warp-group tensor-core products, which read their operands from
//! shared memory through descriptors and run asynchronously until waited for.

use crate::ir::{RegId, RegView, SharedView};
use crate::layout::WgmmaPlan;

/// Where the `[M, K]` operand of a wgmma comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaA {
    /// A shared tile (read through a descriptor).
    Shared(SharedView),
    /// A register tile in the warp group's A-fragment layout.
    Register(RegView),
}

/// Warp-group MMA instructions (sm_90a).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaInst {
    /// `wgmma.fence`: orders earlier register writes to the accumulator before the next wgmma.
    Fence,
    /// `d += a @ b` issued by the warp group; asynchronous until a `wait_group` covers it.
    Mma {
        /// `[M, K]` operand.
        a: WgmmaA,
        /// `[K, N]` operand: a shared tile seen through a transpose (K-major).
        b: SharedView,
        /// `[M, N]` accumulator.
        d: RegId,
        /// How the product is cut into instructions; set by layout inference.
        plan: Option<WgmmaPlan>,
    },
    /// `wgmma.commit_group`: closes the group of wgmmas issued since the last commit.
    Commit,
    /// `wgmma.wait_group N`: waits until at most `N` committed groups are still running.
    Wait(u32),
}

impl WgmmaInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            WgmmaInst::Fence => "wgmma.fence",
            WgmmaInst::Mma { .. } => "wgmma.mma",
            WgmmaInst::Commit => "wgmma.commit_group",
            WgmmaInst::Wait(_) => "wgmma.wait_group",
        }
    }
}
