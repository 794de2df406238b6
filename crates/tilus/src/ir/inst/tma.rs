//! The TMA family: bulk tensor copies by the copy engine.

use super::facts::{
    Access, AsyncGroup, BarrierEffect, Completion, Effect, Facts, Memory, Ordering, Region,
    ThreadScope,
};
use crate::ir::printer::Names;
use crate::ir::{BarrierRef, Expr, GlobalId, Program, SharedView, TensorMapId};

/// The extent of a copy's box in a view of `rank` dimensions: the tile's, one element deep
/// in the leading dimensions it leaves out.
fn box_extent(tile: Vec<i64>, rank: usize) -> Vec<i64> {
    let mut b = vec![1; rank.saturating_sub(tile.len())];
    b.extend(tile);
    b
}

/// Bulk tensor copies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TmaInst {
    /// Copies the box of `src` at `offsets` (the box is `dst`'s shape) into `dst`
    /// asynchronously; the bytes complete on `bar`'s transaction count. Out-of-bounds
    /// elements arrive as zeros.
    GlobalToShared {
        /// Source view.
        src: GlobalId,
        /// Destination tile (or one stage of it).
        dst: SharedView,
        /// Position of the box in the view, outermost dimension first.
        offsets: Vec<Expr>,
        /// Barrier that counts the bytes.
        bar: BarrierRef,
        /// The tensor map the copy goes through; chosen by lowering.
        map: Option<TensorMapId>,
        /// The blocks of the cluster that receive the box (a bit per rank), each into its
        /// own tile at the same place and on its own barrier at the same place; `None`:
        /// this block only.
        multicast: Option<Expr>,
    },
    /// Copies `src` into the box of `dst` at `offsets` (the box is `src`'s shape)
    /// asynchronously, in the issuing thread's bulk group: the source may be overwritten only
    /// after a `WaitGroup` covers the store's reads, and its bytes reach global memory by the
    /// wait that covers the whole store. Elements outside `dst` are not written.
    SharedToGlobal {
        /// Source tile or one stage of it (published to the async proxy: `fence_proxy_async`
        /// after ordinary stores).
        src: SharedView,
        /// Destination view.
        dst: GlobalId,
        /// Position of the box in the view, outermost dimension first.
        offsets: Vec<Expr>,
        /// The tensor map the copy goes through; chosen by lowering.
        map: Option<TensorMapId>,
    },
    /// `cp.async.bulk.commit_group`: closes the issuing thread's group of TMA stores issued
    /// since its last commit.
    CommitGroup,
    /// `cp.async.bulk.wait_group`: waits until at most `pending` of the issuing thread's
    /// committed groups are still running; with `read`, only until their sources have been
    /// read (the shared tiles may be reused; global memory may not show the writes yet).
    WaitGroup {
        /// Groups that may still be running afterwards.
        pending: u32,
        /// Whether only the reads of the sources are waited for.
        read: bool,
    },
}

impl TmaInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            TmaInst::GlobalToShared { .. } => "tma.global_to_shared",
            TmaInst::SharedToGlobal { .. } => "tma.shared_to_global",
            TmaInst::CommitGroup => "tma.commit_group",
            TmaInst::WaitGroup { .. } => "tma.wait_group",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        match self {
            TmaInst::GlobalToShared {
                src,
                dst,
                offsets,
                bar,
                multicast,
                ..
            } => {
                let at = Completion::Barrier(bar);
                let region = Region {
                    offsets,
                    extent: box_extent(p.sview_stored_shape(dst), offsets.len()),
                };
                Facts::scoped(ThreadScope::OneOrWarp)
                    .effect(Effect::asynchronous(Memory::Global(*src), Access::Read, at).on(region))
                    .effect(Effect::shared_async(dst, Access::Write, at))
                    .barrier(BarrierEffect::CompleteTx {
                        bar,
                        bytes: p.sview_nbytes(dst),
                    })
                    .reads(offsets)
                    .reads(multicast.iter())
            }
            TmaInst::SharedToGlobal {
                src, dst, offsets, ..
            } => {
                let at = Completion::Group(AsyncGroup::Bulk);
                let region = Region {
                    offsets,
                    extent: box_extent(p.sview_stored_shape(src), offsets.len()),
                };
                Facts::scoped(ThreadScope::OneThread)
                    .effect(Effect::shared_async(src, Access::Read, at))
                    .effect(
                        Effect::asynchronous(Memory::Global(*dst), Access::Write, at).on(region),
                    )
                    .reads(offsets)
            }
            TmaInst::CommitGroup => {
                Facts::scoped(ThreadScope::OneThread).orders(Ordering::Commit(AsyncGroup::Bulk))
            }
            TmaInst::WaitGroup { pending, read } => {
                Facts::scoped(ThreadScope::OneThread).orders(Ordering::Wait {
                    group: AsyncGroup::Bulk,
                    pending: *pending,
                    reads_only: *read,
                })
            }
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            TmaInst::GlobalToShared {
                src,
                dst,
                offsets,
                bar,
                multicast,
                ..
            } => {
                let to = multicast
                    .as_ref()
                    .map(|m| format!(", multicast={}", n.e(m)))
                    .unwrap_or_default();
                format!(
                    "tma.global_to_shared({} -> {}, offsets=[{}], {}{to})",
                    n.p.global(*src).name,
                    n.sview(dst),
                    n.list(offsets),
                    n.bar(bar)
                )
            }
            TmaInst::SharedToGlobal {
                src, dst, offsets, ..
            } => format!(
                "tma.shared_to_global({} -> {}, offsets=[{}])",
                n.sview(src),
                n.p.global(*dst).name,
                n.list(offsets)
            ),
            TmaInst::CommitGroup => "tma.commit_group()".into(),
            TmaInst::WaitGroup { pending, read } => {
                if *read {
                    format!("tma.wait_group({pending}, read=true)")
                } else {
                    format!("tma.wait_group({pending})")
                }
            }
        }
    }
}
