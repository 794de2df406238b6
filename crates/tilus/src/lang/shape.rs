//! Register tiles seen with another shape: `k.reshape`, `k.squeeze`, `k.unsqueeze` and
//! `k.slice`. Each defines a new tile from the registers the threads already hold (no data
//! moves between threads; the generated code's copies are register renamings), so each is
//! possible only where the source's layout allows it: layout inference reports, at the line of
//! the call, a layout the new shape would cut apart or a slice that only some threads hold.
//! (`t.transpose()` is a view of the handle itself; these need the kernel, which a handle does
//! not carry.)
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Halves;
//!
//! impl Script for Halves {
//!     type Args = (PtrMut<f32>,);
//!     fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
//!         k.blocks([1]);
//!         k.warps(1);
//!         let x = k.register_tensor::<f32>([4, 32], 1.0);
//!         let rows = k.slice(&x, 0, 2, 2);     // rows 2 and 3: [2, 32]
//!         let flat = k.reshape(&rows, [64]);   // [64]
//!         let g = k.global_view::<f32>(out, [64]);
//!         k.store_global(&g, &flat, [0]);
//!     }
//! }
//!
//! let mut out = vec![0.0f32; 64];
//! tilus::interpret(&Halves, (&mut out[..],)).unwrap();
//! assert!(out.iter().all(|&v| v == 1.0));
//! ```

use super::{Dims, Element, Kernel, RegisterTensor};
use crate::ir::{Inst, Loc, Repeat, ReshapeOp, ShapeInst, StmtKind};

/// The number of elements of a shape, `None` past `i64`.
fn count(shape: &[i64]) -> Option<i64> {
    shape.iter().try_fold(1i64, |a, &n| a.checked_mul(n))
}

impl Kernel {
    fn shape_view<T: Element>(
        &mut self,
        inst: impl FnOnce(crate::ir::RegId) -> ShapeInst,
        shape: Vec<i64>,
        loc: Loc,
    ) -> RegisterTensor<T> {
        let out = self.new_register::<T>(shape, loc);
        self.push(StmtKind::Inst(Inst::Shape(inst(out))), loc);
        RegisterTensor::plain(out)
    }

