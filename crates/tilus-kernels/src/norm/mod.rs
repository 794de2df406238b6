//! Row-wise kernels over a `[rows, cols]` f16 matrix whose rows are independent: [`softmax`],
//! [`layer_norm`] and [`rms_norm`]. Each block holds whole rows in registers (the width of the
//! tile that holds a row: [`tile`]), so each kernel is one pass over memory. `cols` is a
//! compile-time constant of each kernel, `rows` a runtime argument.

pub mod layer_norm;
pub mod rms_norm;
pub mod softmax;
pub mod tile;

pub use layer_norm::{LayerNorm, LayerNormOp};
pub use rms_norm::{RmsNorm, RmsNormOp};
pub use softmax::{Softmax, SoftmaxOp};
