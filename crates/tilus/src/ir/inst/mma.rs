//! The mma family: tensor-core matrix products.

use super::facts::{Access, Effect, Facts, Memory, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{Program, RegId, RegView};
use crate::layout::MmaPlan;
use std::fmt::Write;

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

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        match self {
            MmaInst::Dot { a, b, c, out, .. } => {
                let read = |v: &RegView, role| {
                    Effect::now(Memory::Register(v.tensor), Access::Read).role(role)
                };
                Facts::scoped(ThreadScope::Warps)
                    .effect(read(a, "operand a"))
                    .effect(read(b, "operand b"))
                    .effect(read(c, "operand c"))
                    .effect(Effect::now(Memory::Register(*out), Access::Write).role("operand out"))
            }
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            MmaInst::Dot { a, b, c, out, plan } => {
                let mut t = format!(
                    "{} = dot({}, {}, {})",
                    n.p.register(*out).name,
                    n.view(a),
                    n.view(b),
                    n.view(c)
                );
                if let Some(pl) = plan {
                    let _ = write!(
                        t,
                        " mma=m16n8k16 warps={}x{} repeat={}x{}x{}",
                        pl.warps_m, pl.warps_n, pl.rep_m, pl.rep_n, pl.rep_k
                    );
                }
                t
            }
        }
    }
}
