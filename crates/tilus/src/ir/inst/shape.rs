//! The shape family: a register tile seen with another shape (reshape, squeeze, unsqueeze) or
//! in part (a slice along one dimension). Handles are `Copy` values without a kernel, so these
//! are instructions that define a new tile; each thread keeps exactly the registers it had (a
//! reshape relabels them, a slice keeps some), so the generated code copies registers that the
//! CUDA compiler's register allocation then removes, and no data moves between threads. Where
//! the layout does not allow that, layout inference says so at the user's line. A layout
//! conversion (`convert_layout`) is the one member that may move data: in registers where each
//! thread already holds what it needs, through a shared scratch tile otherwise.

use super::facts::{Access, Effect, Facts, Memory, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{Program, RegId, RegView, SharedId};
use std::fmt::Write;

/// How a reshape was asked for (for names and the printer; all three relabel the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReshapeOp {
    /// Any shape with the same elements.
    Reshape,
    /// Dimension `d`, of extent 1, removed.
    Squeeze(usize),
    /// A dimension of extent 1 inserted at `d`.
    Unsqueeze(usize),
}

/// Register tiles seen with another shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShapeInst {
    /// `out` holds the elements of `src` in row-major order, with `out`'s shape; every thread
    /// keeps its registers.
    Reshape {
        /// The tile (or a transposed view of it).
        src: RegView,
        /// The tile with the new shape.
        out: RegId,
        /// How it was asked for.
        op: ReshapeOp,
    },
    /// `out` is the elements `start .. start + n` of `src` along `dim` (`n`: `out`'s extent
    /// there); every thread keeps its local elements of the range.
    Slice {
        /// The tile (or a transposed view of it).
        src: RegView,
        /// The dimension sliced.
        dim: usize,
        /// The first element kept along `dim`.
        start: i64,
        /// The slice.
        out: RegId,
    },
    /// `out` holds the elements of `src` (the same shape and type) in the layout its uses
    /// give it. Where every thread already holds the elements its part of `out` needs, the
    /// registers are renamed (free); otherwise every thread stores its elements into the
    /// shared tile `scratch` (one 32-bit word per element, row-major), the block meets, every
    /// thread loads its new ones, and the block meets again before the scratch is reused.
    Convert {
        /// The tile (or a transposed view of it).
        src: RegView,
        /// The tile in its new layout.
        out: RegId,
        /// The scratch: sized by layout inference, empty when the registers suffice.
        scratch: SharedId,
        /// Which element of `src` each element of `out` is (`repeat`, `repeat_interleave`).
        map: Repeat,
    },
    /// `out` holds the low-precision elements packed in `src`'s integer words: each word of
    /// `w` bits holds `w / b` elements of `out`'s `b`-bit type, the first in its low bits,
    /// consecutive along the innermost dimension (`out`'s innermost extent is `w / b` times
    /// `src`'s). Every thread keeps its words and reads its elements out of them.
    Unpack {
        /// The words (or a transposed view of them).
        src: RegView,
        /// The elements.
        out: RegId,
    },
    /// `out` holds, in every thread, that thread's registers of `src` in the same order, seen
    /// through layout `to` (a tile of `to`'s shape): local element `l` of a thread in `src`'s
    /// layout `from` is local element `l` of the same thread in `to`. No data moves: the
    /// elements take new coordinates. How data the host arranged in the order the threads
    /// need (weights prepacked into the tensor cores' fragments) is loaded plainly and then
    /// seen as the operand it is.
    Relabel {
        /// The tile (or a transposed view of it), which takes layout `from`.
        src: RegView,
        /// The relabelled tile, of layout `to`.
        out: RegId,
        /// The source's layout.
        from: crate::layout::RegisterLayout,
        /// The result's layout.
        to: crate::layout::RegisterLayout,
    },
    /// The inverse of [`ShapeInst::Unpack`]: `out`'s integer words each pack `w / b`
    /// consecutive low-precision elements of `src` along the innermost dimension, the first in
    /// the low bits. Every thread packs its own elements.
    Pack {
        /// The elements (or a transposed view of them).
        src: RegView,
        /// The words.
        out: RegId,
    },
}

/// Which element of a conversion's source each element of its result is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repeat {
    /// The same coordinates: a layout conversion.
    Same,
    /// The source `times` over along `dim` (`repeat`): result `i` is source `i % n`.
    Tile {
        /// The dimension repeated.
        dim: usize,
        /// How many copies.
        times: i64,
    },
    /// Each element `times` over along `dim` (`repeat_interleave`): result `i` is source
    /// `i / times`.
    Interleave {
        /// The dimension repeated.
        dim: usize,
        /// How many copies of each element.
        times: i64,
    },
}

