//! The mbarrier family: asynchronous barriers with arrival and transaction counts.

use super::facts::{BarrierEffect, Facts, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{BarrierArrayId, BarrierRef, Expr, Program};
use std::fmt::Write;

/// Barrier allocation, arrival and waiting.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MbarrierInst {
    /// Allocates and initializes an array of mbarriers (block scope).
    Alloc(BarrierArrayId),
    /// Each executing thread arrives `count` times (one instruction; `count` is 1 for a
    /// plain arrival).
    Arrive {
        /// The barrier.
        bar: BarrierRef,
        /// Arrivals per executing thread.
        count: u32,
    },
    /// Each executing thread arrives once and adds `bytes` to the expected transaction count.
    ArriveExpectTx {
        /// The barrier.
        bar: BarrierRef,
        /// Bytes the async copies tracked by this phase will deliver.
        bytes: Expr,
    },
    /// Each executing thread arrives once on the barrier at the same place in block `rank` of
    /// its cluster (`mapa` + `mbarrier.arrive`): a consumer freeing a stage that a producer in
    /// another block fills.
    ArriveRemote {
        /// The barrier (as this block names it; the other block's is at the same address).
        bar: BarrierRef,
        /// The receiving block's rank in the cluster.
        rank: Expr,
        /// Whether the arrival publishes the thread's earlier writes to the threads that wait
        /// there (release at cluster scope: a fence that waits for the thread's memory
        /// operations); `false` for an arrival that only says reads are done
        /// ([`crate::lang::Mbarrier::arrive_remote_after_reads`]).
        publishes: bool,
    },
    /// Blocks until the barrier's phase with parity `phase` has completed.
    Wait {
        /// The barrier.
        bar: BarrierRef,
        /// Parity of the phase to wait for.
        phase: Expr,
        /// Relaxed semantics: no acquire ordering (the waiting thread's later ordinary reads
        /// are not ordered after the arrivals' earlier writes), for waits followed only by
        /// asynchronous work such as a producer's copies.
        relaxed: bool,
    },
}

impl MbarrierInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            MbarrierInst::Alloc(_) => "mbarrier.alloc",
            MbarrierInst::Arrive { count: 1, .. } => "mbarrier.arrive",
            MbarrierInst::Arrive { .. } => "mbarrier.arrive_count",
            MbarrierInst::ArriveExpectTx { .. } => "mbarrier.arrive_and_expect_tx",
            MbarrierInst::ArriveRemote { .. } => "mbarrier.arrive_remote",
            MbarrierInst::Wait { relaxed: false, .. } => "mbarrier.wait",
            MbarrierInst::Wait { relaxed: true, .. } => "mbarrier.wait_relaxed",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        match self {
            MbarrierInst::Alloc(a) => {
                Facts::scoped(ThreadScope::BlockOnce).barrier(BarrierEffect::Init(*a))
            }
            MbarrierInst::Arrive { bar, count } => {
                Facts::default().barrier(BarrierEffect::Arrive {
                    bar,
                    count: *count,
                    expect_tx: None,
                })
            }
            MbarrierInst::ArriveExpectTx { bar, bytes } => Facts::default()
                .barrier(BarrierEffect::Arrive {
                    bar,
                    count: 1,
                    expect_tx: Some(bytes),
                })
                .reads([bytes]),
            MbarrierInst::Wait { bar, phase, .. } => Facts::default()
                .barrier(BarrierEffect::Wait { bar, phase })
                .reads([phase]),
            // another block's barrier: none of this block's barrier rules apply
            MbarrierInst::ArriveRemote { rank, .. } => Facts::default().reads([rank]),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            MbarrierInst::Alloc(id) => {
                let d = n.p.barrier(*id);
                let mut t = format!("{} = mbarrier.alloc(counts={:?})", d.name, d.counts);
                if let Some(o) = d.offset {
                    let _ = write!(t, " offset={o}");
                }
                t
            }
            MbarrierInst::Arrive { bar, count: 1 } => format!("mbarrier.arrive({})", n.bar(bar)),
            MbarrierInst::Arrive { bar, count } => {
                format!("mbarrier.arrive_count({}, {count})", n.bar(bar))
            }
            MbarrierInst::ArriveExpectTx { bar, bytes } => {
                format!(
                    "mbarrier.arrive_and_expect_tx({}, {})",
                    n.bar(bar),
                    n.e(bytes)
                )
            }
            MbarrierInst::ArriveRemote {
                bar,
                rank,
                publishes,
            } => {
                let what = if *publishes {
                    "arrive_remote"
                } else {
                    "arrive_remote_after_reads"
                };
                format!("mbarrier.{what}({}, rank={})", n.bar(bar), n.e(rank))
            }
            MbarrierInst::Wait {
                bar,
                phase,
                relaxed,
            } => {
                let kind = if *relaxed { "wait_relaxed" } else { "wait" };
                format!("mbarrier.{kind}({}, phase={})", n.bar(bar), n.e(phase))
            }
        }
    }
}
