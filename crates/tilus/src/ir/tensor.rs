//! Tensor and barrier declarations: the things instructions read and write.

use super::{DType, Expr, Loc, VarId};
use crate::layout::{RegisterLayout, SharedLayout};

/// Index of a global view in [`crate::ir::Program::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);
/// Index of a shared tensor in [`crate::ir::Program::shareds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedId(pub u32);
/// Index of a register tensor in [`crate::ir::Program::registers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegId(pub u32);
/// Index of an mbarrier array in [`crate::ir::Program::barriers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarrierArrayId(pub u32);

/// A view of global memory through a pointer argument: extents and strides (in elements),
/// outermost first. `global_view` derives row-major strides from the extents;
/// `global_view_strided` takes them from the script (leading dimensions, column-major views,
/// sub-matrices).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalDecl {
    /// Name in printed IR and generated CUDA.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// The pointer argument.
    pub ptr: VarId,
    /// Extents, outermost first; may depend on runtime arguments.
    pub shape: Vec<Expr>,
    /// Distance in elements between neighbours along each dimension, outermost first; may
    /// depend on runtime arguments. Generated code multiplies them in 64 bits.
    pub strides: Vec<Expr>,
    /// Whether the strides are the row-major ones derived from the extents.
    pub row_major: bool,
    /// Where it was declared.
    pub loc: Loc,
}

impl GlobalDecl {
    /// The row-major strides of `shape`, in 64 bits: the innermost is 1, each other one the
    /// product of the extents inside it (`(i64)n` for `[m, n]`).
    pub fn row_major_strides(shape: &[Expr]) -> Vec<Expr> {
        let mut strides = vec![Expr::Int(1, DType::I64); shape.len()];
        let mut acc: Option<Expr> = None;
        for d in (0..shape.len()).rev() {
            if let Some(a) = &acc {
                strides[d] = a.clone();
            }
            let wide = Expr::Cast(DType::I64, Box::new(shape[d].clone()));
            acc = Some(match acc {
                None => wide,
                Some(a) => Expr::binary(super::BinOp::Mul, a, shape[d].clone()),
            });
        }
        strides
    }

    /// The value of stride `d` when it is a compile-time constant.
    pub fn const_stride(&self, d: usize) -> Option<i64> {
        self.strides.get(d).and_then(|e| e.eval(&|_| None))
    }

    /// The number of elements the buffer must hold for every element of the view to exist,
    /// in 64 bits: the product of the extents for a row-major view, the largest offset plus
    /// one (`1 + sum((n_d - 1) * s_d)`) for a strided one.
    pub fn min_elements(&self) -> Expr {
        let wide = |e: &Expr| Expr::Cast(DType::I64, Box::new(e.clone()));
        if self.row_major {
            return self
                .shape
                .iter()
                .cloned()
                .reduce(|a, b| Expr::binary(super::BinOp::Mul, wide(&a), b))
                .map(|e| wide(&e))
                .unwrap_or(Expr::Int(0, DType::I64));
        }
        let mut total = Expr::Int(1, DType::I64);
        for (n, s) in self.shape.iter().zip(&self.strides) {
            let last = Expr::binary(super::BinOp::Sub, wide(n), Expr::Int(1, DType::I64));
            let term = Expr::binary(super::BinOp::Mul, last, wide(s));
            total = Expr::binary(super::BinOp::Add, total, term);
        }
        total
    }
}

/// A tile in shared memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedDecl {
    /// Name in printed IR and generated CUDA.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Extents (compile-time).
    pub shape: Vec<i64>,
    /// Byte placement of elements; set by layout inference when not pinned.
    pub layout: Option<SharedLayout>,
    /// Byte offset in the block's shared memory; set by the shared-memory planner.
    pub offset: Option<u32>,
    /// Where it was declared.
    pub loc: Loc,
}

