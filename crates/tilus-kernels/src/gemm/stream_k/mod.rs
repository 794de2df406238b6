//! v6 with stream-K on its last rounds: the tiles of a persistent grid seldom come out as whole
//! rounds (512 tiles of 128 × 256 at 4096³ take four rounds of 128 blocks, four of 132
//! multiprocessors idle), so the last two rounds' tiles are shared out by K steps instead:
//! every block (a pair, in clusters) takes the same number of K steps of them, in one
//! contiguous run over the tiles in grouped order, and launches use every multiprocessor.
//!
//! The earlier rounds' tiles are walked whole, as in v6. Sharing two rounds (not one) gives
//! every block at least a tile's K steps, so a shared tile is split between two neighbouring
//! blocks at most: the one that takes its last K steps *finishes* it, and the one before, whose
//! run ends inside the tile, leaves its *partial* product in a workspace of f32 (one slot per
//! block) and raises its flag. Each block walks its shared tiles from the last to the first, so
//! a partial is the first thing its block computes and the finishing block's wait for it is
//! its last: the waiting block always has the higher index, which the GPU starts no earlier,
//! and which the interpreter (whose flag reads make it run blocks one at a time, in order)
//! runs later. The finisher adds the partial chunk by chunk in the epilogue, then casts and
//! stores as v6 does; its compare-and-swap lowers the flag again, so the workspace is ready
//! for the next launch. Writers fence after their stores and readers after the flag
//! (`fence_gpu`), as the relaxed atomics need.
//!
//! Where there are fewer tiles than multiprocessors (less than one round), nothing is shared:
//! every tile is walked whole. Sharing every tile there, each among as many blocks as its K
//! steps go to, was tried (docs/perf.md, "The `Gemm` entry point at every M"): correct, but
//! slower than v6's 128 × 128 tiles and split-K at those shapes, and it spilled 250-340 bytes
//! more at 128 × 256 tiles.
//!
//! Arguments: v6's `(m, n, k, a, b, c)`, then the workspace (a `[block_m, block_n]` f32 slot
//! per block: [`workspace_len`]) and the flags (two per block, zero before the first launch:
//! [`flags_len`]).

mod host;
mod kernel;
pub(crate) mod shares;

pub use host::{workspace_elements, StreamK};
pub use kernel::{MatmulStreamK, StreamKArgsOf};
pub use shares::{flags_len, workspace_len};
