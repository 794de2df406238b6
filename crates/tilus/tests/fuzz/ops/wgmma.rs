//! Warp-group products (`wgmma`): fence, mma (into the whole accumulator or a window of its
//! columns, adding or overwriting), commit and wait.

use proptest::prelude::*;
use tilus::lang::WgmmaOperand;
use tilus::prelude::*;

use super::control::{Control, Group};
use super::memory::{Init, Memory};
use crate::model::{plain, Dt, Op, T};
use crate::replay::{on, El, Replay, R, S};
use crate::strategies::{t, tame_dim, u32s, Mode};

/// The `[M, K]` operand of `wgmma.mma`.
#[derive(Clone, Copy, Debug, Hash)]
pub enum WgA {
    Shared(T),
    Register(T),
}

#[derive(Clone, Debug, Hash)]
pub enum Wgmma {
    Fence,
    /// `wgmma.mma(a, b: a shared tile of a's type, d)`.
    Mma(WgA, T, T),
    /// `wgmma.mma_to(a, b, d, target)`: into a window of `d`'s columns from `start` (or
    /// all of them), overwriting or adding.
    MmaTo(WgA, T, T, Option<i64>, bool),
    Commit,
    Wait(u32),
}

impl Wgmma {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let wga = || prop_oneof![t(m).prop_map(WgA::Shared), t(m).prop_map(WgA::Register)];
        vec![
            (1, Just(Wgmma::Fence.into()).boxed()),
            (
                2,
                (wga(), t(m), t(m))
                    .prop_map(|(a, b, d)| Wgmma::Mma(a, b, d).into())
                    .boxed(),
            ),
            (
                1,
                (
                    wga(),
                    t(m),
                    t(m),
                    prop::sample::select(vec![None, Some(0), Some(8), Some(64), Some(-8)]),
                    any::<bool>(),
                )
                    .prop_map(|(a, b, d, w, o)| Wgmma::MmaTo(a, b, d, w, o).into())
                    .boxed(),
            ),
            (1, Just(Wgmma::Commit.into()).boxed()),
            (
                1,
                u32s(&[0, 1, 2, u32::MAX])
                    .prop_map(|n| Wgmma::Wait(n).into())
                    .boxed(),
            ),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Wgmma::Fence => k.wgmma().fence(),
            Wgmma::Mma(a, b, d) => replay_mma(r, k, (*a, *b, *d), WgmmaTarget::all()),
            Wgmma::MmaTo(a, b, d, window, overwrite) => {
                let target = WgmmaTarget {
                    window: *window,
                    overwrite: *overwrite,
                };
                replay_mma(r, k, (*a, *b, *d), target)
            }
            Wgmma::Commit => k.wgmma().commit_group(),
            Wgmma::Wait(n) => k.wgmma().wait_group(*n),
        }
    }
}

/// `wgmma.mma_to(a, b, d, target)` on the replayed tiles (nothing when one is missing).
fn replay_mma(r: &mut Replay, k: &mut Kernel, (a, b, d): (WgA, T, T), target: WgmmaTarget) {
    let Some(d) = r.reg(d) else {
        return;
    };
    match a {
        WgA::Shared(a) => {
            if let Some(a) = r.shared(a) {
                on!(a, S, |a: E| on!(d, R, |d: C| mma(
                    r,
                    k,
                    &a,
                    (b, &d),
                    target
                )));
            }
        }
        WgA::Register(a) => {
            if let Some(a) = r.reg(a) {
                on!(a, R, |a: E| on!(d, R, |d: C| mma(
                    r,
                    k,
                    &a,
                    (b, &d),
                    target
                )));
            }
        }
    }
}

fn mma<E: El, C: El>(
    r: &Replay,
    k: &mut Kernel,
    a: &impl WgmmaOperand<E>,
    (b, d): (T, &RegisterTensor<C>),
    target: WgmmaTarget,
) {
    if let Some(b) = r.shared_of::<E>(b) {
        k.wgmma().mma_to(a, &b, d, target);
    }
}

/// A warp group's `wgmma` of two shared tiles (or registers and a shared tile), each K-major
/// or (sometimes) MN-major as stored; the B tile may first be written with `store_shared`
/// (and, mostly, published with `fence_proxy_async` and a `sync`).
pub fn snippet_wgmma() -> BoxedStrategy<Vec<Op>> {
    (
        tame_dim(&[64, 64, 128]),
        tame_dim(&[16, 32, 64, 128, 256]),
        tame_dim(&[16, 32, 64]),
        prop::sample::select(vec![Dt::F16, Dt::F16, Dt::Bf16, Dt::F32]),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
        prop::sample::select(vec![None, None, Some(true), Some(true), Some(false)]),
        prop::sample::select(vec![
            None,
            None,
            Some((0, false)),
            Some((1, true)),
            Some((1, false)),
        ]),
        // operands as stored MN-major: A `[K, M]` seen transposed, B `[K, N]` as it is
        (prop::bool::weighted(0.3), prop::bool::weighted(0.3)),
    )
        .prop_map(
            |(m, n, k, ab, a_in_registers, acc_inside, store, window, (a_mn, b_mn))| {
                // a register A is K-major
                let a_mn = a_mn && !a_in_registers;
                let (a_shape, b_shape) = (
                    if a_mn { vec![k, m] } else { vec![m, k] },
                    if b_mn { vec![k, n] } else { vec![n, k] },
                );
                let mut ops: Vec<Op> = crate::model::ops![
                    Memory::Shared(ab, a_shape),
                    Memory::Shared(ab, b_shape.clone())
                ];
                if let Some(fence) = store {
                    ops.extend(crate::model::ops![
                        Memory::Register(ab, b_shape, Init::One),
                        Memory::StoreShared(plain(0), plain(0)),
                    ]);
                    if fence {
                        ops.push(Memory::FenceProxyAsync.into());
                    }
                    ops.push(Control::Sync.into());
                }
                // the accumulator is the most recent register tile when the mma runs
                let a = if a_in_registers {
                    ops.push(Memory::LoadShared(plain(1)).into());
                    WgA::Register(plain(1))
                } else {
                    WgA::Shared(T {
                        idx: 1,
                        transposed: a_mn,
                    })
                };
                // a window: the product into the first or the second half of an accumulator
                // twice as wide, overwriting or adding
                let cols = if window.is_some() {
                    n.saturating_mul(2)
                } else {
                    n
                };
                let acc: Op = Memory::Register(Dt::F32, vec![m, cols], Init::Zero).into();
                // the [N, K] tile seen as [K, N], or the [K, N] tile as it is
                let b = T {
                    idx: 0,
                    transposed: !b_mn,
                };
                let mut body: Vec<Op> = crate::model::ops![
                    Wgmma::Fence,
                    match window {
                        None => Wgmma::Mma(a, b, plain(0)),
                        Some((half, overwrite)) => {
                            Wgmma::MmaTo(
                                a,
                                b,
                                plain(0),
                                Some(i64::from(half) * i64::from(n)),
                                overwrite,
                            )
                        }
                    },
                    Wgmma::Commit,
                    Wgmma::Wait(0),
                ];
                if acc_inside {
                    body.insert(0, acc);
                } else {
                    ops.push(acc);
                }
                ops.push(Control::Group(Group::FourWarps(0), body).into());
                ops
            },
        )
        .boxed()
}
