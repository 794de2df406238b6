//! Tensor handles and the memory and arithmetic instructions: global views, shared and
//! register tiles, loads, stores and casts.

use super::{Dims, Element, Kernel, PtrVal, Scalar, Scalars, Val};
use crate::ir::{
    ArithInst, DType, GlobalDecl, GlobalId, Inst, Loc, MemoryInst, RegId, RegView, RegisterDecl,
    SharedDecl, SharedId, SharedView, StmtKind,
};
use std::marker::PhantomData;

/// A view of global memory with element type `T`.
pub struct GlobalTensor<T> {
    pub(crate) id: GlobalId,
    _t: PhantomData<T>,
}

/// A tile in shared memory with element type `T`, or a view of it: one stage (`at`), a
/// transpose. `Copy`, like the other handles: a stage index is a [`Val`] (a variable or a
/// constant), as for `bar.at(v)`.
pub struct SharedTensor<T> {
    pub(crate) id: SharedId,
    pub(crate) transposed: bool,
    /// The index into the leading dimension, for a view of one stage.
    stage: Option<Val>,
    /// The extent of the leading dimension (the stages of `at`).
    leading: i32,
    /// The extent of the second dimension (the rows of a stage, for `rows`).
    second: i32,
    /// Rows `(start, len)` of the tile or stage (`rows`).
    rows: Option<(i32, i32)>,
    /// A misuse of the view functions, reported by the instruction that takes the view (the
    /// handle has no kernel to report to).
    misuse: Option<&'static str>,
    nbytes: i32,
    _t: PhantomData<T>,
}

/// A tile in registers with element type `T`, possibly seen transposed.
pub struct RegisterTensor<T> {
    pub(crate) view: RegView,
    _t: PhantomData<T>,
}

macro_rules! copy_handle {
    ($($t:ident),*) => {$(
        impl<T> Clone for $t<T> { fn clone(&self) -> Self { *self } }
        impl<T> Copy for $t<T> {}
    )*};
}
copy_handle!(GlobalTensor, SharedTensor, RegisterTensor);

impl<T: Element> GlobalTensor<T> {
    /// The same view typed `U`, where `U` is `T` (`None` otherwise): as
    /// [`SharedTensor::as_type`], for global views.
    pub fn as_type<U: Element>(&self) -> Option<GlobalTensor<U>> {
        (U::DTYPE == T::DTYPE).then_some(GlobalTensor {
            id: self.id,
            _t: PhantomData,
        })
    }
}

impl<T: Element> SharedTensor<T> {
    /// The same handle typed `U`, where `U` is `T` (`None` otherwise): a script generic over
    /// two element types that learns, while it traces, that they are one type, and uses the
    /// tile where the other is expected (a cache read as stored when its type is the
    /// products' type, converted otherwise).
    pub fn as_type<U: Element>(&self) -> Option<SharedTensor<U>> {
        (U::DTYPE == T::DTYPE).then_some(SharedTensor {
            id: self.id,
            transposed: self.transposed,
            stage: self.stage,
            leading: self.leading,
            second: self.second,
            rows: self.rows,
            misuse: self.misuse,
            nbytes: self.nbytes,
            _t: PhantomData,
        })
    }
}

impl<T> SharedTensor<T> {
    /// Size of the tile in bytes (a compile-time number). Tiles larger than
    /// [`SharedTensor::NBYTES_CAP`] report the cap (no such tile fits in shared memory, and
    /// the verifier says so), so that sums of byte counts in scripts cannot overflow.
    pub fn nbytes(&self) -> i32 {
        self.nbytes
    }

    /// The largest byte count [`SharedTensor::nbytes`] reports: 16 MiB, far beyond the 227 KB
    /// of shared memory a block can have, small enough that 127 of them add up within `i32`.
    pub const NBYTES_CAP: i32 = 1 << 24;

    /// The transposed view: swaps the last two dimensions without moving data. Tensor-core
    /// instructions take K-major `[N, K]` tiles this way as their `[K, N]` operand.
    pub fn transpose(&self) -> SharedTensor<T> {
        SharedTensor {
            transposed: !self.transposed,
            ..*self
        }
    }

