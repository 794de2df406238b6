//! Moving registers between warp groups: `set_max_registers` with counts inside and outside
//! 24..=256, off the multiples of 8, and (through where the strategies put it) in groups that
//! are not whole warp groups and beyond the block's pool.

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::Op;
use crate::replay::Replay;
use crate::strategies::{u32s, Mode, Tame, Wild};

#[derive(Clone, Debug, Hash)]
pub enum Registers {
    /// `set_max_registers(n)`.
    SetMax(u32),
}

impl Registers {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let n = match m {
            Tame => u32s(&[24, 40, 128, 232, 240]),
            Wild => u32s(&[0, 7, 24, 40, 100, 232, 248, 256, 264, u32::MAX]),
        };
        vec![(1, n.prop_map(|n| Registers::SetMax(n).into()).boxed())]
    }

    pub fn replay(&self, _r: &mut Replay, k: &mut Kernel) {
        match self {
            Registers::SetMax(n) => k.set_max_registers(*n),
        }
    }
}
