//! mbarriers: allocation, arrivals, transaction bytes, waits.

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::{BarRef, Op, Sc};
use crate::replay::{on, pick, Replay, S};
use crate::strategies::{bar, sc, u32s, Mode, Tame, Wild};

/// The transaction bytes of `arrive_and_expect_tx`.
#[derive(Clone, Debug, Hash)]
pub enum Bytes {
    Scalar(Sc),
    /// The sum of the `nbytes()` of these shared tiles.
    Nbytes(Vec<usize>),
}

#[derive(Clone, Debug, Hash)]
pub enum Mbarrier {
    /// `mbarrier().alloc(counts)`.
    Alloc(Vec<u32>),
    Arrive(BarRef),
    /// `arrive_count(barrier, count)`.
    ArriveCount(BarRef, u32),
    /// `arrive_and_expect_tx(barrier, bytes)`.
    ExpectTx(BarRef, Bytes),
    /// `wait(barrier, phase)`.
    Wait(BarRef, Sc),
    /// `wait_relaxed(barrier, phase)`.
    WaitRelaxed(BarRef, Sc),
    /// `arrive_remote(barrier, rank)`.
    ArriveRemote(BarRef, Sc),
    /// `arrive_remote_after_reads(barrier, rank)`.
    ArriveRemoteAfterReads(BarRef, Sc),
}

impl Mbarrier {
    /// Barrier arrays are allocated only at the top level in tame cases (`top`).
    pub fn arms(m: Mode, top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let bytes = prop_oneof![
            1 => sc(m).prop_map(Bytes::Scalar),
            3 => prop::collection::vec(0usize..8, 0..3).prop_map(Bytes::Nbytes),
        ];
        let count = match m {
            Tame => u32s(&[1, 1, 128]),
            Wild => u32s(&[1, 1, 32, 128, 0, 2, 1 << 20, u32::MAX]),
        };
        let arrivals = match m {
            Tame => u32s(&[1, 2, 32, 128]),
            Wild => u32s(&[0, 1, 2, 32, 128, 1 << 20, u32::MAX]),
        };
        let counts = match m {
            Tame => prop::collection::vec(count, 1..3),
            Wild => prop::collection::vec(count, 0..5),
        };
        let mut arms = vec![
            (2, bar(m).prop_map(|b| Mbarrier::Arrive(b).into()).boxed()),
            (
                1,
                (bar(m), arrivals)
                    .prop_map(|(b, n)| Mbarrier::ArriveCount(b, n).into())
                    .boxed(),
            ),
            (
                2,
                (bar(m), bytes)
                    .prop_map(|(b, n)| Mbarrier::ExpectTx(b, n).into())
                    .boxed(),
            ),
            (
                2,
                (bar(m), sc(m))
                    .prop_map(|(b, p)| Mbarrier::Wait(b, p).into())
                    .boxed(),
            ),
            (
                1,
                (bar(m), sc(m))
                    .prop_map(|(b, p)| Mbarrier::WaitRelaxed(b, p).into())
                    .boxed(),
            ),
            (
                1,
                (bar(m), sc(m))
                    .prop_map(|(b, r)| Mbarrier::ArriveRemote(b, r).into())
                    .boxed(),
            ),
            (
                1,
                (bar(m), sc(m))
                    .prop_map(|(b, r)| Mbarrier::ArriveRemoteAfterReads(b, r).into())
                    .boxed(),
            ),
        ];
        if m == Wild || top {
            arms.push((2, counts.prop_map(|c| Mbarrier::Alloc(c).into()).boxed()));
        }
        arms
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Mbarrier::Alloc(c) => {
                let mb = k.mbarrier();
                let bars = match c.len() {
                    0 => mb.alloc([]),
                    1 => mb.alloc([c[0]]),
                    2 => mb.alloc([c[0], c[1]]),
                    3 => mb.alloc([c[0], c[1], c[2]]),
                    _ => mb.alloc([c[0], c[1], c[2], c[3]]),
                };
                r.bars.push(bars);
            }
            Mbarrier::Arrive(b) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().arrive(b);
                }
            }
            Mbarrier::ArriveCount(b, n) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().arrive_count(b, *n);
                }
            }
            Mbarrier::ExpectTx(b, bytes) => {
                let Some(b) = r.barrier(b) else {
                    return;
                };
                let bytes = match bytes {
                    Bytes::Scalar(s) => r.scalar(s),
                    Bytes::Nbytes(tiles) => Scalar::from(
                        tiles
                            .iter()
                            .filter_map(|t| pick(&r.shareds, *t))
                            .map(|s| on!(s, S, |x: E| x.nbytes()))
                            .fold(0i32, i32::wrapping_add),
                    ),
                };
                k.mbarrier().arrive_and_expect_tx(b, bytes);
            }
            Mbarrier::Wait(b, phase) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().wait(b, r.scalar(phase));
                }
            }
            Mbarrier::WaitRelaxed(b, phase) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().wait_relaxed(b, r.scalar(phase));
                }
            }
            Mbarrier::ArriveRemote(b, rank) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().arrive_remote(b, r.scalar(rank));
                }
            }
            Mbarrier::ArriveRemoteAfterReads(b, rank) => {
                if let Some(b) = r.barrier(b) {
                    k.mbarrier().arrive_remote_after_reads(b, r.scalar(rank));
                }
            }
        }
    }
}
