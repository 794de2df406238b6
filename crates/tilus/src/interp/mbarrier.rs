//! mbarriers as `codegen/mbarrier.rs` emits them, over the barrier state of `barrier.rs`:
//! thread 0 initializes an array (after checking that no live buffer shares its bytes), then
//! the block meets; arrivals count down; a wait blocks the task until its phase completes.

use super::barrier::{arrive, phase_completed, resolve, state, store, BarState};
use super::hazards;
use super::region::overlaps;
use super::state::{Block, Fail, R};
use super::task::{value, State, Step, Task};
use crate::error::Fault;
use crate::ir::{BarrierArrayId, Loc, MbarrierInst};

pub(crate) fn exec(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &MbarrierInst,
    loc: Loc,
) -> R<Step> {
    match i {
        MbarrierInst::Alloc(id) => {
            // thread 0 initializes, then the whole block meets at __syncthreads()
            if task.threads.first() == Some(&0) {
                alloc(b, *id, loc)?;
            }
            Ok(Step::Wait(State::Sync {
                loc,
                scope: crate::ir::SyncScope::Block,
                vote: None,
            }))
        }
        MbarrierInst::Arrive { bar, count } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let before = b.bar_phases(a, idx);
            b.races.release((a, idx), &task.threads);
            for _ in &task.threads {
                arrive_times(b, a, idx, *count, loc)?;
            }
            Ok(arrived(b, task, (a, idx), before, loc))
        }
        MbarrierInst::ArriveExpectTx { bar, bytes } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let n = value(b, task, bytes, loc)?;
            let before = b.bar_phases(a, idx);
            b.races.release((a, idx), &task.threads);
            for _ in &task.threads {
                arrive(b, a, idx, n, loc)?;
            }
            Ok(arrived(b, task, (a, idx), before, loc))
        }
        MbarrierInst::ArriveRemote { bar, rank, .. } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let to = value(b, task, rank, loc)?;
            let (own, size) = b.cluster_rank();
            if to < 0 || to as usize >= size {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    format!(
                        "mbarrier.arrive_remote to the block of rank {to}: the cluster has {size} \
                         block(s), ranks 0 to {}",
                        size - 1
                    ),
                ));
            }
            if to as usize == own {
                let before = b.bar_phases(a, idx);
                b.races.release((a, idx), &task.threads);
                for _ in &task.threads {
                    arrive(b, a, idx, 0, loc)?;
                }
                return Ok(arrived(b, task, (a, idx), before, loc));
            }
            for _ in &task.threads {
                b.outbox.push(super::state::Remote::Arrival {
                    rank: to as usize,
                    bar: (a, idx),
                    loc,
                });
            }
            Ok(Step::Next)
        }
        // the interpreter's memory is sequentially consistent: a relaxed wait is a wait
        MbarrierInst::Wait { bar, phase, .. } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let parity = (value(b, task, phase, loc)? & 1) as u32;
            if phase_completed(b, a, idx, parity) {
                b.races.acquire((a, idx), parity, &task.threads);
                b.observe(a, idx);
                Ok(Step::Next)
            } else {
                Ok(Step::Wait(State::Barrier {
                    array: a,
                    index: idx,
                    parity,
                    loc,
                }))
            }
        }
    }
}

/// After a task's arrivals on a barrier that had completed `before` phases: the arrival is
/// remembered on the task's unfinished operations (it may be what lets other threads reuse
/// their operands), and the task yields when it completed a phase, so that the waiters it
/// releases run before it goes on to, say, the `wait_group` it should have run first.
fn arrived(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    (a, idx): (BarrierArrayId, usize),
    before: u64,
    loc: Loc,
) -> Step {
    hazards::arrived(b, task, (a, idx), loc);
    if b.bar_phases(a, idx) != before {
        Step::Yield
    } else {
        Step::Next
    }
}

/// One thread's `count` arrivals in one instruction: they may not run past the phase's
/// pending arrivals (the hardware leaves that undefined).
fn arrive_times(
    b: &mut Block<'_, '_>,
    a: BarrierArrayId,
    idx: usize,
    count: u32,
    loc: Loc,
) -> R<()> {
    let pending = state(b, a, idx).pending;
    if count > 1 && count > pending {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "mbarrier.arrive_count: {count} arrivals on barrier `{}`, whose current phase \
                 has only {pending} pending: the count may not run past the phase",
                b.bar_name(a, idx)
            ),
        ));
    }
    for _ in 0..count {
        arrive(b, a, idx, 0, loc)?;
    }
    Ok(())
}

fn alloc(b: &mut Block<'_, '_>, id: BarrierArrayId, loc: Loc) -> R<()> {
    let p = b.program();
    let d = p.barrier(id);
    let off = d.offset.unwrap_or(0) as u64;
    let me = (off, off + 8 * d.counts.len() as u64);
    if me.1 > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "mbarriers `{}` are planned at bytes {}..{}, beyond the block's {} bytes of \
                 shared memory",
                d.name,
                me.0,
                me.1,
                b.smem.len()
            ),
        ));
    }
    for (j, s) in p.shareds.iter().enumerate() {
        let r = b.tile_range(crate::ir::SharedId(j as u32));
        let in_flight = hazards::writing(b, r).is_some();
        if (b.live[j] || in_flight) && overlaps(me, r) {
            return Err(Fail::new(
                Fault::SharedOverlap,
                loc,
                format!(
                    "the mbarriers `{}` (bytes {}..{}) overlap shared tensor `{}` (bytes {}..{}), \
                     which is still alive: writing the tile would corrupt the barriers",
                    d.name, me.0, me.1, s.name, r.0, r.1
                ),
            )
            .note(s.loc, format!("`{}` was allocated here", s.name)));
        }
    }
    for (j, other) in p.barriers.iter().enumerate() {
        if j == id.0 as usize || b.bars[j].is_none() {
            continue;
        }
        let o = other.offset.unwrap_or(0) as u64;
        if overlaps(me, (o, o + 8 * other.counts.len() as u64)) {
            return Err(Fail::new(
                Fault::SharedOverlap,
                loc,
                format!(
                    "the mbarriers `{}` overlap the mbarriers `{}`",
                    d.name, other.name
                ),
            )
            .note(other.loc, format!("`{}` was allocated here", other.name)));
        }
    }
    for (i, &c) in d.counts.iter().enumerate() {
        store(
            b,
            id,
            i,
            BarState {
                pending: c,
                count: c,
                tx: 0,
                phase: 0,
            },
        );
    }
    b.bars[id.0 as usize] = Some(vec![Default::default(); d.counts.len()]);
    Ok(())
}
