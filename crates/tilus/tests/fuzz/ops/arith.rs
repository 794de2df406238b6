//! Arithmetic: casts between element types.

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::{Dt, Op, T};
use crate::replay::{by_dt, on, El, Replay, R};
use crate::strategies::{dt, t, Mode};

#[derive(Clone, Debug, Hash)]
pub enum Arith {
    Cast(T, Dt),
}

impl Arith {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![(
            2,
            (t(m), dt(m))
                .prop_map(|(r, d)| Arith::Cast(r, d).into())
                .boxed(),
        )]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Arith::Cast(t, dt) => {
                if let Some(t) = r.reg(*t) {
                    let out = on!(t, R, |x: E| by_dt!(dt, |U| U::r(k.cast::<U>(&x))));
                    r.regs.push(out);
                }
            }
        }
    }
}
