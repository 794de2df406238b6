//! Split-K for small M: `C = A · Bᵀ` when M is too small to give every multiprocessor a tile
//! (at M = 16 and N = 4096, 128-column tiles make 32 blocks for 132 multiprocessors). K is
//! split into `splits` ranges; block `(tile, s)` multiplies its tile over range `s` and writes
//! the f32 partial product to a workspace ([`MatmulSplitK`]); a second kernel sums the
//! partials in split order and rounds once to f16 ([`SplitKReduce`]). Both read or write each
//! byte once: at small M the cost is reading B, which every split shares out.
//!
//! With `serial = 1` there is no second kernel: the block of the last split keeps its partial
//! in registers, waits until the tile's other splits have left theirs (a counter per tile,
//! raised once by each of them after its stores and a fence), adds theirs in split order and
//! its own last, and stores C. The same sums in the same order as the second kernel's, so the
//! same bits; one launch fewer, which at small M is a large part of a call of 20 µs. The
//! waiting block has the highest index of its tile's blocks (the split is the grid's slower
//! dimension): the GPU starts it no earlier than those it waits for, and the interpreter runs
//! it after them. Its compare-and-swap lowers the counter again for the next launch.
//!
//! The main loop is v4's, with one consumer warp group of 64 rows: a producer warp fills a
//! [`Pipeline`](tilus::lang::Pipeline) with the TMA copies of A and B, the consumers keep one WGMMA in flight.
//!
//! The workspace holds `splits` partials of `[tiles_m · 64, N]` f32 one above the other
//! (rows padded to whole tiles, so that one split's tile never spills into the next one's
//! rows): [`workspace_len`].

mod host;
pub mod kernels;

pub use host::SplitK;
pub use kernels::{
    counters_len, workspace_len, MatmulSplitK, SplitKReduce, MAX_SPLITS, SPLIT_K_BLOCK_M,
};
