//! The operations of generated scripts, one file per instruction family (as in
//! `src/ir/inst/`). Each family file holds, for each of its operations, the three things the
//! fuzzer needs and nothing else does:
//!
//! - the operation: a variant of the family's enum, with its parameters (handles counted back
//!   from the most recent one, scalar expressions, shapes; see `model`);
//! - its generator: a weighted arm of the family's `arms(mode, top)`, which draws plausible
//!   values in tame mode and valid and invalid ones alike in wild mode (and says whether the
//!   operation may appear inside loops and thread groups: `top` is false there);
//! - its replay: an arm of the family's `replay`, the builder call it stands for (skipped when
//!   a handle it names does not exist).
//!
//! A family may also offer *snippets*: short plausible kernel patterns built around its
//! operations, which `strategies::chunk` strings together into tame cases.
//!
//! [`families!`] below lists the families once: it makes [`Op`] (one variant per family), the
//! conversions into it, its `Debug` (`Family::Variant(..)`), the replay dispatch and the
//! union of every family's arms.

pub mod arith;
pub mod control;
pub mod cp_async;
pub mod debug;
pub mod mbarrier;
pub mod memory;
pub mod mma;
pub mod registers;
pub mod shape;
pub mod tma;
pub mod wgmma;

use super::replay::Replay;
use super::strategies::Mode;
use proptest::strategy::BoxedStrategy;
use tilus::prelude::Kernel;

macro_rules! families {
    ($($family:ident: $module:ident),* $(,)?) => {
        /// One builder call, of any family.
        #[derive(Clone, Hash)]
        pub enum Op {
            $($family($module::$family),)*
        }

        $(impl From<$module::$family> for Op {
            fn from(op: $module::$family) -> Op {
                Op::$family(op)
            }
        })*

        impl std::fmt::Debug for Op {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    $(Op::$family(op) => write!(f, "{}::{op:?}", stringify!($family)),)*
                }
            }
        }

        impl Op {
            /// Replays the operation on the kernel.
            pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
                match self {
                    $(Op::$family(op) => op.replay(r, k),)*
                }
            }

            /// Every family's weighted strategies for one operation.
            pub fn arms(m: Mode, top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
                let mut arms = vec![];
                $(arms.extend($module::$family::arms(m, top));)*
                arms
            }
        }
    };
}

families! {
    Control: control,
    Memory: memory,
    Arith: arith,
    Mma: mma,
    Shape: shape,
    Mbarrier: mbarrier,
    Tma: tma,
    Wgmma: wgmma,
    Print: debug,
    Registers: registers,
    CpAsync: cp_async,
}

impl Op {
    /// The operation lists nested in a loop, a conditional (both branches) or a thread group.
    pub fn bodies(&self) -> Vec<&Vec<Op>> {
        match self {
            Op::Control(op) => op.bodies(),
            _ => vec![],
        }
    }

    /// [`Op::bodies`], to change them.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<Op>> {
        match self {
            Op::Control(op) => op.bodies_mut(),
            _ => vec![],
        }
    }

    /// `Family::Variant`, for reports.
    pub fn name(&self) -> String {
        let d = format!("{self:?}");
        d.split(['(', ' ', '{']).next().unwrap_or("").to_string()
    }
}
