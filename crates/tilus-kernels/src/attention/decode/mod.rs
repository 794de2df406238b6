//! `attention::decode`: attention of a decode step over a key-value cache, at the memory's
//! speed.
//!
//! Each sequence brings 1 to 8 new tokens and reads its whole context from the cache,
//! contiguous or paged (a block table per sequence). The work is the cache's bytes: the
//! kernel reads each key-value head's keys and values once for every query head that shares
//! them (GQA's group and the new tokens are the rows of one WGMMA), streams them through a
//! TMA ring, and splits long contexts among blocks when the batch alone would leave
//! multiprocessors idle (flash-decoding); a second kernel merges the splits.
//!
//! - [`problem`]: the call ([`Decode`], [`KvLayout`]), its checks, and the split.
//! - [`element`]: [`CacheElement`], what the cache holds (the attention's type, or FP8
//!   codes with a scale per key-value head).
//! - [`kernel`]: [`DecodeAttention`], one warp group per block of rows and split (and a
//!   warp group of converters over a cache of codes); `convert`: a step's codes converted in
//!   shared memory.
//! - [`merge`]: [`DecodeMerge`], the splits weighed into the output.
//! - [`append`]: [`DecodeAppend`], the new tokens' keys and values written into the cache.
//! - [`op`]: [`DecodeOp`], the host API on device buffers and on the interpreter.
//! - [`reference`](mod@reference): the host's decode step in f64.

use super::AttentionElement;

pub mod append;
mod convert;
pub mod element;
pub mod kernel;
pub mod merge;
pub mod op;
pub mod problem;
pub mod reference;
mod tuning;

pub use append::{AppendArgs, DecodeAppend};
pub use element::{head_scales, CacheElement};
pub use kernel::{DecodeArgs, DecodeAttention};
pub use merge::{DecodeMerge, MergeArgs};
pub use op::{Cache, CacheOf, DecodeOp, Tiling};
pub use problem::{Decode, KvLayout, MAX_SPLITS};
