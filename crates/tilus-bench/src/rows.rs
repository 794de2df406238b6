//! What the row-wise workloads (`softmax`, `layer_norm`, `rms_norm`) share: a `[rows, cols]`
//! f16 matrix whose rows are independent, `cols` a compile-time constant of the kernel and
//! `rows` a runtime argument; and the bytes one launch moves.

use crate::size::Size;
use crate::Result;

/// The dimensions of a row-wise size.
pub const DIMS: &[&str] = &["rows", "cols"];

/// The compile-time constant of a row-wise kernel: `cols`.
pub fn consts(size: &Size) -> Vec<i64> {
    vec![size.values()[1] as i64]
}

/// Bytes a row-wise kernel over `[rows, cols]` f16 moves: the matrix read once and written
/// once, plus `extra` bytes (parameters read once per launch).
pub fn traffic(rows: usize, cols: usize, extra: u128) -> u128 {
    2 * 2 * rows as u128 * cols as u128 + extra
}

/// Bytes a row-wise kernel without parameters (`softmax`) moves at `size`.
pub fn traffic_of(size: &Size) -> Result<u128> {
    let [rows, cols] = size.dims()?;
    Ok(traffic(rows, cols, 0))
}
