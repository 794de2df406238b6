//! The memory family: global views, shared and register tiles, loads and stores.

use super::facts::{Access, Effect, Facts, Memory, Ordering, Region, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{Expr, GlobalId, Program, RegId, RegView, SharedId, SharedView};
use std::fmt::Write;

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
    /// Copies a shared tile (or one stage of it) into a register tile of the same shape.
    LoadShared {
        /// Source.
        src: SharedView,
        /// Destination.
        out: RegId,
    },
    /// Writes a register tile into a shared tile (or one stage of it) of the same shape
    /// (ordinary stores: the generic proxy; `FenceProxyAsync` publishes them to TMA and wgmma).
    StoreShared {
        /// Destination tile.
        dst: SharedView,
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
        /// Elements per vector store; chosen by lowering (the launch checks the alignment it
        /// assumes).
        vector: Option<u32>,
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

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        use Access::*;
        let reg = |r: RegId, a| Effect::now(Memory::Register(r), a);
        let shared = |s: SharedId, a| Effect::now(Memory::Shared(s), a);
        match self {
            MemoryInst::GlobalView(g) => {
                Facts::default().effect(Effect::now(Memory::Global(*g), Declare))
            }
            MemoryInst::AllocShared(s) => {
                Facts::scoped(ThreadScope::Block).effect(shared(*s, Declare))
            }
            MemoryInst::FreeShared(s) => {
                Facts::scoped(ThreadScope::Block).effect(shared(*s, Release))
            }
            MemoryInst::AllocRegister { out, init } => Facts::default()
                .effect(reg(*out, Declare))
                .reads(init.iter()),
            MemoryInst::LoadShared { src, out } => Facts::default()
                .effect(Effect::shared(src, Read))
                .effect(reg(*out, Declare)),
            MemoryInst::StoreShared { dst, src } => Facts::default()
                .effect(reg(src.tensor, Read))
                .effect(Effect::shared(dst, Write)),
            MemoryInst::FenceProxyAsync => Facts::default().orders(Ordering::ProxyFence),
            MemoryInst::StoreGlobal {
                dst, src, offsets, ..
            } => {
                let region = Region {
                    offsets,
                    extent: p.view_shape(src),
                };
                Facts::default()
                    .effect(reg(src.tensor, Read))
                    .effect(Effect::now(Memory::Global(*dst), Write).on(region))
                    .reads(offsets)
            }
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        let p = n.p;
        match self {
            MemoryInst::GlobalView(g) => {
                let d = p.global(*g);
                format!(
                    "{} = global_view<{}>({}, [{}])",
                    d.name,
                    d.dtype,
                    n.name(d.ptr),
                    n.list(&d.shape)
                )
            }
            MemoryInst::AllocShared(id) => {
                let d = p.shared(*id);
                let mut t = format!("{} = shared_tensor<{}>{:?}", d.name, d.dtype, d.shape);
                if let Some(l) = &d.layout {
                    let _ = write!(t, " layout={l}");
                }
                if let Some(o) = d.offset {
                    let _ = write!(t, " offset={o}");
                }
                t
            }
            MemoryInst::FreeShared(id) => format!("free_shared({})", p.shared(*id).name),
            MemoryInst::AllocRegister { out, init } => {
                let d = p.register(*out);
                let mut t = format!("{} = register_tensor<{}>{:?}", d.name, d.dtype, d.shape);
                if let Some(v) = init {
                    let _ = write!(t, " init={}", n.e(v));
                }
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
            MemoryInst::LoadShared { src, out } => {
                let d = p.register(*out);
                let mut t = format!("{} = load_shared({})", d.name, n.sview(src));
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
            MemoryInst::StoreShared { dst, src } => {
                format!("store_shared({}, {})", n.sview(dst), n.view(src))
            }
            MemoryInst::FenceProxyAsync => "fence_proxy_async()".into(),
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                vector,
            } => {
                let mut t = format!(
                    "store_global({}, {}, offsets=[{}])",
                    p.global(*dst).name,
                    n.view(src),
                    n.list(offsets)
                );
                if let Some(w) = vector.filter(|&w| w > 1) {
                    let _ = write!(t, " vector={w}");
                }
                t
            }
        }
    }
}
