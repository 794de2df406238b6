//! The registers family: how many registers the threads of a warp group own, and how a tile
//! is spread over them (`annotate_layout`: a layout the script fixes). A block starts
//! with the same allotment per thread everywhere (what its size and occupancy leave); warp
//! groups that need few (a producer issuing copies) give registers back to the block's pool
//! and warp groups that need many (consumers holding accumulators) take them
//! (`setmaxnreg`, sm_90a).

use super::facts::{Facts, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::Program;

/// The smallest and largest per-thread counts `setmaxnreg` accepts (multiples of 8).
pub const MAX_REGISTERS_RANGE: std::ops::RangeInclusive<u32> = 24..=256;

/// Registers of one multiprocessor, shared by its resident blocks.
pub const SM_REGISTERS: u32 = 65536;

/// Register-file instructions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegistersInst {
    /// Every thread of the executing warp groups owns `n` registers from here on.
    SetMax(u32),
    /// `tile` has `layout`, as the script says: layout inference starts from it like a
    /// tensor-core operand's (anything that needs another layout is a diagnostic naming this
    /// line). No code.
    Layout {
        /// The tile.
        tile: crate::ir::RegId,
        /// Its layout.
        layout: crate::layout::RegisterLayout,
    },
}

impl RegistersInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            RegistersInst::SetMax(_) => "set_max_registers",
            RegistersInst::Layout { .. } => "annotate_layout",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]): whole warp groups, no
    /// memory.
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        match self {
            RegistersInst::SetMax(_) => Facts::scoped(ThreadScope::WarpGroups),
            RegistersInst::Layout { .. } => Facts::default(),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            RegistersInst::SetMax(n) => format!("set_max_registers({n})"),
            RegistersInst::Layout { tile, layout } => {
                format!("annotate_layout({}, {layout})", n.p.register(*tile).name)
            }
        }
    }
}

/// Registers per thread every warp starts with: what `__launch_bounds__(threads, min_blocks)`
/// lets the compiler use, allocated in units of 8 per thread and at most 255 per thread. A
/// kernel that moves registers between warp groups is compiled to exactly this count (the
/// compiler must know the count at entry), so it is also where each `set_max_registers`
/// starts from: below it the warp group gives registers back, above it it takes them.
pub fn launch_registers(p: &Program) -> u32 {
    let threads = p.threads().max(1) * p.min_blocks.unwrap_or(1).max(1);
    (SM_REGISTERS / threads / 8 * 8).min(255)
}

/// Whether the program moves registers between warp groups anywhere.
pub fn sets_max_registers(p: &Program) -> bool {
    let mut found = false;
    p.walk(&mut |s| {
        if let crate::ir::StmtKind::Inst(super::Inst::Registers(RegistersInst::SetMax(_))) = &s.kind
        {
            found = true;
        }
    });
    found
}
