//! Moving registers between warp groups: `set_max_registers` with counts inside and outside
//! 24..=256, off the multiples of 8, and (through where the strategies put it) in groups that
//! are not whole warp groups and beyond the block's pool. Fixing a tile's layout:
//! `annotate_layout` with the default layout of its shape over `threads` threads (the group's
//! count or not).

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::{Op, T};
use crate::replay::{on, Replay, R};
use crate::strategies::{t, u32s, Mode, Tame, Wild};

#[derive(Clone, Debug, Hash)]
pub enum Registers {
    /// `set_max_registers(n)`.
    SetMax(u32),
    /// `annotate_layout(tile, default_layout(shape, threads))`.
    Annotate(T, u32),
}

impl Registers {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let n = match m {
            Tame => u32s(&[24, 40, 128, 232, 240]),
            Wild => u32s(&[0, 7, 24, 40, 100, 232, 248, 256, 264, u32::MAX]),
        };
        let threads = match m {
            Tame => u32s(&[32, 128]),
            Wild => u32s(&[1, 32, 64, 128, 256, 1024]),
        };
        vec![
            (1, n.prop_map(|n| Registers::SetMax(n).into()).boxed()),
            (
                1,
                (t(m), threads)
                    .prop_map(|(r, n)| Registers::Annotate(r, n).into())
                    .boxed(),
            ),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Registers::SetMax(n) => k.set_max_registers(*n),
            Registers::Annotate(t, threads) => {
                if let Some(x) = r.reg(*t) {
                    on!(x, R, |x: E| {
                        let shape = k.shape_of(&x);
                        let l = tilus::passes::infer_layout::default_layout(
                            &shape,
                            i64::from(*threads),
                        );
                        k.annotate_layout(&x, l)
                    });
                }
            }
        }
    }
}
