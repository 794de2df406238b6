//! Copies by threads (`copy_async`) and their groups.

use proptest::prelude::*;
use tilus::prelude::*;

use super::control::Control;
use super::memory::Memory;
use crate::model::{plain, Dt, Op, Sc, T};
use crate::replay::{on, pick, Replay, G};
use crate::strategies::{sc, scs, t, tame_dim, Mode, Tame};

#[derive(Clone, Debug, Hash)]
pub enum CpAsync {
    /// `copy_async(global, offsets, shared tile of its type)`.
    Copy(usize, Vec<Sc>, T),
    /// `copy_async_commit_group()`.
    Commit,
    /// `copy_async_wait_group(n)`.
    Wait(u32),
    /// `copy_async_wait_all()`.
    WaitAll,
}

impl CpAsync {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![
            (
                2,
                (0usize..8, scs(m), t(m))
                    .prop_map(|(g, o, s)| CpAsync::Copy(g, o, s).into())
                    .boxed(),
            ),
            (1, Just(CpAsync::Commit.into()).boxed()),
            (1, (0u32..3).prop_map(|n| CpAsync::Wait(n).into()).boxed()),
            (1, Just(CpAsync::WaitAll.into()).boxed()),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            CpAsync::Copy(g, offsets, s) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(s) = r.shared_of::<E>(*s) {
                        k.copy_async(&g, offsets, &s);
                    }
                });
            }
            CpAsync::Commit => k.copy_async_commit_group(),
            CpAsync::Wait(n) => k.copy_async_wait_group(*n),
            CpAsync::WaitAll => k.copy_async_wait_all(),
        }
    }
}

/// A new f16 shared tile filled by copies from the prelude's f16 view at plausible offsets
/// (edges included), every copy waited for and the tile published with a `sync`, then read.
pub fn snippet_copy_async() -> BoxedStrategy<Vec<Op>> {
    (
        prop::collection::vec(tame_dim(&[8, 16, 32, 64]), 2),
        prop::collection::vec(sc(Tame), 2),
    )
        .prop_map(|(shape, offsets)| {
            crate::model::ops![
                Memory::Shared(Dt::F16, shape),
                CpAsync::Copy(0, offsets, plain(0)),
                CpAsync::WaitAll,
                Control::Sync,
                Memory::LoadShared(plain(0)),
            ]
        })
        .boxed()
}