    /// One stage of a tile whose leading dimension holds stages: `sa.at(s)` of a
    /// `[stages, 128, 64]` tile is a `[128, 64]` tile, which every instruction that takes a
    /// shared tile accepts (TMA copies, wgmma operands, loads and stores). The index is a
    /// runtime value (compute it with `k.let_i32(..)`, as for `bar.at(v)`) or a constant; the
    /// interpreter reports an index outside the stages, the verifier a constant one. Each stage
    /// starts at the alignment its swizzle needs (the layout pads stages that would not).
    pub fn at(&self, stage: impl Into<Val>) -> SharedTensor<T> {
        let misuse = match (self.stage, self.transposed) {
            _ if self.rows.is_some() => Some("at() of rows: take the stage first, then rows()"),
            (Some(_), _) => Some("at() of a stage: a view indexes the leading dimension once"),
            (None, true) => {
                Some("at() of a transposed view: take the stage first, then transpose()")
            }
            (None, false) => self.misuse,
        };
        let leading = self.leading.max(1);
        SharedTensor {
            stage: Some(stage.into()),
            misuse,
            nbytes: self.nbytes / leading,
            leading: 1,
            ..*self
        }
    }

    /// Rows `start .. start + len` of a two-dimensional tile, or of one stage of a staged
    /// tile (`sb.at(s).rows(128, 128)` of a `[stages, 256, 64]` tile is the stage's second
    /// half, a `[128, 64]` tile): TMA copies, WGMMA operands, loads and stores accept it. The
    /// rows must start a multiple of 1024 bytes into the tile (where a swizzle's pattern
    /// starts again: 8 rows of 128 bytes), which the verifier checks.
    pub fn rows(&self, start: i32, len: i32) -> SharedTensor<T> {
        let misuse = match (self.rows, self.transposed) {
            (Some(_), _) => Some("rows() of rows: a view takes rows once"),
            (None, true) => {
                Some("rows() of a transposed view: take the rows first, then transpose()")
            }
            (None, false) => self.misuse,
        };
        // the rows of a stage, or of the whole tile (whose first dimension is then the rows)
        let total = if self.stage.is_some() {
            self.second
        } else {
            self.leading
        };
        SharedTensor {
            rows: Some((start, len)),
            misuse,
            nbytes: (self.nbytes as i64 * len.max(0) as i64 / total.max(1) as i64) as i32,
            ..*self
        }
    }

    /// The IR view.
    pub(crate) fn view(&self) -> SharedView {
        SharedView {
            tensor: self.id,
            stage: self.stage.map(|v| Scalar::from(v).0),
            transposed: self.transposed,
            rows: self.rows.map(|(s, l)| (s as i64, l as i64)),
        }
    }

    /// Why this handle cannot be used, if it cannot (see [`SharedTensor::at`]).
    pub(crate) fn misuse(&self) -> Option<&'static str> {
        self.misuse
    }
}

impl Kernel {
    /// The IR view of a shared operand, reporting at `loc` a misuse of the view functions and,
    /// for instructions that take the tile as stored (`transposable` false), a transposed view.
    pub(crate) fn shared_operand<T>(
        &mut self,
        t: &SharedTensor<T>,
        what: &str,
        transposable: bool,
        loc: Loc,
    ) -> SharedView {
        if let Some(why) = t.misuse() {
            self.error(loc, format!("{what}: {why}"));
        }
        if t.transposed && !transposable {
            self.error(
                loc,
                format!("{what} takes the shared tile as stored, not a transposed view"),
            );
        }
        t.view()
    }
}

impl<T> RegisterTensor<T> {
    /// The handle of a tile the builder just declared.
    pub(crate) fn plain(tensor: RegId) -> RegisterTensor<T> {
        RegisterTensor {
            view: RegView::plain(tensor),
            _t: PhantomData,
        }
    }