impl SharedDecl {
    /// Bytes of its elements (saturating: absurd shapes do not wrap to small sizes).
    pub fn nbytes(&self) -> u64 {
        let elems = self
            .shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d.max(0) as u64));
        elems
            .and_then(|e| e.checked_mul(self.dtype.nbytes() as u64))
            .unwrap_or(u64::MAX)
    }

    /// Bytes the tile occupies in shared memory: its layout's, with the padding between
    /// stages; its elements' before layouts are inferred.
    pub fn footprint(&self) -> u64 {
        match &self.layout {
            Some(l) if l.stage_stride.is_some() => l.nbytes() as u64,
            _ => self.nbytes(),
        }
    }
}

/// A tile held in registers, spread over the threads of the group that declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterDecl {
    /// Name in printed IR and generated CUDA.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Extents (compile-time).
    pub shape: Vec<i64>,
    /// Distribution over threads; set by layout inference when not pinned.
    pub layout: Option<RegisterLayout>,
    /// Threads of the group it lives in.
    pub group_threads: u32,
    /// Where it was declared.
    pub loc: Loc,
}

/// An array of mbarriers in shared memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BarrierArrayDecl {
    /// Name in printed IR and generated CUDA.
    pub name: String,
    /// Expected arrival count of each barrier.
    pub counts: Vec<u32>,
    /// Byte offset in shared memory; set by the shared-memory planner.
    pub offset: Option<u32>,
    /// Where it was declared.
    pub loc: Loc,
}

/// One barrier of an array: the array and an index (a constant or a variable).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BarrierRef {
    /// The array.
    pub array: BarrierArrayId,
    /// Which barrier.
    pub index: Expr,
}

/// A shared tile as an instruction sees it: the tile itself or one stage of it (its leading
/// dimension indexed by a scalar, `at`), possibly some of its rows (`rows`), possibly through a
/// transpose. Views move no data.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedView {
    /// The tile.
    pub tensor: SharedId,
    /// The stage: an index into the tile's leading dimension, which the view drops; `None`:
    /// the whole tile.
    pub stage: Option<Expr>,
    /// Whether the (last) two dimensions are swapped.
    pub transposed: bool,
    /// `(start, len)`: rows `start .. start + len` of a two-dimensional tile (or stage), the
    /// first of its two dimensions as stored; `None`: every row.
    pub rows: Option<(i64, i64)>,
}

impl SharedView {
    /// The tile itself.
    pub fn plain(tensor: SharedId) -> SharedView {
        SharedView {
            tensor,
            stage: None,
            transposed: false,
            rows: None,
        }
    }

    /// The extents of the elements the view covers, as stored (a stage's, for `at`; `len` rows
    /// for `rows`), given the tile's shape.
    pub fn stored_shape(&self, tile: &[i64]) -> Vec<i64> {
        let mut s = match self.stage {
            Some(_) => tile.get(1..).unwrap_or_default().to_vec(),
            None => tile.to_vec(),
        };
        if let (Some((_, len)), 2) = (self.rows, s.len()) {
            s[0] = len;
        }
        s
    }

    /// The shape the instruction sees: [`SharedView::stored_shape`] with the last two
    /// dimensions swapped when transposed.
    pub fn shape(&self, tile: &[i64]) -> Vec<i64> {
        let mut s = self.stored_shape(tile);
        let n = s.len();
        if self.transposed && n >= 2 {
            s.swap(n - 2, n - 1);
        }
        s
    }
}

/// A register tensor, possibly seen through a transpose (views move no data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegView {
    /// The tensor.
    pub tensor: RegId,
    /// Whether the two dimensions are swapped.
    pub transposed: bool,
}

impl RegView {
    /// The tensor itself.
    pub fn plain(tensor: RegId) -> RegView {
        RegView {
            tensor,
            transposed: false,
        }
    }

    /// The permutation this view applies to the tensor's dimensions.
    pub fn perm(&self, rank: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..rank).collect();
        if self.transposed && rank >= 2 {
            p.swap(rank - 2, rank - 1);
        }
        p
    }

    /// The layout of this view, given the layout of its tensor (and back: transposes are
    /// involutions).
    pub fn layout_of(&self, l: &RegisterLayout) -> RegisterLayout {
        l.permute(&self.perm(l.rank()))
    }
}
