//! Staging of an operand TMA cannot read: a copy of a strided, batched matrix whose rows do
//! not start on 16-byte boundaries (an odd leading dimension or batch stride) into a
//! workspace whose rows do (the leading dimension rounded up to 8 elements), so that the
//! GEMM's main loop reads it with TMA like any other. A memory-bound pass over the operand:
//! a fraction of the product's time where the product is compute-bound, and far cheaper
//! than the product's own loads element by element (`RingOperands::a_loaded`).

use tilus::lang::Element;
use tilus::prelude::*;

/// Rows of a block's tile.
const ROWS: i32 = 32;
/// Columns of a block's tile.
const COLS: i32 = 64;

/// The copy: `(batches, rows, cols, src, ld, step, dst)` copies `batches` matrices of
/// `rows × cols` from `src` (rows `ld` apart, matrices `step` apart) to `dst`, whose rows are
/// [`staged_ld`]`(cols)` apart (`cols` rounded up to 8: rows that start on 16-byte
/// boundaries, which the stores can fill 16 bytes at a time) and matrices `rows` rows apart.
/// The columns past `cols` of `dst` are not written (nothing reads them: the GEMM's view of
/// `dst` is `cols` wide).
///
/// ```
/// use tilus_kernels::gemm::general::StageCopy;
/// // two 3 × 5 matrices, rows 7 apart, matrices 23 apart, into rows of 8
/// let src: Vec<half::f16> = (0..46).map(|i| half::f16::from_f32(i as f32)).collect();
/// let mut dst = vec![half::f16::NAN; 2 * 3 * 8];
/// tilus::interpret(&StageCopy, (2, 3, 5, &src[..], 7, 23, &mut dst[..]))?;
/// assert_eq!(dst[8 + 4], src[7 + 4]); // row 1, column 4 of the first matrix
/// assert_eq!(dst[24 + 16], src[23 + 14]); // row 2, column 0 of the second
/// assert!(dst[5].is_nan()); // past the columns: not written
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StageCopy;

/// The copy's arguments in element type `T`.
pub type StageArgsOf<T> = (i32, i32, i32, Ptr<T>, i32, i32, PtrMut<T>);

/// The names of the copy's arguments in the generated code.
const STAGE_ARG_NAMES: &[&str] = &["batches", "rows", "cols", "src", "ld", "step", "dst"];

/// The staged copy's leading dimension for rows of `cols` 16-bit elements: `cols` rounded up
/// to 8.
///
/// ```
/// assert_eq!(tilus_kernels::gemm::general::staged_ld(4095), 4096);
/// ```
pub fn staged_ld(cols: usize) -> usize {
    cols.next_multiple_of(8)
}

crate::gemm::operand::f16_and_bf16_scripts!(
    StageCopy,
    "gemm_stage_copy",
    StageArgsOf,
    STAGE_ARG_NAMES,
    copy
);

impl StageCopy {
    /// The body for element type `T`: a block per `ROWS × COLS` tile of a matrix; each warp
    /// loads a row at a time element by element (consecutive lanes on consecutive elements),
    /// and stores it.
    #[allow(clippy::type_complexity)]
    pub(crate) fn copy<T: Element>(
        &self,
        k: &mut Kernel,
        (batches, rows, cols, src, ld, step, dst): (Val, Val, Val, PtrVal<T>, Val, Val, PtrVal<T>),
    ) {
        k.blocks([cdiv(cols, COLS), cdiv(rows, ROWS), Scalar::from(batches)]);
        k.warps(4);
        let (bx, by, bz) = (k.block_idx().x, k.block_idx().y, k.block_idx().z);
        let col = k.let_i32(bx * COLS);
        let row = k.let_i32(by * ROWS);
        let b = k.let_i32(bz);
        let from = k.global_view_strided::<T>(src, (batches, rows, cols), (step, ld, 1));
        // `staged_ld(cols)`, a multiple of 8 the stores can see (strides as expressions of
        // the arguments: the launch checks the buffers with them)
        let ld_out = (Scalar::from(cols) + 7) / 8 * 8;
        let out_step = Scalar::from(rows) * ld_out.clone();
        let to = k.global_view_strided::<T>(dst, (batches, rows, cols), (out_step, ld_out, 1));
        let tile = k.load_global(&from, (b, row, col), [1, ROWS, COLS]);
        k.store_global(&to, &tile, (b, row, col));
    }
}
