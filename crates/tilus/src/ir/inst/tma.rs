//! The TMA family: bulk tensor copies by the copy engine.

use super::facts::{Access, BarrierEffect, Completion, Effect, Facts, Memory, Region, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{BarrierRef, Expr, GlobalId, Program, SharedId, TensorMapId};

/// Bulk tensor copies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TmaInst {
    /// Copies the box of `src` at `offsets` (the box is `dst`'s shape) into `dst`
    /// asynchronously; the bytes complete on `bar`'s transaction count. Out-of-bounds
    /// elements arrive as zeros.
    GlobalToShared {
        /// Source view.
        src: GlobalId,
        /// Destination tile.
        dst: SharedId,
        /// Position of the box in the view, outermost dimension first.
        offsets: Vec<Expr>,
        /// Barrier that counts the bytes.
        bar: BarrierRef,
        /// The tensor map the copy goes through; chosen by lowering.
        map: Option<TensorMapId>,
    },
}

impl TmaInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            TmaInst::GlobalToShared { .. } => "tma.global_to_shared",
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
                ..
            } => {
                let tile = p.shared(*dst);
                let at = Completion::Barrier(bar);
                let region = Region {
                    offsets,
                    extent: tile.shape.clone(),
                };
                Facts::scoped(ThreadScope::OneThread)
                    .effect(Effect::asynchronous(Memory::Global(*src), Access::Read, at).on(region))
                    .effect(Effect::asynchronous(
                        Memory::Shared(*dst),
                        Access::Write,
                        at,
                    ))
                    .barrier(BarrierEffect::CompleteTx {
                        bar,
                        bytes: tile.nbytes(),
                    })
                    .reads(offsets)
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
                ..
            } => format!(
                "tma.global_to_shared({} -> {}, offsets=[{}], {})",
                n.p.global(*src).name,
                n.p.shared(*dst).name,
                n.list(offsets),
                n.bar(bar)
            ),
        }
    }
}
