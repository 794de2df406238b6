//! The kernels of the series by name, for the `tilus` command line.

use tilus::lang::DynScript;

/// Builds a configuration from `name=value` settings.
pub type WithFn = fn(&[(String, i64)]) -> Result<Box<dyn DynScript>, String>;

/// A kernel the command line knows.
pub struct Entry {
    /// Its name on the command line (`hopper_matmul_v0`).
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// The default configuration with some hyperparameters replaced.
    pub with: WithFn,
    /// The autotuning search space.
    pub space: fn() -> Vec<Box<dyn DynScript>>,
    /// The compile-time constant values for a problem `(m, n, k)`.
    pub consts: fn(usize, usize, usize) -> Vec<i64>,
}

/// Every kernel of the series.
pub fn entries() -> Vec<Entry> {
    use crate::v0::MatmulTma;
    use crate::v1::MatmulWgmma;
    vec![
        Entry {
            name: "hopper_matmul_v0",
            about: "v0: TMA + mbarrier + mma.sync",
            with: |s| MatmulTma::with(s).map(|c| Box::new(c) as Box<dyn DynScript>),
            space: || {
                MatmulTma::space()
                    .into_iter()
                    .map(|c| Box::new(c) as Box<dyn DynScript>)
                    .collect()
            },
            consts: |_, n, k| vec![n as i64, k as i64],
        },
        Entry {
            name: "hopper_matmul_v1",
            about: "v1: TMA + mbarrier + WGMMA from shared memory",
            with: |s| MatmulWgmma::with(s).map(|c| Box::new(c) as Box<dyn DynScript>),
            space: || {
                MatmulWgmma::configs()
                    .into_iter()
                    .map(|c| Box::new(c) as Box<dyn DynScript>)
                    .collect()
            },
            consts: |_, n, k| vec![n as i64, k as i64],
        },
    ]
}

/// The entry with this name.
pub fn find(name: &str) -> Option<Entry> {
    entries().into_iter().find(|e| e.name == name)
}
