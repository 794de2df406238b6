//! The memory family: global views, shared and register tiles, loads and stores.

use crate::ir::{Expr, GlobalId, RegId, RegView, SharedId};

/// Tensor declarations and data movement through registers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemoryInst {
    /// Declares a view of global memory (no code of its own).
    GlobalView(GlobalId),
    /// Allocates a shared tile.
    AllocShared(SharedId),
    /// Ends a shared tile's lifetime; its bytes may be reused afterwards.
    FreeShared(SharedId),
    /// Allocates a register tile, optionally filled with a constant.
    AllocRegister {
        /// The tile.
        out: RegId,
        /// Fill value.
        init: Option<Expr>,
    },
    /// Copies a shared tile into a register tile of the same shape.
    LoadShared {
        /// Source.
        src: SharedId,
        /// Destination.
        out: RegId,
    },
    /// Writes a register tile into a shared tile of the same shape (ordinary stores: the
    /// generic proxy; `FenceProxyAsync` publishes them to TMA and wgmma).
    StoreShared {
        /// Destination tile.
        dst: SharedId,
        /// The register tile.
        src: RegView,
    },
    /// `fence.proxy.async.shared::cta`: makes this thread's earlier ordinary shared-memory
    /// writes visible to the async proxy (TMA, wgmma) once a barrier orders them.
    FenceProxyAsync,
    /// Writes a register tile into global memory at `offsets`, skipping out-of-bounds elements.
    StoreGlobal {
        /// Destination view.
        dst: GlobalId,
        /// The tile.
        src: RegView,
        /// Position of the tile's first element in the view.
        offsets: Vec<Expr>,
    },
}

impl MemoryInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            MemoryInst::GlobalView(_) => "global_view",
            MemoryInst::AllocShared(_) => "shared_tensor",
            MemoryInst::FreeShared(_) => "free_shared",
            MemoryInst::AllocRegister { .. } => "register_tensor",
            MemoryInst::LoadShared { .. } => "load_shared",
            MemoryInst::StoreGlobal { .. } => "store_global",
            MemoryInst::StoreShared { .. } => "store_shared",
            MemoryInst::FenceProxyAsync => "fence_proxy_async",
        }
    }
}
