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
//! - [`reference`](mod@reference): the host's attention in f64, the tests' referee.

pub mod decode;
mod forward;
mod op;
mod products;
pub mod reference;
mod sequences;
mod softmax;
mod specialized;

pub use forward::{AttentionElement, FlashArgs, FlashForward, FlashKernel, BLOCK_Q};
pub use op::{FlashForwardOp, Variant};
pub use sequences::{Heads, Sequences};
pub use specialized::{FlashForwardWs, CONSUMER_REGISTERS, PRODUCER_REGISTERS};

#[cfg(test)]
mod tests {
    use super::{FlashForward, FlashForwardWs};
    use half::f16;

    /// The configurations are keys (the host API keeps kernels of other tiles by them): equal
    /// exactly when every hyperparameter is.
    #[test]
    fn configurations_are_equal_when_every_hyperparameter_is() {
        let plain = FlashForward::<f16>::new(128, true);
        assert!(plain == FlashForward::new(128, true));
        assert!(plain != FlashForward::new(128, false));
        assert!(plain != FlashForward::new(128, true).with_tiles(64, 2));
        let ws = FlashForwardWs::<f16>::new(128, false);
        assert!(ws == FlashForwardWs::new(128, false));
        for other in [
            FlashForwardWs::new(64, false),
            FlashForwardWs::new(128, true),
            ws.clone().with_tiles(128, 3),
            ws.clone().with_schedule(false, false),
            ws.clone().with_schedule(true, true),
            ws.clone().with_persistent(true),
        ] {
            assert!(ws != other, "{other:?}");
        }
        let kept: std::collections::HashSet<_> = [ws.clone(), ws.clone().with_persistent(true)]
            .into_iter()
            .collect();
        assert_eq!(kept.len(), 2);
        // the decode step's kernels, kept by the host API by their configuration too
        use super::decode::DecodeAttention;
        let dec = DecodeAttention::<f16>::new(128, 1, 4, None);
        assert!(dec == DecodeAttention::new(128, 1, 4, None));
        let mut others = vec![
            DecodeAttention::new(64, 1, 4, None),
            DecodeAttention::new(128, 2, 4, None),
            DecodeAttention::new(128, 1, 12, None),
            DecodeAttention::new(128, 1, 4, Some(16)),
            dec.clone().with_direct(true),
            dec.clone().with_merge(16),
        ];
        let mut staged = dec.clone();
        staged.stages = 3;
        let mut wide = dec.clone();
        wide.block_kv = 128;
        others.extend([staged, wide]);
        for other in &others {
            assert!(dec != *other, "{other:?}");
        }
        let kept: std::collections::HashSet<_> = others.into_iter().chain([dec]).collect();
        assert_eq!(kept.len(), 9);
    }
}
