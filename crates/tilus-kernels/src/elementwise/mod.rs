//! Element-wise kernels: [`add`], `c = a + b` in f16 or f32.

pub mod add;

pub use add::{AddOp, Addable, VectorAdd, VectorAddF32};
