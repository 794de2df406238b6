//! Autotuning: search spaces over a script's hyperparameters, parallel compilation, benchmarking
//! on the real arguments, and a dispatch table on disk.
//!
//! **Keys.** Compile-time constants (`Const<..>` arguments) specialize: each value set is its own
//! set of programs and its own tuning. Runtime scalars (`i32`, `u32`) never recompile; tuning
//! results are shared by all values in the same *bucket*, the next power of two at or above the
//! value (so `m = 3000` and `m = 4096` share a decision, `m = 5000` gets its own). Keys also name
//! the GPU, its compute capability, the driver and the NVRTC version, so a table copied to
//! another machine re-tunes instead of guessing.

mod autotune;
pub mod bench;
mod fixed_or_tuned;
mod space;
pub mod table;

pub use autotune::{compile_candidates, Autotuned, Candidate, Chosen, TuneOptions};
pub use fixed_or_tuned::FixedOrTuned;
pub use space::{Axis, Binding, Space, SpaceError};

use crate::Script;

/// A script with a search space over its hyperparameters.
pub trait Tunable: Script + Sized {
    /// The space to search.
    fn space() -> Space;
    /// The script for one point of the space.
    fn from_binding(binding: &Binding) -> Result<Self, String>;

    /// This configuration as a point of the space, when the implementation can say
    /// (`#[derive(Tunable)]` does).
    fn to_binding(&self) -> Option<Binding> {
        None
    }

    /// The script bound to a device, tuned on first use of each new key.
    fn autotuned(device: &crate::runtime::Device) -> crate::Result<Autotuned<Self>> {
        Autotuned::new(device)
    }
}

/// `base` with some hyperparameters replaced (`block_m=128`, ...), for command lines and
/// configuration files. Unknown names and values that do not fit are errors.
pub fn with_settings<S: Tunable>(base: &S, settings: &[(String, i64)]) -> Result<S, String> {
    let name = std::any::type_name::<S>()
        .rsplit("::")
        .next()
        .unwrap_or("script");
    let mut b = base
        .to_binding()
        .ok_or_else(|| format!("{name} does not describe its configurations"))?;
    for (k, v) in settings {
        match b.0.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = *v,
            None => {
                let names: Vec<&str> = b.0.iter().map(|(n, _)| n.as_str()).collect();
                return Err(format!(
                    "{name} has no hyperparameter `{k}` (it has {})",
                    names.join(", ")
                ));
            }
        }
    }
    S::from_binding(&b)
}

/// The tuning bucket of a runtime scalar: the next power of two at or above it (values below 1
/// are their own bucket).
pub fn bucket(v: i64) -> i64 {
    if v <= 1 {
        v
    } else {
        (v as u64).next_power_of_two() as i64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(super::bucket(1000), 1024);
        assert_eq!(super::bucket(1024), 1024);
        assert_eq!(super::bucket(1025), 2048);
        assert_eq!(super::bucket(1), 1);
        assert_eq!(super::bucket(0), 0);
    }
}
