//! Attention: `O = softmax(scale · Q·Kᵀ) · V` per head, the flash way (the scores never leave
//! the chip).
//!
//! - [`FlashForward`]: the forward kernel on the tensor cores (TMA, WGMMA, the online softmax
//!   in registers), causal or not, GQA, packed batches of sequences of any lengths;
//! - [`FlashForwardWs`]: the same with warp specialization (a producer warp group, two
//!   consumers with the registers it gives up), the softmax under the products and the
//!   consumers' products in turns;
//! - [`Sequences`], [`Heads`]: a batch's shape (sequences of one length, or packed by
//!   cumulative offsets) and the heads;
//! - [`FlashForwardOp`]: the host API on device buffers, and the same on the interpreter;
//! - [`reference`]: the host's attention in f64, the tests' referee.

mod forward;
mod op;
pub mod reference;
mod sequences;
mod softmax;
mod specialized;

pub use forward::{AttentionElement, FlashArgs, FlashForward, FlashKernel, BLOCK_Q};
pub use op::{FlashForwardOp, Variant};
pub use sequences::{Heads, Sequences};
pub use specialized::{FlashForwardWs, CONSUMER_REGISTERS, PRODUCER_REGISTERS};
