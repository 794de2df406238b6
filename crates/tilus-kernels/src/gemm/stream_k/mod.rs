//! v6 with stream-K on its last rounds: the tiles of a persistent grid seldom come out as whole
//! rounds (512 tiles of 128 × 256 at 4096³ take four rounds of 128 blocks, four of 132
//! multiprocessors idle), so the last two rounds' tiles are shared out by K steps instead:
//! every block (a pair, in clusters) takes the same number of K steps of them, in one
//! contiguous run over the tiles in grouped order, and launches use every multiprocessor.
//! Where there are fewer tiles than multiprocessors (M = 256 against N = 4096: 32 tiles), every
//! tile is shared out so, each split among as many blocks as its K steps go to.
//!
//! The earlier rounds' tiles are walked whole, as in v6. Sharing two rounds (not one) gives
//! every block at least a tile's K steps, so a shared tile is split between two neighbouring
//! blocks at most; sharing every tile of less than a round splits one among several. The block
//! that takes a tile's last K step *finishes* it; each block before it whose run ends inside the
//! tile leaves its *partial* product in a workspace of f32 (one slot per block: a run ends
//! inside one tile at most) and raises its flag. Each block walks its shared tiles from the last
//! to the first, so a partial is the first thing its block computes and the finishing block's
//! waits for them are its last: the waiting block always has the higher index, which the GPU
//! starts no earlier, and which the interpreter (whose flag reads make it run blocks one at a
//! time, in order) runs later. The finisher adds the partials chunk by chunk in the epilogue,
//! then casts and stores as v6 does; its compare-and-swaps lower the flags again, so the
//! workspace is ready for the next launch. Writers fence after their stores and readers after
//! the flags (`fence_gpu`), as the relaxed atomics need.
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
