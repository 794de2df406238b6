//! The decode kernel's configuration as a point of a search space (what the command line's
//! `--set` edits and its registry entry lists): the keys per step and the ring's stages, for
//! the registry's default step (one new token, 4 query heads per key-value head of 128, a
//! contiguous cache); what is computed stays the workload's.

use super::kernel::DecodeAttention;
use std::fmt::Debug;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

impl<T: Element, C: Element> Default for DecodeAttention<T, C> {
    /// Heads of 128, one new token, groups of 4, a contiguous cache.
    fn default() -> Self {
        DecodeAttention::new(128, 1, 4, None)
    }
}

/// Keys per step and stages (the hyperparameters that do not change what is computed).
impl<T: Element + Debug + super::AttentionElement, C: super::CacheElement> Tunable
    for DecodeAttention<T, C>
{
    fn space() -> Space {
        // (128 keys a step: `--set block_kv=128`; with more than three stages it overflows
        // shared memory, which the verifier says)
        Space::new()
            .values("block_kv", &[64])
            .and_then(|s| s.values("stages", &[2, 3, 4, 5]))
            .expect("the decode kernel's space is well formed")
    }

    fn from_binding(b: &Binding) -> Result<Self, String> {
        let mut config = DecodeAttention::default();
        config.block_kv = b.get_i32("block_kv")?;
        config.stages = b.get_i32("stages")?;
        Ok(config)
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(Binding(vec![
            ("block_kv".to_string(), self.block_kv.into()),
            ("stages".to_string(), self.stages.into()),
        ]))
    }
}