    /// The handle of a view of a tile.
    pub(crate) fn of_view(view: RegView) -> RegisterTensor<T> {
        RegisterTensor {
            view,
            _t: PhantomData,
        }
    }

    /// The transposed view: swaps the last two dimensions without moving data.
    pub fn transpose(&self) -> RegisterTensor<T> {
        RegisterTensor {
            view: RegView {
                tensor: self.view.tensor,
                transposed: !self.view.transposed,
            },
            _t: PhantomData,
        }
    }
}

/// A constant of element type `T` (integers truncate toward zero, as `as` does).
pub(crate) fn constant<T: Element>(v: f64) -> crate::ir::Expr {
    if T::DTYPE.is_float() {
        crate::ir::Expr::Float(v.to_bits(), T::DTYPE)
    } else {
        crate::ir::Expr::Int(v as i64, T::DTYPE)
    }
}

pub(crate) fn dims(k: &mut Kernel, loc: Loc, what: &str, shape: &[i32]) -> Vec<i64> {
    if shape.is_empty() {
        k.error(loc, format!("{what}: a tile needs at least one dimension"));
        return vec![1];
    }
    if shape.iter().any(|&d| d <= 0) {
        k.error(
            loc,
            format!("{what}: every dimension must be positive, got {shape:?}"),
        );
    }
    shape.iter().map(|&d| d.max(1) as i64).collect()
}

impl Kernel {
    /// Declares the shared scratch tile of the instruction that defines `out` (a reduction,
    /// scan or conversion whose threads may exchange elements): `{out}_scratch`, f32 words,
    /// empty until layout inference sizes it (`Rules::internal_shared`).
    pub(crate) fn scratch_for(&mut self, out: crate::ir::RegId, loc: Loc) -> SharedId {
        let name = format!("{}_scratch", self.prog.register(out).name);
        let scratch = SharedId(self.prog.shareds.len() as u32);
        self.prog.shareds.push(SharedDecl {
            name,
            dtype: DType::F32,
            shape: vec![0],
            layout: None,
            offset: None,
            loc,
        });
        scratch
    }

    /// Interprets a pointer argument as a row-major tensor of the given shape.
    #[track_caller]
    pub fn global_view<T: Element>(
        &mut self,
        ptr: PtrVal<T>,
        shape: impl Scalars,
    ) -> GlobalTensor<T> {
        let shape = shape.into_exprs();
        let strides = GlobalDecl::row_major_strides(&shape);
        self.view_decl(T::DTYPE, ptr.var, (shape, strides, true), Loc::caller())
    }

    /// Interprets a pointer argument as a tensor of the given shape whose neighbours along
    /// dimension `d` are `strides[d]` elements apart (outermost first; constants or runtime
    /// arguments). Row `i` of an `[m, n]` matrix with leading dimension `ld` is at `i * ld`:
    /// `global_view_strided(ptr, [m, n], (ld, 1))`; its column-major transpose is
    /// `global_view_strided(ptr, [n, m], (1, ld))`; a sub-matrix is a view of an offset pointer
    /// with the parent's strides. Strides must not be negative; at launch the buffer must
    /// hold the largest element the view addresses, `1 + sum((shape[d] - 1) * strides[d])`.
    #[track_caller]
    pub fn global_view_strided<T: Element>(
        &mut self,
        ptr: PtrVal<T>,
        shape: impl Scalars,
        strides: impl Scalars,
    ) -> GlobalTensor<T> {
        let loc = Loc::caller();
        let (shape, strides) = self.strides_of("global_view_strided", shape, strides, loc);
        self.view_decl(T::DTYPE, ptr.var, (shape, strides, false), loc)
    }

