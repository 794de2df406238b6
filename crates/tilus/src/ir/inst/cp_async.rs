//! The cp.async family: copies from global to shared memory that each thread issues for its
//! own part of a tile and waits for in groups (`cp.async`, `cp.async.commit_group`,
//! `cp.async.wait_group`). Unlike TMA they need no tensor map, no 16-byte rows and no
//! mbarrier: any view and any offsets, 4, 8 or 16 bytes per copy as the alignment allows.

use super::facts::{Access, AsyncGroup, Completion, Effect, Facts, Memory, Ordering, Region};
use crate::ir::printer::Names;
use crate::ir::{Expr, GlobalId, Program, SharedView};
use crate::layout::RegisterLayout;

/// Copies by threads, completed in per-thread groups.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CpAsyncInst {
    /// Copies the box of `src` at `offsets` (the box is `dst`'s shape) into `dst`: each of the
    /// `threads` threads of the group copies its vectors of the box ([`CpAsyncInst::layout`]),
    /// asynchronously, into its open group. Elements outside the view arrive as zeros. The
    /// bytes are written by ordinary (generic-proxy) stores: a thread sees its own copies after
    /// the `Wait` that covers them, other threads after a barrier that follows that wait, and
    /// the async proxy (wgmma, TMA) after a `fence_proxy_async` too.
    Copy {
        /// Source view.
        src: GlobalId,
        /// Destination tile (or one stage of it).
        dst: SharedView,
        /// Position of the box's first element in the view, outermost dimension first.
        offsets: Vec<Expr>,
        /// Threads of the group that runs it (the script's thread group where it is written).
        threads: u32,
        /// Elements per copy (4, 8 or 16 bytes; fewer bytes: ordinary loads and stores, done
        /// when the instruction returns); chosen by lowering.
        vector: Option<u32>,
    },
    /// `cp.async.commit_group`: closes each thread's group of copies issued since its last
    /// commit.
    Commit,
    /// `cp.async.wait_group`: waits until at most `pending` of each thread's committed groups
    /// are still running.
    Wait {
        /// Groups that may still be running afterwards.
        pending: u32,
    },
}

impl CpAsyncInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            CpAsyncInst::Copy { .. } => "copy_async",
            CpAsyncInst::Commit => "copy_async_commit_group",
            CpAsyncInst::Wait { .. } => "copy_async_wait_group",
        }
    }

    /// How a copy's elements are spread over its threads: the layout a `load_global` of the box
    /// would get (16-byte vectors along the innermost dimension, consecutive threads on
    /// consecutive vectors), so that each thread copies whole vectors. `None` for the other
    /// instructions.
    pub fn layout(&self, p: &Program) -> Option<RegisterLayout> {
        let CpAsyncInst::Copy { dst, threads, .. } = self else {
            return None;
        };
        let shape = p.sview_stored_shape(dst);
        let elem = p.shared(dst.tensor).dtype.nbytes();
        Some(crate::passes::infer_layout::vectorized_layout(
            &shape,
            i64::from((*threads).max(1)),
            elem,
        ))
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        let at = Completion::Group(AsyncGroup::CpAsync);
        match self {
            CpAsyncInst::Copy {
                src, dst, offsets, ..
            } => {
                let region = Region {
                    offsets,
                    extent: p.sview_stored_shape(dst),
                };
                // ordinary stores that land at the wait: the generic proxy, completed later
                let write = Effect {
                    completes: at,
                    ..Effect::shared(dst, Access::Write)
                };
                let read = Effect {
                    completes: at,
                    ..Effect::now(Memory::Global(*src), Access::Read)
                };
                Facts::default()
                    .effect(read.on(region))
                    .effect(write)
                    .reads(offsets)
            }
            CpAsyncInst::Commit => Facts::default().orders(Ordering::Commit(AsyncGroup::CpAsync)),
            CpAsyncInst::Wait { pending } => Facts::default().orders(Ordering::Wait {
                group: AsyncGroup::CpAsync,
                pending: *pending,
                reads_only: false,
            }),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            CpAsyncInst::Copy {
                src,
                dst,
                offsets,
                vector,
                ..
            } => {
                let width = vector.map(|v| format!(", vector={v}")).unwrap_or_default();
                format!(
                    "copy_async({} -> {}, offsets=[{}]{width})",
                    n.p.global(*src).name,
                    n.sview(dst),
                    n.list(offsets)
                )
            }
            CpAsyncInst::Commit => "copy_async_commit_group()".into(),
            CpAsyncInst::Wait { pending } => format!("copy_async_wait_group({pending})"),
        }
    }
}