impl Repeat {
    /// The source coordinates of the result element at `c`, for a source of `shape`.
    pub fn source(&self, c: &[i64], shape: &[i64]) -> Vec<i64> {
        let mut c = c.to_vec();
        match *self {
            Repeat::Same => {}
            Repeat::Tile { dim, .. } => c[dim] %= shape[dim].max(1),
            Repeat::Interleave { dim, times } => c[dim] /= times.max(1),
        }
        c
    }

    /// The result's shape for a source of `shape`.
    pub fn shape(&self, shape: &[i64]) -> Vec<i64> {
        let mut s = shape.to_vec();
        match *self {
            Repeat::Same => {}
            Repeat::Tile { dim, times } | Repeat::Interleave { dim, times } => {
                if let Some(n) = s.get_mut(dim) {
                    *n = n.saturating_mul(times);
                }
            }
        }
        s
    }
}

impl ShapeInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            ShapeInst::Reshape { op, .. } => match op {
                ReshapeOp::Reshape => "reshape",
                ReshapeOp::Squeeze(_) => "squeeze",
                ReshapeOp::Unsqueeze(_) => "unsqueeze",
            },
            ShapeInst::Slice { .. } => "slice",
            ShapeInst::Unpack { .. } => "unpack",
            ShapeInst::Pack { .. } => "pack",
            ShapeInst::Relabel { .. } => "relabel",
            ShapeInst::Convert { map, .. } => match map {
                Repeat::Same => "convert_layout",
                Repeat::Tile { .. } => "repeat",
                Repeat::Interleave { .. } => "repeat_interleave",
            },
        }
    }

    /// The source view and the result.
    pub fn operands(&self) -> (&RegView, RegId) {
        match self {
            ShapeInst::Reshape { src, out, .. }
            | ShapeInst::Slice { src, out, .. }
            | ShapeInst::Unpack { src, out }
            | ShapeInst::Pack { src, out }
            | ShapeInst::Relabel { src, out, .. }
            | ShapeInst::Convert { src, out, .. } => (src, *out),
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, p: &'a Program) -> Facts<'a> {
        let (src, out) = self.operands();
        // a slice of a matrix's columns reads only those (work in flight on the others, a
        // wgmma's window of its accumulator, does not conflict with it)
        let columns = match self {
            ShapeInst::Slice {
                src,
                dim: 1,
                start,
                out,
            } if !src.transposed && p.register(src.tensor).shape.len() == 2 => {
                p.register(*out).shape.get(1).map(|&len| (*start, len))
            }
            _ => None,
        };
        let f = match self {
            // through shared memory behind block-wide barriers: the whole block
            ShapeInst::Convert { scratch, .. } if self.converts_through_shared(p) => {
                let mut f = Facts::scoped(ThreadScope::Block);
                for access in [
                    Access::Declare,
                    Access::Write,
                    Access::Read,
                    Access::Release,
                ] {
                    f = f.effect(Effect::now(Memory::Shared(*scratch), access));
                }
                f
            }
            _ => Facts::default(),
        };
        f.effect(Effect::now(Memory::Register(src.tensor), Access::Read).on_columns(columns))
            .effect(Effect::now(Memory::Register(out), Access::Declare))
    }

    /// For a conversion: whether its scratch was given bytes (the threads do not all hold
    /// what they need).
    pub(crate) fn converts_through_shared(&self, p: &Program) -> bool {
        match self {
            ShapeInst::Convert { scratch, .. } => {
                p.shared(*scratch).shape.iter().product::<i64>() > 0
            }
            _ => false,
        }
    }

    /// For each local element of the result, the local element of the source (seen through its
    /// view) that holds it in the same thread, from the planned layouts; `None` before layouts
    /// are inferred or when the result's layout is not the one its source gives it.
    pub(crate) fn source_locals(&self, p: &Program) -> Option<Vec<usize>> {
        let (src, out) = self.operands();
        let l = src.layout_of(p.register(src.tensor).layout.as_ref()?);
        let have = p.register(out).layout.as_ref()?;
        let (want, table) = match self {
            ShapeInst::Reshape { .. } => {
                let want = l.reshape(&p.register(out).shape).ok()?;
                let n = want.local_size().max(0) as usize;
                (want, (0..n).collect())
            }
            ShapeInst::Slice { dim, start, .. } => {
                let len = *p.register(out).shape.get(*dim)?;
                l.slice_locals(*dim, *start, len).ok()?
            }
            ShapeInst::Unpack { .. } => {
                let k = self.unpack_count(p)?;
                let want = l.unpacked(k);
                let n = want.local_size().max(0) as usize;
                (want, (0..n).map(|i| i / k as usize).collect())
            }
            // word `j` packs source locals `k j .. k j + k`: the table names the first
            ShapeInst::Pack { .. } => {
                let k = self.pack_count(p)?;
                let want = l.packed(k).ok()?;
                let n = want.local_size().max(0) as usize;
                (want, (0..n).map(|j| j * k as usize).collect())
            }
            ShapeInst::Convert { map, .. } => {
                let shape = p.view_shape(src);
                return have.in_thread_locals_of(&l, &|c: &[i64]| map.source(c, &shape));
            }
            // local for local, once the source has the layout the relabelling names
            ShapeInst::Relabel { from, to, .. } => {
                if !l.same_mapping(from) || from.local_size() != to.local_size() {
                    return None;
                }
                let n = to.local_size().max(0) as usize;
                (to.clone(), (0..n).collect())
            }
        };
        want.same_mapping(have).then_some(table)
    }

    /// For an unpack: how many elements each word holds (`None` for the other members, or
    /// where the types do not divide); one for 8-bit elements in 8-bit words (the same bits,
    /// seen as codes).
    pub fn unpack_count(&self, p: &Program) -> Option<i64> {
        let ShapeInst::Unpack { src, out } = self else {
            return None;
        };
        let (w, b) = (
            p.register(src.tensor).dtype.bits(),
            p.register(*out).dtype.bits(),
        );
        (b > 0 && b <= w && w % b == 0).then_some(i64::from(w / b))
    }

    /// For a pack: how many elements each word packs (`None` for the other members, or where
    /// the types do not divide).
    pub fn pack_count(&self, p: &Program) -> Option<i64> {
        let ShapeInst::Pack { src, out } = self else {
            return None;
        };
        let (b, w) = (
            p.register(src.tensor).dtype.bits(),
            p.register(*out).dtype.bits(),
        );
        (b > 0 && b < w && w % b == 0).then_some(i64::from(w / b))
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        let (src, out) = self.operands();
        let d = n.p.register(out);
        let mut t = match self {
            ShapeInst::Reshape { op, .. } => match op {
                ReshapeOp::Reshape => {
                    format!("{} = reshape({}, {:?})", d.name, n.view(src), d.shape)
                }
                ReshapeOp::Squeeze(dim) => {
                    format!("{} = squeeze({}, dim={dim})", d.name, n.view(src))
                }
                ReshapeOp::Unsqueeze(dim) => {
                    format!("{} = unsqueeze({}, dim={dim})", d.name, n.view(src))
                }
            },
            ShapeInst::Slice { dim, start, .. } => format!(
                "{} = slice({}, dim={dim}, {start}..{})",
                d.name,
                n.view(src),
                start + d.shape.get(*dim).copied().unwrap_or(0)
            ),
            ShapeInst::Unpack { .. } => {
                format!("{} = unpack<{}>({})", d.name, d.dtype, n.view(src))
            }
            ShapeInst::Pack { .. } => {
                format!("{} = pack<{}>({})", d.name, d.dtype, n.view(src))
            }
            ShapeInst::Relabel { from, .. } => {
                format!("{} = relabel({} {from})", d.name, n.view(src))
            }
            ShapeInst::Convert { scratch, map, .. } => {
                let s = n.p.shared(*scratch);
                let how = if self.converts_through_shared(n.p) {
                    format!(
                        "through shared `{}` ({} B, 2 block barriers)",
                        s.name,
                        s.shape.iter().product::<i64>() * 4
                    )
                } else {
                    "in registers (free)".to_string()
                };
                let args = match map {
                    Repeat::Same => String::new(),
                    Repeat::Tile { dim, times } | Repeat::Interleave { dim, times } => {
                        format!(", dim={dim}, times={times}")
                    }
                };
                format!("{} = {}({}{args}) {how}", d.name, self.name(), n.view(src))
            }
        };
        if let Some(l) = &d.layout {
            let _ = write!(t, " {l}");
        }
        t
    }
}
