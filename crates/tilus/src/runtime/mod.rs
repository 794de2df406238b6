//! The CUDA driver side: devices, modules, tensor maps and launches. Knows nothing about
//! scripts: it runs compiled programs with their launch plans.

mod device;
mod launch;
mod programmatic;
pub mod tensor_map;

pub use device::{driver_available, Device};
pub use launch::LoadedKernel;
pub use programmatic::programmatic_launch;
