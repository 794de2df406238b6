//! Asynchronous operations in flight and the hazards around them, written once over the
//! instructions' facts: a family issues an operation (a TMA copy, a wgmma product, a TMA store)
//! with what it touches and how it completes; before every instruction, what that instruction
//! touches is checked against what is in flight, and after it, the generic-proxy writes it made
//! are remembered until the writing threads fence. Shared memory is compared by bytes: one
//! stage of a staged tile (`at`) is the bytes of that stage only, at the index the task
//! computed.
//!
//! - reading (or writing with ordinary stores) a tile an operation in flight writes is a read
//!   before the wait that covers it;
//! - writing a tile or register an operation in flight reads is an overwrite before its wait;
//!   when other threads own the operation (a producer refilling a stage its consumers freed
//!   before their wgmma on it completed), the fault says so and notes the arrivals those
//!   threads made while it was unfinished (`arrived`), one of which freed the tile;
//! - using a register an operation in flight writes (a wgmma accumulator) is a read before its
//!   wait, except the next product accumulating into it;
//! - the async proxy reading a tile written by ordinary stores that were not fenced is a
//!   missing proxy fence;
//! - a block that finishes while an operation may still read shared memory never waited.

use super::region::{overlaps, Span};
use super::state::{threads_text, Block, Dirty, Fail, InFlight, Retire, Status, Touch, Work, R};
use super::task::Task;
use super::views;
use crate::error::Fault;
use crate::ir::facts::{
    columns_overlap, Access, AsyncGroup, Completion, Effect, Facts, Memory, Ordering, Proxy,
};
use crate::ir::{BarrierArrayId, Loc};

/// The bytes a touch of shared memory covers (none for registers).
fn touched(x: &Touch) -> (u64, u64) {
    x.bytes.map_or((0, 0), |s| s.range)
}

/// Whether an operation still counts: issued, or landed in a phase no wait has observed.
fn active(b: &Block<'_, '_>, op: &InFlight) -> bool {
    match (op.status, op.retire) {
        (Status::Issued, _) => true,
        (Status::Landed { phase }, Retire::Barrier { bar, .. }) => {
            b.bar_phases(bar.0, bar.1) <= phase
        }
        (Status::Landed { .. }, Retire::Group { .. }) => false,
    }
}

/// Drops landed operations that a completed phase has observed.
fn prune(b: &mut Block<'_, '_>) {
    let keep: Vec<bool> = b.inflight.iter().map(|op| active(b, op)).collect();
    let mut i = 0;
    b.inflight.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// The bytes (and stage) a shared effect touches in a task: the tile's, or its stage's.
fn effect_bytes(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    e: &Effect<'_>,
    inst: &str,
    loc: Loc,
) -> R<Option<Span>> {
    match e.memory {
        Memory::Shared(t) => views::bytes(b, task, t, e.stage, inst, loc).map(Some),
        Memory::Register(_) | Memory::Global(_) => Ok(None),
    }
}

/// What an operation issued by a task with these facts touches until it completes: its
/// effects that complete later (global memory is not tracked), shared ones at the stage the
/// task indexes.
pub(crate) fn touches(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    facts: &Facts<'_>,
    inst: &str,
    loc: Loc,
) -> R<Vec<Touch>> {
    facts
        .effects
        .iter()
        .filter(|e| e.completes != Completion::Now && !matches!(e.memory, Memory::Global(_)))
        .map(|e| {
            Ok(Touch {
                memory: e.memory,
                bytes: effect_bytes(b, task, e, inst, loc)?,
                access: e.access,
                proxy: e.proxy,
                columns: e.columns,
                role: e.role,
            })
        })
        .collect()
}

/// An operation in flight that writes some of the bytes `range` (a TMA copy into them, or
/// copies by threads), with the touch that writes them.
pub(crate) fn writing_into<'b>(
    b: &'b Block<'_, '_>,
    range: (u64, u64),
) -> Option<(&'b InFlight, &'b Touch)> {
    b.inflight.iter().filter(|op| active(b, op)).find_map(|op| {
        let x = op.touches.iter().find(|x| {
            matches!(x.memory, Memory::Shared(_))
                && overlaps(touched(x), range)
                && x.access.writes()
        })?;
        Some((op, x))
    })
}

