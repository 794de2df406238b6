//! The TMA family: bulk tensor copies by the copy engine.

use crate::ir::{BarrierRef, Expr, GlobalId, SharedId};

/// Bulk tensor copies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TmaInst {
    /// Copies the box of `src` at `offsets` (the box is `dst`'s shape) into `dst`
    /// asynchronously; the bytes complete on `bar`'s transaction count. Out-of-bounds
    /// elements arrive as zeros.
    GlobalToShared {
        /// Source view.
        src: GlobalId,
        /// Destination tile.
        dst: SharedId,
        /// Position of the box in the view, outermost dimension first.
        offsets: Vec<Expr>,
        /// Barrier that counts the bytes.
        bar: BarrierRef,
    },
}

impl TmaInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            TmaInst::GlobalToShared { .. } => "tma.global_to_shared",
        }
    }
}
