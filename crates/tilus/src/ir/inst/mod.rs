//! Instructions, one enum per family. Each family's file states what its instructions are
//! and what they do ([`Facts`]: effects, barriers, ordering, scalars, thread scope); each
//! stage's rule for a family lives in a file of the same name in `passes/rules/`, `codegen/`
//! and `interp/`, so adding an instruction touches its family and nothing else.

mod arithmetic;
mod cp_async;
pub(crate) mod debug;
pub mod facts;
mod mbarrier;
mod memory;
mod mma;
pub(crate) mod registers;
mod shape;
mod tma;
mod wgmma;

pub(crate) use arithmetic::{reduce_crosses_warps, reduce_locals, subsets};
pub use arithmetic::{ArithInst, BinaryOp, RandomKind, ReduceOp, ScanOp, TileExpr, UnaryOp};
pub use cp_async::CpAsyncInst;
pub use debug::DebugInst;
pub use facts::Facts;
pub use mbarrier::MbarrierInst;
pub use memory::{AtomicOp, MemoryInst};
pub use mma::MmaInst;
pub use registers::{launch_registers, sets_max_registers, RegistersInst};
pub use shape::{Repeat, ReshapeOp, ShapeInst};
pub use tma::TmaInst;
pub use wgmma::{b_mn_major, WgmmaA, WgmmaInst, WgmmaTarget};

use super::printer::Names;
use super::Program;

/// One tile-level instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Inst {
    /// Tensors: declare, allocate, free, load, store.
    Memory(MemoryInst),
    /// Asynchronous barriers.
    Mbarrier(MbarrierInst),
    /// The bulk tensor copy engine.
    Tma(TmaInst),
    /// Tensor-core products.
    Mma(MmaInst),
    /// Elementwise register arithmetic.
    Arith(ArithInst),
    /// Warp-group tensor-core products.
    Wgmma(WgmmaInst),
    /// Register tiles seen with another shape, or in part.
    Shape(ShapeInst),
    /// Printing from the kernel.
    Debug(DebugInst),
    /// Registers moved between warp groups.
    Registers(RegistersInst),
    /// Copies by threads into shared memory, waited for in groups.
    CpAsync(CpAsyncInst),
}

impl Inst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            Inst::Memory(i) => i.name(),
            Inst::Mbarrier(i) => i.name(),
            Inst::Tma(i) => i.name(),
            Inst::Mma(i) => i.name(),
            Inst::Arith(i) => i.name(),
            Inst::Wgmma(i) => i.name(),
            Inst::Shape(i) => i.name(),
            Inst::Debug(i) => i.name(),
            Inst::Registers(i) => i.name(),
            Inst::CpAsync(i) => i.name(),
        }
    }

    /// What the instruction reads, writes and needs, as its family states it.
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        match self {
            Inst::Memory(i) => i.facts(p),
            Inst::Mbarrier(i) => i.facts(p),
            Inst::Tma(i) => i.facts(p),
            Inst::Mma(i) => i.facts(p),
            Inst::Arith(i) => i.facts(p),
            Inst::Wgmma(i) => i.facts(p),
            Inst::Shape(i) => i.facts(p),
            Inst::Debug(i) => i.facts(p),
            Inst::Registers(i) => i.facts(p),
            Inst::CpAsync(i) => i.facts(p),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            Inst::Memory(i) => i.describe(n),
            Inst::Mbarrier(i) => i.describe(n),
            Inst::Tma(i) => i.describe(n),
            Inst::Mma(i) => i.describe(n),
            Inst::Arith(i) => i.describe(n),
            Inst::Wgmma(i) => i.describe(n),
            Inst::Shape(i) => i.describe(n),
            Inst::Debug(i) => i.describe(n),
            Inst::Registers(i) => i.describe(n),
            Inst::CpAsync(i) => i.describe(n),
        }
    }
}
