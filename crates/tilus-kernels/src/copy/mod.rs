//! Copies: [`tile`], a 2-D copy through shared memory by a TMA load and a TMA store (the
//! matmul series' epilogue on its own).

pub mod tile;

pub use tile::{TileCopy, TileCopyOp};
