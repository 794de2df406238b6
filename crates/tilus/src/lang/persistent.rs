//! Persistent grids: as many blocks as the device runs at once (one per multiprocessor), each
//! looping over its share of the work, instead of one block per work item. A block that
//! stays keeps its barriers, its pipeline and its registers from one item to the next, so the
//! next item's loads can start while the last one's results are being stored.

use super::{Kernel, Scalar, Val};
use crate::ir::{DType, Loc, VarKind};

impl Kernel {
    /// Launches a persistent grid along x for `work` items (tiles): at most one block per
    /// multiprocessor (the device's count read at launch; the interpreter's comes from its
    /// options), and the fewest blocks that take as many rounds over the items, so that
    /// every block gets the same number of items or one fewer
    /// ([`crate::ir::LaunchPlan::launched_grid`]). Returns the number of blocks launched, the
    /// stride of the loop over the items:
    ///
    /// `k.for_range(k.block_idx().x, work, blocks, |k, item| ..)`
    ///
    /// `work` is computed by the host from runtime arguments, constants and `let`s of them.
    #[track_caller]
    pub fn persistent_blocks(&mut self, work: impl Into<Scalar>) -> Val {
        let loc = Loc::caller();
        let work = work.into();
        self.blocks_at(vec![work.0], loc);
        self.prog.persistent = true;
        let name = self.fresh_name("blocks");
        let id = self.new_var(name, DType::I32, VarKind::LaunchedBlocks);
        Val::var(id, DType::I32)
    }
}