    /// Interprets a buffer of bytes as a row-major tensor of packed low-precision elements of
    /// type `T` ([`crate::lowp::pack`] lays them out, the first in the low bits of the first
    /// byte; 8-bit types are a code a byte), so that code generic over the weight type takes
    /// bytes for every width. Shape, offsets and strides count elements; each thread's
    /// loads and stores move whole bytes (the verifier says so where a tile's layout or the
    /// view's strides would split one).
    #[track_caller]
    pub fn global_view_packed<T: Element>(
        &mut self,
        ptr: PtrVal<u8>,
        shape: impl Scalars,
    ) -> GlobalTensor<T> {
        let loc = Loc::caller();
        let shape = shape.into_exprs();
        let strides = GlobalDecl::row_major_strides(&shape);
        self.check_packed::<T>(loc);
        self.view_decl(T::DTYPE, ptr.var, (shape, strides, true), loc)
    }

    /// [`Kernel::global_view_packed`] with strides (in elements), as
    /// [`Kernel::global_view_strided`]: the innermost stride must be 1 and the others whole
    /// bytes.
    #[track_caller]
    pub fn global_view_packed_strided<T: Element>(
        &mut self,
        ptr: PtrVal<u8>,
        shape: impl Scalars,
        strides: impl Scalars,
    ) -> GlobalTensor<T> {
        let loc = Loc::caller();
        let (shape, strides) = self.strides_of("global_view_packed_strided", shape, strides, loc);
        self.check_packed::<T>(loc);
        self.view_decl(T::DTYPE, ptr.var, (shape, strides, false), loc)
    }

    /// A strided view's extents and strides, one stride per extent (a diagnostic, and strides
    /// of 1 where they are missing, otherwise).
    fn strides_of(
        &mut self,
        name: &str,
        shape: impl Scalars,
        strides: impl Scalars,
        loc: Loc,
    ) -> (Vec<crate::ir::Expr>, Vec<crate::ir::Expr>) {
        let shape = shape.into_exprs();
        let mut strides = strides.into_exprs();
        if strides.len() != shape.len() {
            self.error(
                loc,
                format!(
                    "{name}: {} extents but {} strides; give one stride per dimension",
                    shape.len(),
                    strides.len()
                ),
            );
            strides.resize(shape.len(), crate::ir::Expr::i32(1));
        }
        (shape, strides)
    }

    /// A packed view takes low-precision types only.
    fn check_packed<T: Element>(&mut self, loc: Loc) {
        if !T::DTYPE.is_lowp() {
            self.error(
                loc,
                format!(
                    "global_view_packed<{}>: not a low-precision type; view its buffer with \
                     global_view",
                    T::DTYPE
                ),
            );
        }
    }

