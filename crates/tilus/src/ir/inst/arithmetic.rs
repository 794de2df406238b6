//! The arithmetic family: elementwise operations on register tiles.

use crate::ir::{RegId, RegView};

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
}
