//! TMA copies.

use proptest::prelude::*;
use tilus::prelude::*;

use super::control::{Control, Group};
use super::mbarrier::{Bytes, Mbarrier};
use super::memory::{Init, Memory};
use crate::model::{plain, BarRef, Dt, Op, Sc, T};
use crate::replay::{on, pick, Replay, G};
use crate::strategies::{bar, dt, sc, scs, t, tame_dim, Mode, Tame};

#[derive(Clone, Debug, Hash)]
pub enum Tma {
    /// `tma.global_to_shared(global, shared tile of its type, offsets, barrier)`.
    GlobalToShared(usize, T, Vec<Sc>, BarRef),
    /// `tma.global_to_shared_multicast(global, shared tile, offsets, barrier, mask)`.
    Multicast(usize, T, Vec<Sc>, BarRef, Sc),
    /// `tma.shared_to_global(shared tile, global of its type, offsets)`.
    SharedToGlobal(T, usize, Vec<Sc>),
    /// `tma.commit_group()`.
    CommitGroup,
    /// `tma.wait_group(n)` or, with `true`, `tma.wait_group_read(n)`.
    WaitGroup(u32, bool),
}

impl Tma {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![
            (
                3,
                (0usize..8, t(m), scs(m), bar(m))
                    .prop_map(|(g, s, o, b)| Tma::GlobalToShared(g, s, o, b).into())
                    .boxed(),
            ),
            (
                1,
                (0usize..8, t(m), scs(m), bar(m), sc(m))
                    .prop_map(|(g, s, o, b, mask)| Tma::Multicast(g, s, o, b, mask).into())
                    .boxed(),
            ),
            (
                2,
                (t(m), 0usize..8, scs(m))
                    .prop_map(|(s, g, o)| Tma::SharedToGlobal(s, g, o).into())
                    .boxed(),
            ),
            (1, Just(Tma::CommitGroup.into()).boxed()),
            (
                1,
                (0u32..3, prop::bool::ANY)
                    .prop_map(|(n, read)| Tma::WaitGroup(n, read).into())
                    .boxed(),
            ),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Tma::GlobalToShared(g, s, offsets, bar) => {
                let (Some(g), Some(bar)) = (pick(&r.globals, *g), r.barrier(bar)) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(s) = r.shared_of::<E>(*s) {
                        k.tma().global_to_shared(&g, &s, offsets, bar);
                    }
                });
            }
            Tma::Multicast(g, s, offsets, bar, mask) => {
                let (Some(g), Some(bar)) = (pick(&r.globals, *g), r.barrier(bar)) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                let mask = r.scalar(mask);
                on!(g, G, |g: E| {
                    if let Some(s) = r.shared_of::<E>(*s) {
                        k.tma()
                            .global_to_shared_multicast(&g, &s, offsets, bar, mask);
                    }
                });
            }
            Tma::SharedToGlobal(s, g, offsets) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(s) = r.shared_of::<E>(*s) {
                        k.tma().shared_to_global(&s, &g, offsets);
                    }
                });
            }
            Tma::CommitGroup => k.tma().commit_group(),
            Tma::WaitGroup(n, false) => k.tma().wait_group(*n),
            Tma::WaitGroup(n, true) => k.tma().wait_group_read(*n),
        }
    }
}

/// The epilogue: a register tile stored into a new shared tile of its shape, published
/// (`fence_proxy_async`, `sync`), then a TMA store into a writable f16 view and its commit and
/// wait (of the whole store or of its reads) on one thread.
pub fn snippet_tma_store() -> BoxedStrategy<Vec<Op>> {
    (
        prop::collection::vec(tame_dim(&[16, 32, 64]), 2),
        prop::collection::vec(sc(Tame), 2),
        prop::bool::ANY,
    )
        .prop_map(|(shape, offsets, read)| {
            // pointer 1 is `PtrMut<f16>`
            let view = vec![Sc::Const(0), Sc::Const(1)];
            crate::model::ops![
                Memory::Register(Dt::F16, shape.clone(), Init::One),
                Memory::GlobalView(1, view),
                Memory::Shared(Dt::F16, shape),
                Memory::StoreShared(plain(0), plain(0)),
                Memory::FenceProxyAsync,
                Control::Sync,
                Control::Group(
                    Group::SingleThread,
                    crate::model::ops![
                        Tma::SharedToGlobal(plain(0), 0, offsets),
                        Tma::CommitGroup,
                        Tma::WaitGroup(0, read),
                    ]
                ),
            ]
        })
        .boxed()
}

/// A shared tile filled by TMA from a global view (a recent one, or a new one of the tile's
/// element type): `expect_tx` and the copy on one thread, then a wait (by every thread, or on
/// that thread followed by a `sync`).
pub fn snippet_tma(phase: Sc) -> BoxedStrategy<Vec<Op>> {
    (
        dt(Tame),
        prop::collection::vec(tame_dim(&[16, 32, 64, 128]), 2),
        prop::option::weighted(0.5, prop::sample::select(vec![0, 4096])),
        bar(Tame),
        prop::collection::vec(sc(Tame), 2),
        prop::bool::ANY,
    )
        .prop_map(move |(dt, shape, view, bar, offsets, wait_inside)| {
            let mut ops: Vec<Op> = vec![];
            let mut dt = dt;
            match view {
                // pointers 0, 2 and 4 are `Ptr<f16>`, `Ptr<bf16>` and `Ptr<f32>`
                Some(extent) => ops.push(
                    Memory::GlobalView(
                        match dt {
                            Dt::F16 => 0,
                            Dt::Bf16 => 2,
                            _ => 4,
                        },
                        vec![
                            Sc::Const(0),
                            if extent == 0 {
                                Sc::Const(1)
                            } else {
                                Sc::Lit(extent)
                            },
                        ],
                    )
                    .into(),
                ),
                // the prelude's views are f16
                None => dt = Dt::F16,
            }
            let copy: Vec<Op> = crate::model::ops![
                Mbarrier::ExpectTx(bar.clone(), Bytes::Nbytes(vec![0])),
                Tma::GlobalToShared(0, plain(0), offsets, bar.clone()),
            ];
            let wait: Op = Mbarrier::Wait(bar, phase.clone()).into();
            ops.push(Memory::Shared(dt, shape).into());
            if wait_inside {
                let mut copy = copy;
                copy.push(wait);
                ops.extend(crate::model::ops![
                    Control::Group(Group::SingleThread, copy),
                    Control::Sync
                ]);
            } else {
                ops.extend([Control::Group(Group::SingleThread, copy).into(), wait]);
            }
            ops
        })
        .boxed()
}
