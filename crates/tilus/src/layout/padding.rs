//! The extent a register tile should have so that a block's threads divide it: a row whose
//! width the threads do not divide gets a layout that keeps copies of much of it in every
//! thread (3000 columns over 128 threads: 375 elements each), and the register budget fails;
//! the same row in a tile padded to [`padded_extent`] columns, with the loads and stores masked
//! at the true width, takes an even share.

/// The extent of a tile's last dimension for `extent` elements of `element_bytes` bytes over
/// `threads` threads: rounded up to a multiple of one 16-byte vector per thread when it spans
/// the threads (every thread then holds the same number of whole vectors), to a power of two
/// when it is shorter (the threads then split evenly between it and the tile's other rows).
/// Mask the elements past `extent`: loads fill them, stores skip them.
///
/// ```
/// use tilus::layout::padded_extent;
/// assert_eq!(padded_extent(8192, 256, 2), 8192); // 4 vectors of 8 halves per thread
/// assert_eq!(padded_extent(5000, 256, 2), 6144); // 3 per thread; the last 1144 masked
/// assert_eq!(padded_extent(3000, 128, 4), 3072); // f32: 6 vectors of 4 per thread
/// assert_eq!(padded_extent(77, 32, 2), 128); // shorter than the threads' vectors
/// ```
pub fn padded_extent(extent: i64, threads: i64, element_bytes: i64) -> i64 {
    let vector = (16 / element_bytes.max(1)).max(1);
    let span = vector * threads.max(1);
    let extent = extent.max(1);
    if extent >= span {
        (extent / span + i64::from(extent % span != 0)).saturating_mul(span)
    } else {
        (extent as u64).next_power_of_two() as i64
    }
}
