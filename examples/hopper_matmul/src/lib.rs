//! The Hopper matmul tutorial series in Tilus for Rust: one module per step, plus the harness
//! that verifies each step against cuBLAS and times them side by side.

pub mod harness;
pub mod registry;
pub mod run;
pub mod v0;
pub mod v1;
