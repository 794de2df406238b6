//! Layouts: where each element of a tensor lives.
//!
//! [`RegisterLayout`] spreads a register tensor over the threads of a thread group;
//! [`SharedLayout`] places a shared tensor's elements in bytes, with the TMA swizzles.
//! Layouts are values: they print, compose, compare and are tested against hand-computed
//! tables.

pub mod mma;
mod padding;
mod register;
mod shared;
pub mod wgmma;

pub use mma::MmaPlan;
pub use padding::padded_extent;
pub use register::{Mode, RegisterLayout, Term, ThreadAxis};
pub use shared::{AddressArith, SharedLayout, Swizzle};
pub use wgmma::WgmmaPlan;