/// An operation in flight that writes some of the bytes `range`.
pub(crate) fn writing<'b>(b: &'b Block<'_, '_>, range: (u64, u64)) -> Option<&'b InFlight> {
    writing_into(b, range).map(|(op, _)| op)
}

/// Issues an operation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn issue(
    b: &mut Block<'_, '_>,
    inst: &'static str,
    label: &'static str,
    loc: Loc,
    touches: Vec<Touch>,
    threads: Vec<u32>,
    retire: Retire,
    work: Box<dyn Work>,
) {
    b.inflight.push(InFlight {
        inst,
        label,
        loc,
        touches,
        threads,
        retire,
        status: Status::Issued,
        work: Some(work),
        arrivals: vec![],
    });
}

/// A task arrived on a barrier: remembered on the unfinished operations of its threads that
/// read shared memory, for the hazard that follows if the arrival freed their operands early.
pub(crate) fn arrived(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    (a, i): (BarrierArrayId, usize),
    loc: Loc,
) {
    let name = b.bar_name(a, i);
    for op in b.inflight.iter_mut() {
        let reads_shared = op
            .touches
            .iter()
            .any(|x| matches!(x.memory, Memory::Shared(_)) && x.access.reads());
        if op.status == Status::Issued
            && reads_shared
            && owned_by(op, task)
            && !op.arrivals.iter().any(|(l, _)| *l == loc)
        {
            op.arrivals.push((loc, name.clone()));
        }
    }
}

/// Whether some of an operation's threads are the task's.
fn owned_by(op: &InFlight, task: &Task<'_>) -> bool {
    op.threads
        .iter()
        .any(|t| task.threads.binary_search(t).is_ok())
}

/// The owners of a task's groups of a kind, each with its threads: warp groups for wgmma,
/// threads for bulk copies.
pub(crate) fn owners(task: &Task<'_>, kind: AsyncGroup) -> Vec<(u32, Vec<u32>)> {
    match kind {
        AsyncGroup::Wgmma => {
            let mut wgs: Vec<u32> = task.threads.iter().map(|t| t / 128).collect();
            wgs.dedup();
            wgs.into_iter()
                .map(|w| (w, (w * 128..w * 128 + 128).collect()))
                .collect()
        }
        AsyncGroup::Bulk => task.threads.iter().map(|&t| (t, vec![t])).collect(),
        // per thread on the GPU; the threads of a warp issue, commit and wait together here
        AsyncGroup::CpAsync => {
            let mut warps: Vec<u32> = task.threads.iter().map(|t| t / 32).collect();
            warps.dedup();
            warps
                .into_iter()
                .map(|w| {
                    let mine = task.threads.iter().copied().filter(|t| t / 32 == w);
                    (w, mine.collect())
                })
                .collect()
        }
    }
}

/// Completes an operation: takes it out of flight, clears what the async proxy wrote from the
/// proxy-fence record, and runs its work.
fn complete(b: &mut Block<'_, '_>, at: usize) -> R<InFlight> {
    let mut op = b.inflight.remove(at);
    for x in &op.touches {
        if let (Memory::Shared(t), true, Proxy::Async) = (x.memory, x.access.writes(), x.proxy) {
            // the async proxy's write replaces what ordinary stores left in those bytes
            let (lo, hi) = touched(x);
            b.proxy_dirty[t.0 as usize].retain(|d| !(lo <= d.bytes.0 && d.bytes.1 <= hi));
        }
    }
    if let Some(w) = op.work.take() {
        w.complete(b)?;
    }
    Ok(op)
}

/// The copy engine: lands the oldest operation that completes on a barrier. `None` when there
/// is nothing to land.
pub(crate) fn land_next(b: &mut Block<'_, '_>) -> Option<R<()>> {
    let at = b.inflight.iter().position(|op| {
        op.status == Status::Issued && matches!(op.retire, Retire::Barrier { .. })
    })?;
    let Retire::Barrier { bar, issue_phase } = b.inflight[at].retire else {
        return None;
    };
    let op = match complete(b, at) {
        Ok(op) => op,
        Err(f) => return Some(Err(f)),
    };
    let phases = b.bar_phases(bar.0, bar.1);
    if phases == issue_phase {
        // landed, but no wait can have observed it yet
        b.inflight.push(InFlight {
            status: Status::Landed { phase: phases },
            ..op
        });
    }
    Some(Ok(()))
}

