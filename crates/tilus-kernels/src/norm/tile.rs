//! The register tile that holds whole rows in the row-wise kernels: its width for a row of
//! `cols` halves over a block's threads.
//!
//! A block holds `block_rows` whole rows in registers, so each row is read once and written
//! once: the reductions (a maximum, a sum) need every element of the row before the first
//! output can be written, and keeping the row in registers between them is what makes the
//! kernel one pass over memory.

/// The width of the register tile that holds a row of `cols` halves in a block of `threads`:
/// the row rounded up to a multiple of one 16-byte vector per thread when it spans the block
/// (so that every thread holds the same number of whole vectors), to a power of two when it is
/// shorter (so that the threads split evenly between the row and the block's other rows).
/// The columns past `cols` are masked: loads fill them, stores skip them.
///
/// ```
/// use tilus_kernels::norm::tile::tile_cols;
/// assert_eq!(tile_cols(8192, 256), 8192); // 4 vectors of 8 halves per thread
/// assert_eq!(tile_cols(5000, 256), 6144); // 3 per thread; the last 1144 columns masked
/// assert_eq!(tile_cols(77, 32), 128); // shorter than the block: a power of two
/// ```
pub fn tile_cols(cols: i64, threads: i64) -> i64 {
    tilus::layout::padded_extent(cols, threads, 2)
}

#[cfg(test)]
mod tests {
    use super::tile_cols;

    #[test]
    fn tiles_cover_rows_with_whole_vectors_per_thread() {
        assert_eq!(tile_cols(8192, 256), 8192);
        assert_eq!(tile_cols(4096, 128), 4096);
        assert_eq!(tile_cols(1000, 128), 1024);
        assert_eq!(tile_cols(12288, 256), 12288);
        assert_eq!(tile_cols(5000, 256), 6144);
        assert_eq!(tile_cols(1, 128), 1);
        assert_eq!(tile_cols(77, 32), 128);
    }
}
