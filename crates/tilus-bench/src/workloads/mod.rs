//! What each kernel of the registry computes, apart from how: the dimensions of its size,
//! random inputs, an exact or f64 reference and the check against it, on the host (for the
//! interpreter) and on the device (for the GPU). One file per kernel family's workload.

pub mod add;
pub mod decode;
pub mod epilogue;
pub mod fp8;
pub mod layer_norm;
pub mod matmul;
pub mod quant;
pub mod rms_norm;
pub mod rows;
pub mod softmax;
pub mod split_k;
pub mod stream_k;
pub mod tile_copy;
