//! The quantized kernels' configurations as points of their search spaces (what the command
//! line's `--set` edits and its registry entries list), for groups of 128 along K by default;
//! `group` is a hyperparameter (`--set group=64`; 0 per channel).

use super::{QuantMatmul, QuantMatmulFragments, QuantMatmulRing};
use std::fmt::Debug;
use std::hash::Hash;
use tilus::lowp::LowpElement;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

/// The groups of the defaults: 128 elements along K.
const GROUP: i64 = 128;

fn binding(pairs: &[(&str, i64)]) -> Binding {
    Binding(pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect())
}

impl<T> Default for QuantMatmul<T> {
    /// One row of A per block, groups of 128.
    fn default() -> Self {
        QuantMatmul::new(GROUP as i32).with_block_m(1)
    }
}

/// Rows of W and of A per block, tiles of K per step, warps.
impl<T: Element + LowpElement + Hash + Debug> Tunable for QuantMatmul<T> {
    fn space() -> Space {
        Space::new()
            .values("block_n", &[8, 16, 32])
            .and_then(|s| s.values("steps", &[1, 2, 4]))
            .and_then(|s| s.values("block_m", &[1, 2, 4]))
            .and_then(|s| s.values("warps", &[4, 8]))
            .and_then(|s| s.values("group", &[GROUP]))
            .expect("the few-rows kernel's space is well formed")
    }

    fn from_binding(b: &Binding) -> Result<Self, String> {
        let group = b.get_i32("group")?;
        let warps = u32::try_from(b.get_i32("warps")?).map_err(|e| e.to_string())?;
        Ok(QuantMatmul::new(group)
            .with_block_m(b.get_i32("block_m")?)
            .with_tiles(b.get_i32("block_n")?, b.get_i32("steps")?, warps))
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(binding(&[
            ("block_n", self.block_n.into()),
            ("steps", self.steps.into()),
            ("block_m", self.block_m.into()),
            ("warps", self.warps.into()),
            ("group", self.group.into()),
        ]))
    }
}

impl<T> Default for QuantMatmulFragments<T> {
    /// Up to 8 rows of A per block, groups of 128.
    fn default() -> Self {
        QuantMatmulFragments::new(GROUP as i32, 8)
    }
}

/// Rows of A per block, K steps in flight, K steps per stage, warp groups, the products'
/// instruction and where the scales apply.
impl<T: Element + LowpElement + Hash + Debug> Tunable for QuantMatmulFragments<T> {
    fn space() -> Space {
        Space::new()
            .values("block_m", &[8, 16, 32, 64, 128, 256])
            .and_then(|s| s.values("stages", &[4, 6, 8]))
            .and_then(|s| s.values("stage_steps", &[1, 2, 4]))
            .and_then(|s| s.values("warp_groups", &[1, 2]))
            .and_then(|s| s.values("mma_sync", &[0, 1]))
            .and_then(|s| s.values("scale_sums", &[0, 1]))
            .and_then(|s| s.values("group", &[GROUP]))
            .expect("the fragment kernel's space is well formed")
    }

    fn from_binding(b: &Binding) -> Result<Self, String> {
        Ok(
            QuantMatmulFragments::new(b.get_i32("group")?, b.get_i32("block_m")?)
                .with_stages(b.get_i32("stages")?)
                .with_stage_steps(b.get_i32("stage_steps")?)
                .with_warp_groups(b.get_i32("warp_groups")?)
                .with_mma_sync(b.get_i32("mma_sync")? != 0)
                .with_scale_sums(b.get_i32("scale_sums")? != 0),
        )
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(binding(&[
            ("block_m", self.block_m.into()),
            ("stages", self.stages.into()),
            ("stage_steps", self.stage_steps.into()),
            ("warp_groups", self.warp_groups.into()),
            ("mma_sync", i32::from(self.mma_sync).into()),
            ("scale_sums", i32::from(self.scale_sums).into()),
            ("group", self.group.into()),
        ]))
    }
}

impl<T> Default for QuantMatmulRing<T> {
    /// Tiles of 256 rows of A by 128 of W, groups of 128.
    fn default() -> Self {
        QuantMatmulRing::new(GROUP as i32)
    }
}

/// Tiles and stages.
impl<T: Element + LowpElement + Hash + Debug> Tunable for QuantMatmulRing<T> {
    fn space() -> Space {
        Space::new()
            .axis(
                &["block_m", "block_n"],
                vec![
                    vec![256, 128],
                    vec![128, 128],
                    vec![128, 256],
                    vec![256, 64],
                ],
            )
            .and_then(|s| s.values("stages", &[3, 4, 5]))
            .and_then(|s| s.values("in_flight", &[2, 4]))
            .and_then(|s| s.values("code_stages", &[0, 4]))
            .and_then(|s| s.values("group", &[GROUP]))
            .expect("the ring kernel's space is well formed")
    }

    fn from_binding(b: &Binding) -> Result<Self, String> {
        let mut k = QuantMatmulRing::new(b.get_i32("group")?)
            .with_tiles(b.get_i32("block_m")?, b.get_i32("block_n")?);
        k.stages = b.get_i32("stages")?;
        k.in_flight = b.get_i32("in_flight")?;
        k.code_stages = b.get_i32("code_stages")?;
        Ok(k)
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(binding(&[
            ("block_m", self.block_m.into()),
            ("block_n", self.block_n.into()),
            ("stages", self.stages.into()),
            ("in_flight", self.in_flight.into()),
            ("code_stages", self.code_stages.into()),
            ("group", self.group.into()),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilus::lowp::I4;

    /// Every point of each space round-trips through its binding, and the defaults are
    /// points of their spaces.
    #[test]
    fn quantized_configurations_round_trip_through_their_bindings() {
        fn each<S: Tunable + Default + PartialEq + Debug>() {
            let space = S::space();
            for b in space.bindings() {
                let s = S::from_binding(&b).unwrap();
                assert_eq!(s.to_binding().unwrap(), b);
            }
            let d = S::default().to_binding().unwrap();
            assert!(space.bindings().contains(&d), "{d:?}");
        }
        each::<QuantMatmul<I4>>();
        each::<QuantMatmulFragments<I4>>();
        each::<QuantMatmulRing<I4>>();
    }
}
