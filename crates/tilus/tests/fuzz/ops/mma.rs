//! mma.sync products (`dot`).

use proptest::prelude::*;
use tilus::prelude::*;

use super::memory::{Init, Memory};
use crate::model::{plain, Dt, Op, T};
use crate::replay::{on, Replay, R};
use crate::strategies::{t, tame_dim, Mode};

#[derive(Clone, Debug, Hash)]
pub enum Mma {
    /// `dot(a, b of a's type, c, out of c's type)`.
    Dot(T, T, T, T),
}

impl Mma {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![(
            3,
            (t(m), t(m), t(m), t(m))
                .prop_map(|(a, b, c, o)| Mma::Dot(a, b, c, o).into())
                .boxed(),
        )]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Mma::Dot(a, b, c, out) => {
                let (Some(ra), Some(rc)) = (r.reg(*a), r.reg(*c)) else {
                    return;
                };
                on!(ra, R, |ra: A| on!(rc, R, |rc: C| {
                    let rb = r.reg_of::<A>(*b).unwrap_or(ra);
                    let ro = r.reg_of::<C>(*out).unwrap_or(rc);
                    k.dot(&ra, &rb, &rc, &ro);
                }));
            }
        }
    }
}

/// `dot` of two shared tiles loaded into registers, into a fresh accumulator.
pub fn snippet_dot() -> BoxedStrategy<Vec<Op>> {
    let d = || tame_dim(&[16, 32, 64, 128]);
    let ab = prop::sample::select(vec![Dt::F16, Dt::F16, Dt::Bf16, Dt::F32]);
    let c = prop::sample::select(vec![Dt::F32, Dt::F32, Dt::F32, Dt::F16]);
    (d(), d(), d(), ab, c, prop::bool::weighted(0.8))
        .prop_map(|(m, n, k, ab, c, bt)| {
            crate::model::ops![
                Memory::Shared(ab, vec![m, k]),
                Memory::Shared(ab, if bt { vec![n, k] } else { vec![k, n] }),
                Memory::LoadShared(plain(1)),
                Memory::LoadShared(plain(0)),
                Memory::Register(c, vec![m, n], Init::Zero),
                Mma::Dot(
                    plain(2),
                    T {
                        idx: 0,
                        transposed: bt,
                    },
                    plain(0),
                    plain(0),
                ),
            ]
        })
        .boxed()
}
