//! Kernels a newcomer writes first, each interpreted in CI against a host reference and
//! checked on the GPU (`tests/first_kernels.rs`):
//!
//! - [`row_argmax::RowArgmax`]: the index of each row's largest element, with an index tile
//!   (`k.arange`) and two reductions, over ragged row lengths;
//! - [`causal_attention::CausalAttention`]: attention in the flash style on `dot`, causal and
//!   length masks made of index tiles, and the probabilities converted from the scores'
//!   accumulator layout to the next product's operand (`k.convert_layout`).
//!
//! RMSNorm is the kernel library's (`tilus_kernels::norm`).

pub mod causal_attention;
pub mod row_argmax;