/// `commit_group` of a kind by a task: the operations its owners issued since their last
/// commit form a new group.
pub(crate) fn commit(b: &mut Block<'_, '_>, task: &Task<'_>, kind: AsyncGroup) {
    for (owner, _) in owners(task, kind) {
        let n = b.commits.entry((kind, owner)).or_insert(0);
        *n += 1;
        let g = *n;
        for op in b.inflight.iter_mut() {
            if let Retire::Group {
                kind: k,
                owner: o,
                group: group @ None,
            } = &mut op.retire
            {
                if *k == kind && *o == owner {
                    *group = Some(g);
                }
            }
        }
    }
}

/// `wait_group(pending)` of a kind by a task: for each owner, every committed group but the
/// newest `pending` completes, oldest first. (A wait for the reads only completes the
/// operations too: their sources cannot have changed since they were issued, so reading them
/// now is what the hardware has read by then.)
pub(crate) fn wait(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    kind: AsyncGroup,
    pending: u32,
    _reads_only: bool,
) -> R<()> {
    for (owner, _) in owners(task, kind) {
        let mut groups: Vec<u64> = b
            .inflight
            .iter()
            .filter_map(|op| match op.retire {
                Retire::Group {
                    kind: k,
                    owner: o,
                    group: Some(g),
                } if k == kind && o == owner => Some(g),
                _ => None,
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        let keep = (pending as usize).min(groups.len());
        let done: Vec<u64> = groups[..groups.len() - keep].to_vec();
        while let Some(at) = b.inflight.iter().position(|op| {
            matches!(op.retire, Retire::Group { kind: k, owner: o, group: Some(g) }
                if k == kind && o == owner && done.contains(&g))
        }) {
            complete(b, at)?;
        }
    }
    Ok(())
}

/// How to wait for an operation, for messages.
fn how_to_wait(b: &Block<'_, '_>, op: &InFlight) -> String {
    match op.retire {
        Retire::Barrier { bar, .. } => format!(
            "wait on barrier `{}` for the phase that covers the copy (and sync the block when \
             only one thread waited)",
            b.bar_name(bar.0, bar.1)
        ),
        Retire::Group { kind, group, .. } => match group {
            Some(_) => format!("{} until its group is covered", kind.wait_name()),
            None => format!(
                "it was never committed; {} and {}",
                kind.commit_name(),
                kind.wait_name()
            ),
        },
    }
}

/// Checks what an instruction is about to touch against the operations in flight and the
/// proxy-fence record.
pub(crate) fn check(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    facts: &Facts<'_>,
    inst: &'static str,
    loc: Loc,
) -> R<()> {
    prune(b);
    if b.inflight.is_empty() && b.proxy_dirty.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let p = b.program();
    for e in &facts.effects {
        if matches!(e.access, Access::Declare | Access::Release) {
            continue;
        }
        match e.memory {
            Memory::Shared(t) => {
                let Some(Span { range, stage }) = effect_bytes(b, task, e, inst, loc)? else {
                    continue;
                };
                let me = views::label(b, t, stage);
                // a write that itself lands later (a copy into another part of the tile)
                let own_async_write = e.completes != Completion::Now && e.access == Access::Write;
                if !own_async_write {
                    if let Some((op, x)) = writing_into(b, range) {
                        let dst = match (x.memory, x.bytes) {
                            (Memory::Shared(u), Some(span)) => (u, span.stage),
                            _ => (t, stage),
                        };
                        let dst_label = views::label(b, dst.0, dst.1);
                        let into = if dst.0 == t {
                            if dst.1 == stage {
                                String::new()
                            } else {
                                format!(" (into `{dst_label}`)")
                            }
                        } else {
                            format!(" (into `{dst_label}`, which shares its bytes)")
                        };
                        let state = match op.status {
                            Status::Issued => "is still in flight",
                            Status::Landed { .. } => {
                                "landed, but its barrier phase has not completed"
                            }
                        };
                        let verb = if e.access.reads() { "reads" } else { "writes" };
                        return Err(Fail::new(
                            Fault::ReadBeforeWait,
                            loc,
                            format!(
                                "{inst} {verb} shared tensor `{me}` while {} into it{into} {state}: {} before reading it",
                                op.label,
                                how_to_wait(b, op)
                            ),
                        )
                        .note(op.loc, format!("the copy into `{dst_label}` was issued here")));
                    }
                }
                if e.access.writes() {
                    let reader = b.inflight.iter().find(|op| {
                        active(b, op)
                            && op.touches.iter().any(|x| {
                                matches!(x.memory, Memory::Shared(_))
                                    && overlaps(touched(x), range)
                                    && x.access.reads()
                            })
                    });
                    if let Some(op) = reader {
                        return Err(overwrite(b, task, op, inst, &me, loc));
                    }
                }
                if e.proxy == Proxy::Async && e.access.reads() {
                    let dirty = b.proxy_dirty[t.0 as usize]
                        .iter()
                        .find(|d| overlaps(d.bytes, range));
                    if let Some(d) = dirty {
                        return Err(Fail::new(
                            Fault::MissingProxyFence,
                            loc,
                            format!(
                                "{inst} reads `{me}`, which {} thread(s) wrote with {} and have not \
                                 published with fence_proxy_async: the async proxy may read stale bytes",
                                d.threads.len(),
                                d.writer
                            ),
                        )
                        .note(d.loc, format!("`{me}` was written here")));
                    }
                }
            }
            Memory::Register(r) => {
                let mine = |op: &InFlight| {
                    op.threads
                        .iter()
                        .any(|t| task.threads.binary_search(t).is_ok())
                };
                let chained = |op: &InFlight| {
                    e.access == Access::Update
                        && matches!((e.completes, op.retire), (Completion::Group(k), Retire::Group { kind, .. }) if k == kind)
                };
                for op in &b.inflight {
                    if !active(b, op) || !mine(op) {
                        continue;
                    }
                    let Some(x) = op
                        .touches
                        .iter()
                        .find(|x| x.memory == e.memory && columns_overlap(x.columns, e.columns))
                    else {
                        continue;
                    };
                    let name = &p.register(r).name;
                    if x.access.writes() && !chained(op) {
                        let role = if x.role.is_empty() {
                            "register tensor"
                        } else {
                            x.role
                        };
                        return Err(Fail::new(
                            Fault::ReadBeforeWait,
                            loc,
                            format!(
                                "{inst} uses {role} `{name}` while {} into it is unfinished: {} first",
                                op.label,
                                how_to_wait(b, op)
                            ),
                        )
                        .note(op.loc, format!("the {} was issued here", short(op.inst))));
                    }
                    if x.access.reads() && !x.access.writes() && e.access.writes() {
                        return Err(Fail::new(
                            Fault::OverwriteBeforeWait,
                            loc,
                            format!(
                                "{inst} overwrites register tensor `{name}` while {} that reads it is unfinished: {} first",
                                op.label,
                                how_to_wait(b, op)
                            ),
                        )
                        .note(op.loc, format!("the {} was issued here", short(op.inst))));
                    }
                }
            }
            Memory::Global(_) => {}
        }
    }
    Ok(())
}

/// `inst`, run by `task`, overwrites tile `me` that the unfinished `op` reads. When other
/// threads own `op` (consumers that freed the stage a producer refills), the fault says so and
/// notes their arrivals since they issued it: one of them freed the tile too early.
fn overwrite(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    op: &InFlight,
    inst: &str,
    me: &str,
    loc: Loc,
) -> Fail {
    let head = format!(
        "{inst} overwrites shared tensor `{me}` while {} that reads it is unfinished",
        op.label
    );
    let issued = format!("the {} was issued here", short(op.inst));
    if op.threads.is_empty() || owned_by(op, task) {
        let message = format!(
            "{head}: {} (and let the producer know) before reusing the tile",
            how_to_wait(b, op)
        );
        return Fail::new(Fault::OverwriteBeforeWait, loc, message).note(op.loc, issued);
    }
    let owners = threads_text(&op.threads);
    let message = format!(
        "{head}: {owners} issued it and must {} before they let other threads reuse the tile \
         (before arriving on the barrier that frees it)",
        how_to_wait(b, op)
    );
    let mut f = Fail::new(Fault::OverwriteBeforeWait, loc, message).note(op.loc, issued);
    for (at, bar) in &op.arrivals {
        let what = format!(
            "{owners} arrived on barrier `{bar}` here while the {} was unfinished",
            short(op.inst)
        );
        f = f.note(*at, what);
    }
    f
}

/// `wgmma.mma` → `wgmma`: how notes name an operation.
fn short(inst: &str) -> &str {
    inst.strip_suffix(".mma").unwrap_or(inst)
}

/// After an instruction ran for a task: remembers its ordinary shared-memory writes until the
/// writing threads fence, and applies a proxy fence.
pub(crate) fn after(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    facts: &Facts<'_>,
    inst: &'static str,
    loc: Loc,
) -> R<()> {
    if facts.ordering == Some(Ordering::ProxyFence) {
        for slot in b.proxy_dirty.iter_mut() {
            for d in slot.iter_mut() {
                for t in &task.threads {
                    d.threads.remove(t);
                }
            }
            slot.retain(|d| !d.threads.is_empty());
        }
    }
    for e in &facts.effects {
        if let (Memory::Shared(t), Proxy::Generic, true) = (e.memory, e.proxy, e.access.writes()) {
            // writes that land later are recorded when they land (`cp_async.rs`)
            if e.access == Access::Declare || e.completes != Completion::Now {
                continue;
            }
            let bytes = views::bytes(b, task, t, e.stage, inst, loc)?.range;
            let slot = &mut b.proxy_dirty[t.0 as usize];
            let at = match slot.iter().position(|d| d.bytes == bytes) {
                Some(at) => at,
                None => {
                    slot.push(Dirty {
                        bytes,
                        loc,
                        writer: inst,
                        threads: Default::default(),
                    });
                    slot.len() - 1
                }
            };
            let d = &mut slot[at];
            d.loc = loc;
            d.writer = inst;
            d.threads.extend(task.threads.iter().copied());
        }
    }
    Ok(())
}

/// At the end of a block: an operation that may still read shared memory was never waited
/// for (the block's shared memory is released when it finishes).
pub(crate) fn unfinished(b: &mut Block<'_, '_>) -> R<()> {
    prune(b);
    for op in &b.inflight {
        let read = op.touches.iter().find_map(|x| match (x.memory, x.bytes) {
            (Memory::Shared(t), Some(span)) if x.access.reads() || x.access.writes() => Some((
                t,
                span.stage,
                if x.access.reads() { "read" } else { "write" },
            )),
            _ => None,
        });
        if let (Some((t, stage, verb)), Retire::Group { kind, .. }) = (read, op.retire) {
            return Err(Fail::new(
                Fault::NotWaited,
                op.loc,
                format!(
                    "the block finished while this {} may still {verb} shared tensor `{}`: {} (and {}) before the end",
                    short(op.inst),
                    views::label(b, t, stage),
                    kind.wait_name(),
                    kind.commit_name()
                ),
            ));
        }
    }
    // a copy whose phase no wait saw may still be landing when the block ends, into shared
    // memory the next block on the multiprocessor may own
    for (j, metas) in b.bars.iter().enumerate() {
        for (i, m) in metas.iter().flatten().enumerate() {
            if let Some((phase, loc)) = m.last_copy {
                if m.observed <= phase {
                    let name = b.bar_name(crate::ir::BarrierArrayId(j as u32), i);
                    return Err(Fail::new(
                        Fault::NotWaited,
                        loc,
                        format!(
                            "the block finished without waiting for this TMA copy: no wait on \
                             barrier `{name}` saw the phase its bytes complete, so on the GPU \
                             they may still be landing after the block ends, in shared memory \
                             the next block on the multiprocessor may own; wait for the phase, \
                             or do not issue copies past the last one used"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
