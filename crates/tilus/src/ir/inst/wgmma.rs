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

impl WgmmaA {
    /// Whether a shared `[M, K]` operand is MN-major: seen through a transpose, so stored as
    /// `[K, M]` with M contiguous (the instruction's transpose bit for A). Register operands
    /// are not.
    pub fn mn_major(&self) -> bool {
        matches!(self, WgmmaA::Shared(v) if v.transposed)
    }
}

/// Whether the `[K, N]` operand `b` of a wgmma is MN-major: the tile as stored (`[K, N]`, N
/// contiguous; the instruction's transpose bit for B), not an `[N, K]` tile seen through a
/// transpose (K-major).
pub fn b_mn_major(b: &SharedView) -> bool {
    !b.transposed
}

/// Where a wgmma's product lands: `d += a @ b` over the whole accumulator, or over a window of
/// its columns, or `d = a @ b` (the accumulator's old values ignored: the hardware's
/// `scale-d = 0`, no zeroing needed first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WgmmaTarget {
    /// `Some(start)`: columns `start .. start + N` of the accumulator, `N` the product's
    /// columns (a multiple of 8); `None`: all of them.
    pub window: Option<i64>,
    /// Whether the product overwrites the columns it lands in instead of adding to them.
    pub overwrite: bool,
}

impl WgmmaTarget {
    /// The whole accumulator, added to (what `mma` does).
    pub fn all() -> WgmmaTarget {
        WgmmaTarget::default()
    }

    /// Columns `start ..` of the accumulator, added to.
    pub fn window(start: i64) -> WgmmaTarget {
        WgmmaTarget {
            window: Some(start),
            overwrite: false,
        }
    }

    /// The same columns, overwritten instead of added to.
    pub fn overwriting(self) -> WgmmaTarget {
        WgmmaTarget {
            overwrite: true,
            ..self
        }
    }

    /// The accumulator's columns the product covers, `(start, len)`, given `b`'s `N`
    /// (`None`: all of them).
    pub fn covers(&self, n: i64) -> Option<(i64, i64)> {
        self.window.map(|start| (start, n))
    }
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
        /// `[K, N]` operand: a shared `[N, K]` tile seen through a transpose (K-major), or a
        /// `[K, N]` tile as stored (MN-major, [`b_mn_major`]).
        b: SharedView,
        /// `[M, N]` accumulator (with `window`, `[M, N']`: the product lands in `N`
        /// of its columns).
        d: RegId,
        /// Where the product lands in the accumulator and whether it adds to it.
        target: WgmmaTarget,
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
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        let group = AsyncGroup::Wgmma;
        let facts = Facts::scoped(ThreadScope::WarpGroup);
        match self {
            WgmmaInst::Fence => facts.orders(Ordering::RegisterFence(group)),
            WgmmaInst::Mma {
                a, b, d, target, ..
            } => {
                let at = Completion::Group(group);
                let n = p.sview_shape(b).get(1).copied().unwrap_or(0);
                let columns = target.covers(n);
                let access = if target.overwrite {
                    Access::Write
                } else {
                    Access::Update
                };
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
                    .effect(
                        Effect::asynchronous(d, access, at)
                            .on_columns(columns)
                            .role("accumulator"),
                    )
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
            WgmmaInst::Mma {
                a,
                b,
                d,
                target,
                plan,
            } => {
                let a = match a {
                    WgmmaA::Shared(v) => n.sview(v),
                    WgmmaA::Register(v) => n.view(v),
                };
                let dn = &n.p.register(*d).name;
                let window = match target.window {
                    Some(start) => format!("[:, {start}..]"),
                    None => String::new(),
                };
                let add = if target.overwrite {
                    String::new()
                } else {
                    format!(", {dn}{window}")
                };
                let mut t = format!("{dn}{window} = wgmma.mma({a}, {}{add})", n.sview(b));
                if let Some(pl) = plan {
                    let _ = write!(
                        t,
                        " wgmma=m64n{}k{} repeat={}x{}x{}",
                        pl.n, pl.k_inst, pl.rep_m, pl.n_chunks, pl.k_steps
                    );
                }
                t
            }
        }
    }
}
