//! The wgmma family: Hopper's warp-group tensor-core products, which read their operands from
//! shared memory through descriptors and run asynchronously until waited for.

use super::facts::{Access, AsyncGroup, Completion, Effect, Facts, Memory, Ordering, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{Program, RegId, RegView, SharedView};
use crate::layout::WgmmaPlan;
use std::fmt::Write;

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

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        let group = AsyncGroup::Wgmma;
        let facts = Facts::scoped(ThreadScope::WarpGroup);
        match self {
            WgmmaInst::Fence => facts.orders(Ordering::RegisterFence(group)),
            WgmmaInst::Mma { a, b, d, .. } => {
                let at = Completion::Group(group);
                let a = match a {
                    WgmmaA::Shared(v) => Effect::shared_async(v, Access::Read, at),
                    WgmmaA::Register(v) => {
                        Effect::asynchronous(Memory::Register(v.tensor), Access::Read, at)
                    }
                };
                let b = Effect::shared_async(b, Access::Read, at);
                let d = Memory::Register(*d);
                facts
                    .effect(a.role("operand a"))
                    .effect(b.role("operand b"))
                    .effect(Effect::asynchronous(d, Access::Update, at).role("accumulator"))
            }
            WgmmaInst::Commit => facts.orders(Ordering::Commit(group)),
            WgmmaInst::Wait(n) => facts.orders(Ordering::Wait {
                group,
                pending: *n,
                reads_only: false,
            }),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            WgmmaInst::Fence => "wgmma.fence()".into(),
            WgmmaInst::Commit => "wgmma.commit_group()".into(),
            WgmmaInst::Wait(k) => format!("wgmma.wait_group({k})"),
            WgmmaInst::Mma { a, b, d, plan } => {
                let a = match a {
                    WgmmaA::Shared(v) => n.sview(v),
                    WgmmaA::Register(v) => n.view(v),
                };
                let dn = &n.p.register(*d).name;
                let mut t = format!("{dn} = wgmma.mma({a}, {}, {dn})", n.sview(b));
                if let Some(pl) = plan {
                    let _ = write!(
                        t,
                        " wgmma=m64n{}k16 repeat={}x{}x{}",
                        pl.n, pl.rep_m, pl.n_chunks, pl.k_steps
                    );
                }
                t
            }
        }
    }
}
