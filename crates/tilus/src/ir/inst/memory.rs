//! The memory family: global views, shared and register tiles, loads, stores and global
//! atomics.

use super::facts::{Access, Effect, Facts, Memory, Ordering, Region, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{Expr, GlobalId, Program, RegId, RegView, SharedId, SharedView, VarId};
use std::fmt::Write;

/// The read-modify-write an atomic performs on each element it touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AtomicOp {
    /// `old + value`.
    Add,
    /// The smaller of `old` and `value`.
    Min,
    /// The larger of `old` and `value`.
    Max,
    /// `value` (the old value is returned).
    Exchange,
    /// `value` where `old == compare` (bitwise for floats), else `old` (the old value is
    /// returned).
    Cas,
}

impl AtomicOp {
    /// The operation's name in instruction names (`atomic_add`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::Exchange => "exchange",
            AtomicOp::Cas => "cas",
        }
    }

    /// Whether the tile form returns the old values.
    pub fn returns_old(self) -> bool {
        matches!(self, AtomicOp::Exchange | AtomicOp::Cas)
    }
}

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
    /// `fence.acq_rel.gpu` (CUDA's `__threadfence()`): this thread's global-memory accesses
    /// before it are ordered before those after it for every thread of the GPU. Atomics are
    /// relaxed: a block that stores results and then takes a ticket with an atomic fences in
    /// between, and the block that takes the last ticket fences before it reads the others'.
    FenceGpu,
    /// Writes a register tile into global memory at `offsets`, skipping out-of-bounds elements
    /// (and, with a mask, the elements where it is false).
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
        /// A bool tile of the tile's shape and layout: only its true elements are stored.
        mask: Option<RegView>,
    },
    /// Reads the box of a view at `offsets` into a new register tile; elements outside the
    /// view read `fill`.
    LoadGlobal {
        /// Source view.
        src: GlobalId,
        /// The new tile (its shape is the box's).
        out: RegId,
        /// Position of the box's first element in the view.
        offsets: Vec<Expr>,
        /// Value of the elements outside the view (a constant of the tile's type).
        fill: Expr,
        /// Elements per vector load; chosen by lowering (the launch checks the alignment it
        /// assumes).
        vector: Option<u32>,
    },
    /// An atomic read-modify-write of every element of the box of a view at `offsets` with
    /// the tile's elements; elements outside the view are skipped. Each element is updated
    /// once, by one thread holding it (replicated copies do not repeat it).
    AtomicGlobal {
        /// The operation.
        op: AtomicOp,
        /// Destination view.
        dst: GlobalId,
        /// The values.
        src: RegView,
        /// For `Cas`: the values to compare with.
        compare: Option<RegView>,
        /// For `Exchange` and `Cas`: a new tile of the old values (0 outside the view).
        out: Option<RegId>,
        /// Position of the tile's first element in the view.
        offsets: Vec<Expr>,
    },
    /// Stores (or, `add`, atomically adds) each element of `src` at the coordinates of the view
    /// the index tiles give it, one tile per dimension of the view (same shape and layout as
    /// `src`); elements whose coordinates fall outside the view are skipped. Each element is
    /// written once, by one thread holding it.
    ScatterGlobal {
        /// Destination view.
        dst: GlobalId,
        /// The values.
        src: RegView,
        /// Per dimension of the view, each element's coordinate (`i32` tiles).
        index: Vec<RegView>,
        /// Atomic addition instead of a store.
        add: bool,
    },
    /// An atomic read-modify-write of one element of a view by one thread; the old value
    /// becomes the scalar variable `out`.
    AtomicScalar {
        /// The operation.
        op: AtomicOp,
        /// Destination view.
        dst: GlobalId,
        /// The element's coordinates in the view.
        index: Vec<Expr>,
        /// The operand.
        value: Expr,
        /// For `Cas`: the value to compare with.
        compare: Option<Expr>,
        /// The variable that receives the old value.
        out: VarId,
    },
    /// `load_global_scalar`: every thread of the group reads one element of a view into a
    /// scalar variable (0 outside the view): sizes and offsets the host left in memory (a
    /// packed batch's sequence offsets, a work list).
    LoadScalar {
        /// Source view.
        src: GlobalId,
        /// The element's coordinates in the view.
        index: Vec<Expr>,
        /// The variable that receives the value.
        out: VarId,
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
            MemoryInst::FenceGpu => "fence_gpu",
            MemoryInst::LoadGlobal { .. } => "load_global",
            MemoryInst::AtomicGlobal { op, .. } => match op {
                AtomicOp::Add => "atomic_add",
                AtomicOp::Min => "atomic_min",
                AtomicOp::Max => "atomic_max",
                AtomicOp::Exchange => "atomic_exchange",
                AtomicOp::Cas => "atomic_cas",
            },
            MemoryInst::ScatterGlobal { add: false, .. } => "store_global_at",
            MemoryInst::ScatterGlobal { add: true, .. } => "atomic_add_at",
            MemoryInst::AtomicScalar { op, .. } => match op {
                AtomicOp::Add => "atomic_add_scalar",
                AtomicOp::Min => "atomic_min_scalar",
                AtomicOp::Max => "atomic_max_scalar",
                AtomicOp::Exchange => "atomic_exchange_scalar",
                AtomicOp::Cas => "atomic_cas_scalar",
            },
            MemoryInst::LoadScalar { .. } => "load_global_scalar",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        use Access::*;
        let reg = |r: RegId, a| Effect::now(Memory::Register(r), a);
        let shared = |s: SharedId, a| Effect::now(Memory::Shared(s), a);
        match self {
            MemoryInst::GlobalView(g) => {
                let d = p.global(*g);
                let strides: &[Expr] = if d.row_major { &[] } else { &d.strides };
                Facts::default()
                    .effect(Effect::now(Memory::Global(*g), Declare))
                    .reads(strides)
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
            // global memory is not tracked by the hazard checks: no effect to state
            MemoryInst::FenceGpu => Facts::default(),
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                mask,
                ..
            } => {
                let region = Region {
                    offsets,
                    extent: p.view_shape(src),
                };
                let mut f = Facts::default().effect(reg(src.tensor, Read));
                if let Some(m) = mask {
                    f = f.effect(reg(m.tensor, Read).role("mask"));
                }
                f.effect(Effect::now(Memory::Global(*dst), Write).on(region))
                    .reads(offsets)
            }
            MemoryInst::LoadGlobal {
                src,
                out,
                offsets,
                fill,
                ..
            } => {
                let region = Region {
                    offsets,
                    extent: p.register(*out).shape.clone(),
                };
                Facts::default()
                    .effect(Effect::now(Memory::Global(*src), Read).on(region))
                    .effect(reg(*out, Declare))
                    .reads(offsets)
                    .reads([fill])
            }
            MemoryInst::AtomicGlobal {
                dst,
                src,
                compare,
                out,
                offsets,
                ..
            } => {
                let region = Region {
                    offsets,
                    extent: p.view_shape(src),
                };
                let mut f = Facts::default().effect(reg(src.tensor, Read));
                if let Some(c) = compare {
                    f = f.effect(reg(c.tensor, Read).role("compare"));
                }
                f = f.effect(Effect::now(Memory::Global(*dst), Update).on(region));
                if let Some(o) = out {
                    f = f.effect(reg(*o, Declare));
                }
                f.reads(offsets)
            }
            MemoryInst::ScatterGlobal {
                dst,
                src,
                index,
                add,
            } => {
                let mut f = Facts::default().effect(reg(src.tensor, Read));
                for v in index {
                    f = f.effect(reg(v.tensor, Read).role("index"));
                }
                let how = if *add { Update } else { Write };
                f.effect(Effect::now(Memory::Global(*dst), how))
            }
            MemoryInst::AtomicScalar {
                dst,
                index,
                value,
                compare,
                out,
                ..
            } => {
                let region = Region {
                    offsets: index,
                    extent: vec![1; index.len()],
                };
                Facts::scoped(ThreadScope::OneThread)
                    .effect(Effect::now(Memory::Global(*dst), Update).on(region))
                    .reads(index)
                    .reads([value])
                    .reads(compare.iter())
                    .defines(*out)
            }
            MemoryInst::LoadScalar { src, index, out } => {
                let region = Region {
                    offsets: index,
                    extent: vec![1; index.len()],
                };
                Facts::default()
                    .effect(Effect::now(Memory::Global(*src), Read).on(region))
                    .reads(index)
                    .defines(*out)
            }
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        let p = n.p;
        match self {
            MemoryInst::GlobalView(g) => {
                let d = p.global(*g);
                let mut t = format!(
                    "{} = global_view<{}>({}, [{}]",
                    d.name,
                    d.dtype,
                    n.name(d.ptr),
                    n.list(&d.shape)
                );
                if !d.row_major {
                    let _ = write!(t, ", strides=[{}]", n.list(&d.strides));
                }
                t.push(')');
                t
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
            MemoryInst::FenceGpu => "fence_gpu()".into(),
            MemoryInst::StoreGlobal {
                dst,
                src,
                offsets,
                vector,
                mask,
            } => {
                let where_ = mask
                    .as_ref()
                    .map(|m| format!(", where={}", n.view(m)))
                    .unwrap_or_default();
                let mut t = format!(
                    "store_global({}, {}, offsets=[{}]{where_})",
                    p.global(*dst).name,
                    n.view(src),
                    n.list(offsets)
                );
                if let Some(w) = vector.filter(|&w| w > 1) {
                    let _ = write!(t, " vector={w}");
                }
                t
            }
            MemoryInst::LoadGlobal {
                src,
                out,
                offsets,
                fill,
                vector,
            } => {
                let d = p.register(*out);
                let mut t = format!(
                    "{} = load_global({}, offsets=[{}], shape={:?}",
                    d.name,
                    p.global(*src).name,
                    n.list(offsets),
                    d.shape
                );
                if fill.eval(&|_| None) != Some(0) && !matches!(fill, Expr::Float(0, _)) {
                    let _ = write!(t, ", fill={}", n.e(fill));
                }
                t.push(')');
                if let Some(w) = vector.filter(|&w| w > 1) {
                    let _ = write!(t, " vector={w}");
                }
                if let Some(l) = &d.layout {
                    let _ = write!(t, " {l}");
                }
                t
            }
            MemoryInst::AtomicGlobal {
                dst,
                src,
                compare,
                out,
                offsets,
                ..
            } => {
                let mut t = String::new();
                if let Some(o) = out {
                    let _ = write!(t, "{} = ", p.register(*o).name);
                }
                let _ = write!(t, "{}({}, ", self.name(), p.global(*dst).name);
                if let Some(c) = compare {
                    let _ = write!(t, "compare={}, ", n.view(c));
                }
                let _ = write!(t, "{}, offsets=[{}])", n.view(src), n.list(offsets));
                t
            }
            MemoryInst::ScatterGlobal {
                dst, src, index, ..
            } => {
                let idx: Vec<String> = index.iter().map(|v| n.view(v)).collect();
                format!(
                    "{}({}, {}, at=[{}])",
                    self.name(),
                    p.global(*dst).name,
                    n.view(src),
                    idx.join(", ")
                )
            }
            MemoryInst::AtomicScalar {
                dst,
                index,
                value,
                compare,
                out,
                ..
            } => {
                let mut t = format!(
                    "{} = {}({}, [{}], ",
                    n.name(*out),
                    self.name(),
                    p.global(*dst).name,
                    n.list(index)
                );
                if let Some(c) = compare {
                    let _ = write!(t, "compare={}, ", n.e(c));
                }
                let _ = write!(t, "{})", n.e(value));
                t
            }
            MemoryInst::LoadScalar { src, index, out } => format!(
                "{} = {}({}, [{}])",
                n.name(*out),
                self.name(),
                p.global(*src).name,
                n.list(index)
            ),
        }
    }
}