    /// Declares a view of `dtype` over pointer `ptr`.
    fn view_decl<T: Element>(
        &mut self,
        dtype: crate::ir::DType,
        ptr: crate::ir::VarId,
        (shape, strides, row_major): (Vec<crate::ir::Expr>, Vec<crate::ir::Expr>, bool),
        loc: Loc,
    ) -> GlobalTensor<T> {
        let name = self.fresh_name("g");
        let id = GlobalId(self.prog.globals.len() as u32);
        self.prog.globals.push(GlobalDecl {
            name,
            dtype,
            ptr,
            shape,
            strides,
            row_major,
            loc,
        });
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::GlobalView(id))),
            loc,
        );
        GlobalTensor {
            id,
            _t: PhantomData,
        }
    }

    /// Allocates a tile in shared memory. Its bytes are reserved until [`Kernel::free_shared`]
    /// or the end of the kernel.
    #[track_caller]
    pub fn shared_tensor<T: Element>(&mut self, shape: impl Dims) -> SharedTensor<T> {
        let loc = Loc::caller();
        let shape = dims(self, loc, "shared_tensor", &shape.into_dims());
        let name = self.fresh_name("s");
        let id = SharedId(self.prog.shareds.len() as u32);
        let decl = SharedDecl {
            name,
            dtype: T::DTYPE,
            shape,
            layout: None,
            offset: None,
            loc,
        };
        let cap = SharedTensor::<T>::NBYTES_CAP;
        let nbytes = i32::try_from(decl.nbytes()).unwrap_or(cap).min(cap);
        let leading = i32::try_from(decl.shape[0]).unwrap_or(i32::MAX);
        let decl_second = decl
            .shape
            .get(1)
            .map_or(1, |&d| i32::try_from(d).unwrap_or(i32::MAX));
        self.prog.shareds.push(decl);
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::AllocShared(id))),
            loc,
        );
        let second = decl_second;
        SharedTensor {
            id,
            transposed: false,
            stage: None,
            leading,
            second,
            rows: None,
            misuse: None,
            nbytes,
            _t: PhantomData,
        }
    }

    /// Ends the lifetime of a shared tile: later allocations may reuse its bytes. The planner
    /// never lets a freed tile's bytes be reused while data still lands in them.
    #[track_caller]
    pub fn free_shared<T>(&mut self, t: &SharedTensor<T>) {
        let loc = Loc::caller();
        self.shared_operand(t, "free_shared", false, loc);
        if t.stage.is_some() {
            self.error(
                loc,
                "free_shared takes the shared tile itself, not one stage of it",
            );
        }
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::FreeShared(t.id))),
            loc,
        );
    }

    pub(crate) fn new_register<T: Element>(&mut self, shape: Vec<i64>, loc: Loc) -> RegId {
        let name = self.fresh_name("r");
        let id = RegId(self.prog.registers.len() as u32);
        let group_threads = self.group_threads();
        self.prog.registers.push(RegisterDecl {
            name,
            dtype: T::DTYPE,
            shape,
            layout: None,
            group_threads,
            loc,
        });
        id
    }

    /// Allocates a tile in registers, spread over the threads of the current group, optionally
    /// filled with `init`.
    #[track_caller]
    pub fn register_tensor<T: Element>(
        &mut self,
        shape: impl Dims,
        init: impl Into<Option<f64>>,
    ) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let shape = dims(self, loc, "register_tensor", &shape.into_dims());
        let out = self.new_register::<T>(shape, loc);
        let init = init.into().map(constant::<T>);
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::AllocRegister { out, init })),
            loc,
        );
        RegisterTensor {
            view: RegView::plain(out),
            _t: PhantomData,
        }
    }

    /// Copies a shared tile (or one stage of it) into a new register tile laid out for its
    /// consumer (for the operands of `dot`, this lowers to `ldmatrix`).
    #[track_caller]
    pub fn load_shared<T: Element>(&mut self, src: &SharedTensor<T>) -> RegisterTensor<T> {
        let loc = Loc::caller();
        let src = self.shared_operand(src, "load_shared", false, loc);
        let mut shape = self.prog.sview_stored_shape(&src);
        if shape.is_empty() {
            // a stage of a 1-D tile (the verifier says so); keep the register tile valid
            shape = vec![1];
        }
        let out = self.new_register::<T>(shape, loc);
        self.push(
            StmtKind::Inst(Inst::Memory(MemoryInst::LoadShared { src, out })),
            loc,
        );
        RegisterTensor {
            view: RegView::plain(out),
            _t: PhantomData,
        }
    }

    /// Writes a register tile to global memory with its first element at `offsets`; elements
    /// outside the view are skipped.
    #[track_caller]
    pub fn store_global<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
    ) {
        let loc = Loc::caller();
        let offsets = offsets.into_exprs();
        let inst = MemoryInst::StoreGlobal {
            dst: dst.id,
            src: src.view,
            offsets,
            vector: None,
            mask: None,
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
    }

    /// [`Kernel::store_global`] of the elements where `mask` is true (a bool tile or
    /// expression, broadcast to the tile's shape: `k.arange([1, 64], 1).lt(len)`, a causal
    /// comparison); the others, and those outside the view, are left as they are. Vectors the
    /// mask keeps whole are stored at once, the rest element by element.
    #[track_caller]
    pub fn store_global_where<T: Element>(
        &mut self,
        dst: &GlobalTensor<T>,
        src: &RegisterTensor<T>,
        offsets: impl Scalars,
        mask: impl super::IntoTile<bool>,
    ) {
        let loc = Loc::caller();
        let shape = self.prog.view_shape(&src.view);
        let kept = self.new_register::<bool>(shape, loc);
        let expr = mask.into_tile().e;
        let map = crate::ir::ArithInst::Map { expr, out: kept };
        self.push(StmtKind::Inst(Inst::Arith(map)), loc);
        let inst = MemoryInst::StoreGlobal {
            dst: dst.id,
            src: src.view,
            offsets: offsets.into_exprs(),
            vector: None,
            mask: Some(RegView::plain(kept)),
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
    }

    /// Reads the box of `src` at `offsets` (outermost first) into a new register tile of
    /// `shape`; elements outside the view read 0. Unless another instruction fixes the tile's
    /// layout, each thread gets up to 16 bytes of consecutive elements along the innermost
    /// dimension, and the loads are vectorized where the view's strides, the offsets and the
    /// base address allow (see [`Kernel::load_global_or`] for another fill value).
    #[track_caller]
    pub fn load_global<T: Element>(
        &mut self,
        src: &GlobalTensor<T>,
        offsets: impl Scalars,
        shape: impl Dims,
    ) -> RegisterTensor<T> {
        self.load_global_at(src, offsets, shape, 0.0, Loc::caller())
    }

    /// [`Kernel::load_global`] where elements outside the view read `fill` (converted to `T`
    /// as [`Kernel::register_tensor`] converts its initial value): `f64::NEG_INFINITY` before
    /// a maximum, 1 before a product.
    #[track_caller]
    pub fn load_global_or<T: Element>(
        &mut self,
        src: &GlobalTensor<T>,
        offsets: impl Scalars,
        shape: impl Dims,
        fill: f64,
    ) -> RegisterTensor<T> {
        self.load_global_at(src, offsets, shape, fill, Loc::caller())
    }

    /// Every thread of the current group reads the element of `src` at `index` (0 outside
    /// the view) into a scalar: sizes and offsets the host leaves in memory, such as a packed
    /// batch's cumulative sequence lengths. i32, u32 and f32 views. The threads read one
    /// address, so the value is the same in each (the caches serve it once).
    #[track_caller]
    pub fn load_global_scalar<T: Element>(
        &mut self,
        src: &GlobalTensor<T>,
        index: impl Scalars,
    ) -> Val {
        let loc = Loc::caller();
        let dtype = T::DTYPE;
        let name = self.fresh_name("x");
        let out = self.new_var(name, dtype, crate::ir::VarKind::Let);
        let inst = MemoryInst::LoadScalar {
            src: src.id,
            index: index.into_exprs(),
            out,
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
        Val::var(out, dtype)
    }

    fn load_global_at<T: Element>(
        &mut self,
        src: &GlobalTensor<T>,
        offsets: impl Scalars,
        shape: impl Dims,
        fill: f64,
        loc: Loc,
    ) -> RegisterTensor<T> {
        let shape = dims(self, loc, "load_global", &shape.into_dims());
        let out = self.new_register::<T>(shape, loc);
        let inst = MemoryInst::LoadGlobal {
            src: src.id,
            out,
            offsets: offsets.into_exprs(),
            fill: constant::<T>(fill),
            vector: None,
        };
        self.push(StmtKind::Inst(Inst::Memory(inst)), loc);
        RegisterTensor {
            view: RegView::plain(out),
            _t: PhantomData,
        }
    }

    /// Converts every element to `U` (round to nearest even), keeping the layout.
    #[track_caller]
    pub fn cast<U: Element>(&mut self, src: &RegisterTensor<impl Element>) -> RegisterTensor<U> {
        let loc = Loc::caller();
        let base = &self.prog.register(src.view.tensor).shape;
        let shape = src.view.perm(base.len()).iter().map(|&d| base[d]).collect();
        let out = self.new_register::<U>(shape, loc);
        self.push(
            StmtKind::Inst(Inst::Arith(ArithInst::Cast { src: src.view, out })),
            loc,
        );
        RegisterTensor {
            view: RegView::plain(out),
            _t: PhantomData,
        }
    }
}