    /// The tile's elements, in row-major order, with another shape of as many elements. Every
    /// thread keeps its registers; the layout must let the new dimensions keep its factors
    /// (over threads and over each thread's elements) whole.
    #[track_caller]
    pub fn reshape<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        shape: impl Dims,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let from = self.prog.view_shape(&src.view);
        let want = shape.into_dims();
        let to: Vec<i64> = want.iter().map(|&d| d as i64).collect();
        let mut out = to.clone();
        if to.is_empty() || to.iter().any(|&d| d <= 0) {
            self.error(
                loc,
                format!("reshape: every dimension must be positive, got {want:?}"),
            );
            out = from.clone();
        } else if count(&to) != count(&from) || count(&to).is_none() {
            let text = |c: Option<i64>| c.map_or("too many".to_string(), |n| n.to_string());
            self.error(
                loc,
                format!(
                    "reshape: a {from:?} tile has {} elements, {to:?} has {}",
                    text(count(&from)),
                    text(count(&to))
                ),
            );
            out = from.clone();
        }
        let view = src.view;
        self.shape_view(
            |out| ShapeInst::Reshape {
                src: view,
                out,
                op: ReshapeOp::Reshape,
            },
            out,
            loc,
        )
    }

    /// The tile without dimension `dim`, which must have extent 1 (a view of the same
    /// registers).
    #[track_caller]
    pub fn squeeze<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        dim: usize,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let from = self.prog.view_shape(&src.view);
        let mut out = from.clone();
        if dim >= from.len() || from[dim] != 1 {
            let what = if dim >= from.len() {
                format!(
                    "a tile of {} dimension(s) has no dimension {dim}",
                    from.len()
                )
            } else {
                format!("dimension {dim} of a {from:?} tile is {}, not 1", from[dim])
            };
            self.error(loc, format!("squeeze: {what}"));
        } else if from.len() == 1 {
            self.error(loc, "squeeze: a tile keeps at least one dimension");
        } else {
            out.remove(dim);
        }
        let view = src.view;
        self.shape_view(
            |out| ShapeInst::Reshape {
                src: view,
                out,
                op: ReshapeOp::Squeeze(dim),
            },
            out,
            loc,
        )
    }

    /// The tile with a dimension of extent 1 inserted before dimension `dim` (`dim` = rank:
    /// after the last), a view of the same registers.
    #[track_caller]
    pub fn unsqueeze<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        dim: usize,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let from = self.prog.view_shape(&src.view);
        let mut out = from.clone();
        if dim > from.len() {
            self.error(
                loc,
                format!(
                    "unsqueeze: a tile of {} dimension(s) takes a new dimension at 0..={}, not {dim}",
                    from.len(),
                    from.len()
                ),
            );
        } else {
            out.insert(dim, 1);
        }
        let view = src.view;
        self.shape_view(
            |out| ShapeInst::Reshape {
                src: view,
                out,
                op: ReshapeOp::Unsqueeze(dim),
            },
            out,
            loc,
        )
    }

    /// The tile's elements in the layout its uses need: a new tile of the same shape and type
    /// whose layout is decided by what reads it (an mma or wgmma operand, a store, an
    /// expression with other tiles), not by `src`. Where every thread already holds the
    /// elements its part of the result needs (an mma or wgmma accumulator used as the next
    /// product's register operand, flash attention's P), the conversion renames registers and
    /// costs nothing; otherwise the elements go through a shared scratch tile (one 32-bit word
    /// per element) behind two block barriers, so it must then run in the whole block.
    /// `tilus ir` prints which (`in registers (free)`, or `through shared` with the bytes).
    /// A side nothing constrains takes the other's layout.
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, a: RegisterTensor<f16>, b: RegisterTensor<f16>) {
    /// // `a` was loaded for coalesced global reads; `dot` wants its fragment layout
    /// let acc = k.register_tensor::<f32>([64, 64], 0.0);
    /// let a = k.convert_layout(&a);
    /// k.dot(&a, &b, &acc, &acc);
    /// # }
    /// ```
    #[track_caller]
    pub fn convert_layout<T: Element>(&mut self, src: &RegisterTensor<T>) -> RegisterTensor<T> {
        self.repeated(src, Repeat::Same, "convert_layout", Loc::caller())
    }

    /// The tile `times` over along `dim`: element `i` of the result is element `i % n` of
    /// `t` (`n` its extent there); `[2, 3]` repeated twice along 1 is `[2, 6]`. Like
    /// [`Kernel::convert_layout`], the result takes the layout its uses give it: in registers
    /// where every thread already holds the source elements its part needs (free), through a
    /// shared scratch behind two block barriers otherwise (`tilus ir` says which).
    #[track_caller]
    pub fn repeat<T: Element>(
        &mut self,
        t: &RegisterTensor<T>,
        dim: usize,
        times: i32,
    ) -> RegisterTensor<T> {
        let map = Repeat::Tile {
            dim,
            times: i64::from(times),
        };
        self.repeated(t, map, "repeat", Loc::caller())
    }

    /// Each element `times` over along `dim`: element `i` of the result is element
    /// `i / times` of `t`; a `[rows, k / 128]` tile of scales interleaved 128 times along 1
    /// gives every element of a `[rows, k]` tile its group's scale. The layouts as for
    /// [`Kernel::repeat`].
    #[track_caller]
    pub fn repeat_interleave<T: Element>(
        &mut self,
        t: &RegisterTensor<T>,
        dim: usize,
        times: i32,
    ) -> RegisterTensor<T> {
        let map = Repeat::Interleave {
            dim,
            times: i64::from(times),
        };
        self.repeated(t, map, "repeat_interleave", Loc::caller())
    }

    fn repeated<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        map: Repeat,
        name: &str,
        loc: Loc,
    ) -> RegisterTensor<T> {
        let from = self.prog.view_shape(&src.view);
        let (dim, times) = match map {
            Repeat::Tile { dim, times } | Repeat::Interleave { dim, times } => (dim, times),
            Repeat::Same => (0, 1),
        };
        let fits = dim < from.len() && times >= 1 && count(&map.shape(&from)).is_some();
        if !fits {
            self.error(
                loc,
                format!(
                    "{name}: dimension {dim} of a {from:?} tile, {times} time(s): a dimension of \
                     the tile, at least once"
                ),
            );
        }
        let (shape, map) = if fits {
            (map.shape(&from), map)
        } else {
            (from, Repeat::Same)
        };
        let out = self.new_register::<T>(shape, loc);
        let scratch = self.scratch_for(out, loc);
        let inst = ShapeInst::Convert {
            src: src.view,
            out,
            scratch,
            map,
        };
        self.push(StmtKind::Inst(Inst::Shape(inst)), loc);
        RegisterTensor::plain(out)
    }

    /// The inverse of [`Kernel::unpack`]: integer words (`u8`, `i8`, `u32` or `i32`) each
    /// packing `w / b` consecutive elements of the innermost dimension, the first in the low
    /// bits, so the result's innermost extent is `b / w` times the elements'. Every thread packs
    /// its own elements: their layout must give each thread whole words' worth of consecutive
    /// elements (a vectorized layout does). How values quantized in a kernel are stored packed:
    /// `let q = k.cast::<I4>(&x); let words = k.pack::<u32>(&q);`, then `store_global`.
    #[track_caller]
    pub fn pack<W: Element>(&mut self, elems: &RegisterTensor<impl Element>) -> RegisterTensor<W> {
        let loc = Loc::caller();
        let mut shape = self.prog.view_shape(&elems.view);
        let (b, w) = (
            self.prog.register(elems.view.tensor).dtype.bits(),
            W::DTYPE.bits(),
        );
        if let Some(last) = shape.last_mut() {
            *last /= i64::from(w / b.max(1)).max(1);
        }
        let view = elems.view;
        self.shape_view(|out| ShapeInst::Pack { src: view, out }, shape, loc)
    }

    /// The low-precision elements packed in a tile of integer words (`u8`, `i8`, `u32` or
    /// `i32`): each word of `w` bits holds `w / b` elements of `T` (`b` bits, dividing `w`),
    /// the first in its low bits, consecutive along the innermost dimension, so the result's
    /// innermost extent is `w / b` times the words'. Every thread reads its elements out of its
    /// own words (no data moves): the result's layout is the words' with each word's elements
    /// as consecutive local elements. How weights prepacked by the host
    /// ([`crate::lowp::pack`]) and loaded as words become values:
    /// `let q = k.unpack::<I4>(&words); let w = k.cast::<f16>(&q);`.
    #[track_caller]
    pub fn unpack<T: Element>(
        &mut self,
        words: &RegisterTensor<impl Element>,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let mut shape = self.prog.view_shape(&words.view);
        let (w, b) = (
            self.prog.register(words.view.tensor).dtype.bits(),
            T::DTYPE.bits(),
        );
        if let Some(last) = shape.last_mut() {
            *last *= i64::from(w / b.max(1)).max(1);
        }
        let view = words.view;
        self.shape_view(|out| ShapeInst::Unpack { src: view, out }, shape, loc)
    }

    /// The tile's registers seen as another tile: the source takes layout `from`, and each
    /// thread's local element `l` there is its local element `l` of the result, whose layout
    /// is `to` (and shape `to`'s). No data moves; the elements take new coordinates. Both
    /// layouts must hold each element once and give the same threads as many registers.
    ///
    /// The way to data the host arranged in the order threads need it: weights prepacked so
    /// that a plain load gives each thread its tensor-core fragment are loaded with a simple
    /// layout and relabelled as the fragment's tile.
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # use tilus::layout::RegisterLayout;
    /// # fn body(k: &mut Kernel, x: RegisterTensor<f32>) {
    /// // a [32, 4] tile, a row per thread, seen as [4, 32]: thread t's row is column t
    /// let rows = RegisterLayout::spatial(&[32, 1]).compose(&RegisterLayout::local(&[1, 4]));
    /// let cols = RegisterLayout::spatial(&[1, 32]).compose(&RegisterLayout::local(&[4, 1]));
    /// let y = k.relabel(&x, rows, cols);
    /// # }
    /// ```
    #[track_caller]
    pub fn relabel<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        from: crate::layout::RegisterLayout,
        to: crate::layout::RegisterLayout,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let shape = to.shape().to_vec();
        let view = src.view;
        self.shape_view(
            |out| ShapeInst::Relabel {
                src: view,
                out,
                from,
                to,
            },
            shape,
            loc,
        )
    }

    /// Elements `start .. start + len` of the tile along `dim` (compile-time numbers): a
    /// smaller tile made of the local elements of that range, which every thread must hold
    /// whole (a range that only some threads hold, or that cuts apart the elements a thread
    /// keeps together, is a diagnostic once layouts are known). A source whose layout nothing
    /// else fixes gets one the slice can keep (the dimension in blocks of `gcd(start, len)`
    /// in each thread's registers).
    #[track_caller]
    pub fn slice<T: Element>(
        &mut self,
        src: &RegisterTensor<T>,
        dim: usize,
        start: i32,
        len: i32,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let from = self.prog.view_shape(&src.view);
        let mut out = from.clone();
        let mut first = start as i64;
        match from.get(dim) {
            None => self.error(
                loc,
                format!(
                    "slice: a tile of {} dimension(s) has no dimension {dim}",
                    from.len()
                ),
            ),
            Some(&n) if start < 0 || len <= 0 || start as i64 + len as i64 > n => {
                self.error(
                    loc,
                    format!(
                        "slice: {start}..{} is not a non-empty range inside 0..{n} (dimension {dim} of a {from:?} tile)",
                        start as i64 + len as i64
                    ),
                );
                first = 0;
            }
            Some(_) => out[dim] = len as i64,
        }
        let view = src.view;
        self.shape_view(
            |out| ShapeInst::Slice {
                src: view,
                dim,
                start: first,
                out,
            },
            out,
            loc,
        )
    }
}
