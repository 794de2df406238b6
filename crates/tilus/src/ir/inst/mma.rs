//! The mma family: tensor-core matrix products.

use crate::ir::{RegId, RegView};
use crate::layout::MmaPlan;

/// Tensor-core products.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MmaInst {
    /// `out = a @ b + c` with mma.sync m16n8k16 (16-bit inputs, f32 accumulation).
    Dot {
        /// `[M, K]` operand.
        a: RegView,
        /// `[K, N]` operand.
        b: RegView,
        /// `[M, N]` addend.
        c: RegView,
        /// `[M, N]` result (may be `c`'s tensor).
        out: RegId,
        /// How the product is cut into instructions; set by layout inference.
        plan: Option<MmaPlan>,
    },
}

impl MmaInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            MmaInst::Dot { .. } => "dot",
        }
    }
}
