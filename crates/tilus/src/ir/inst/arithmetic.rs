//! The arithmetic family: elementwise operations on register tiles.

use super::facts::{Access, Effect, Facts, Memory};
use crate::ir::printer::Names;
use crate::ir::{Program, RegId, RegView};

/// Elementwise register operations.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArithInst {
    /// Converts each element to `out`'s element type (round to nearest even).
    Cast {
        /// Source.
        src: RegView,
        /// Destination, same shape and layout.
        out: RegId,
    },
}

impl ArithInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            ArithInst::Cast { .. } => "cast",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        match self {
            ArithInst::Cast { src, out } => Facts::default()
                .effect(Effect::now(Memory::Register(src.tensor), Access::Read))
                .effect(Effect::now(Memory::Register(*out), Access::Declare)),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            ArithInst::Cast { src, out } => {
                let d = n.p.register(*out);
                format!("{} = cast<{}>({})", d.name, d.dtype, n.view(src))
            }
        }
    }
}
