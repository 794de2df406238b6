//! Instructions, one enum per family. Each family's checks, layout rules, CUDA emitters and
//! (later) interpreter rules live in files of the same name in `passes/`, `codegen/` and
//! `interp/`, so adding an instruction touches one file per stage.

mod arithmetic;
mod mbarrier;
mod memory;
mod mma;
mod tma;
mod wgmma;

pub use arithmetic::ArithInst;
pub use mbarrier::MbarrierInst;
pub use memory::MemoryInst;
pub use mma::MmaInst;
pub use tma::TmaInst;
pub use wgmma::{WgmmaA, WgmmaInst};

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
        }
    }
}
