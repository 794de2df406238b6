//! Races on shared memory between warps, found before anything runs: an ordinary write
//! (`store_shared`, or the copies of `copy_async`, counted where they are issued) and a read
//! or write of the same bytes of a tile by threads of another warp,
//! with no barrier between them in the program's text. The planned layouts say which thread
//! touches which bytes, so a tile that each warp writes and reads back in its own part needs
//! no barrier and is not reported.
//!
//! The walk is conservative where the text cannot tell: an `mbarrier` wait orders everything
//! before it (who arrived on the barrier is the interpreter's to follow, `interp/races.rs`);
//! stages of a staged tile are compared only when they are the same for certain
//! (`stages.rs`), and only at constant stages or the same index expression; a loop's body is
//! walked twice, so that the end of one iteration meets the start of the next.

use super::stages::{Clock, Stage};
use crate::ir::{
    CpAsyncInst, Inst, Loc, MemoryInst, Program, RegView, SharedView, Stmt, StmtKind, SyncScope,
};
use crate::layout::RegisterLayout;
use crate::passes::context::Checker;
use std::collections::HashMap;
use std::rc::Rc;

/// Tiles with more elements than this are not mapped (the budgets' rules reject them).
const MAX_ELEMENTS: i64 = 1 << 20;

/// Per byte of a tile (or of a stage, for a stage named by a variable index), the warps that
/// touch it, one bit each.
type Bytes = HashMap<i64, u32>;

/// An access not yet ordered by a barrier.
#[derive(Clone)]
struct Pending {
    view: SharedView,
    stage: Stage,
    write: bool,
    /// The warps that made it, one bit each: each is ordered after its own part of the access
    /// (`conflict` leaves a warp's own bytes alone), not after the other warps' parts.
    by: u32,
    /// The warps ordered after all of it (those of group barriers it met), one bit each.
    known: u32,
    bytes: Rc<Bytes>,
    loc: Loc,
    inst: &'static str,
}

/// The walk's state: what is pending, and the clock for stage indices.
#[derive(Clone, Default)]
struct State {
    pending: Vec<Pending>,
}

/// The bytes an access of `view` through register layout `rl` touches, by warp, for threads
/// `base .. base + count`; byte offsets from the tile's start (or the stage's, for a stage the
/// index of which is not a constant). `None` where they cannot be known.
fn bytes_of(
    p: &Program,
    view: &SharedView,
    rl: &RegisterLayout,
    (base, count): (u32, u32),
) -> Option<Bytes> {
    let d = p.shared(view.tensor);
    let tile = d.layout.as_ref()?;
    let layout = p.sview_layout(view)?;
    let mut start = p.sview_row_offset_bytes(view);
    if let Some(s) = &view.stage {
        if let Some(i) = s.as_int() {
            start += i * i64::from(tile.stage_bytes());
        }
    }
    let (nthreads, ls) = (rl.num_threads().max(1), rl.local_size());
    if ls.saturating_mul(count as i64) > MAX_ELEMENTS {
        return None;
    }
    let eb = i64::from(d.dtype.nbytes());
    let mut bytes = Bytes::new();
    for t in 0..count as i64 {
        let warp = (base as i64 + t) / 32;
        let bit = 1u32 << warp.min(31);
        for l in 0..ls {
            let at = start + i64::from(layout.byte_offset(&rl.coords(t % nthreads, l)));
            for b in at..at + eb {
                *bytes.entry(b).or_default() |= bit;
            }
        }
    }
    Some(bytes)
}

/// A byte both touch, with the warps that race there: a warp of the later access that no
/// barrier ordered after the earlier one (`known`), and a different warp of the earlier one
/// (for a read, a warp that wrote the byte itself reads its own value).
fn conflict(
    later: &Bytes,
    later_writes: bool,
    earlier: &Bytes,
    known: u32,
) -> Option<(i64, u32, u32)> {
    let mut hits: Vec<(i64, u32, u32)> = later
        .iter()
        .filter_map(|(&b, &now)| {
            let then = *earlier.get(&b)?;
            let unordered = now & !known;
            let racing = if later_writes {
                (0..32).any(|w| unordered >> w & 1 == 1 && then & !(1 << w) != 0)
            } else {
                unordered & !then != 0
            };
            racing.then_some((b, unordered, then))
        })
        .collect();
    hits.sort_unstable();
    hits.first().copied()
}

fn first_warp(mask: u32, not: u32) -> u32 {
    let m = if mask & !not != 0 { mask & !not } else { mask };
    m.trailing_zeros()
}

/// Whether two pending views name bytes with the same offsets: the whole tile or constant
/// stages (offsets from the tile), or the same index (offsets from the stage).
fn comparable(a: &SharedView, b: &SharedView) -> bool {
    let tile_offsets = |v: &SharedView| v.stage.as_ref().is_none_or(|s| s.as_int().is_some());
    (tile_offsets(a) && tile_offsets(b)) || (a.stage.is_some() && a.stage == b.stage)
}

/// One ordinary access of a shared tile: the view, the register layout it goes through,
/// whether it writes, the threads that run it (first block thread, count) and the
/// instruction's name.
struct Use<'a> {
    view: &'a SharedView,
    rl: &'a RegisterLayout,
    write: bool,
    threads: (u32, u32),
    inst: &'static str,
}

struct Walk<'c, 'p> {
    c: &'c mut Checker<'p>,
    clock: Clock,
}

impl Walk<'_, '_> {
    fn access(&mut self, st: &mut State, u: Use<'_>, s: &Stmt) {
        let Use {
            view,
            rl,
            write,
            threads,
            inst,
        } = u;
        let p = self.c.p;
        let Some(bytes) = bytes_of(p, view, rl, threads) else {
            return;
        };
        let here = self.clock.stamp(view.stage.as_ref());
        let race = st.pending.iter().rev().find_map(|e| {
            let same = e.view.tensor == view.tensor
                && (write || e.write)
                && comparable(&e.view, view)
                && self.clock.same(&e.stage, &here);
            if !same {
                return None;
            }
            conflict(&bytes, write, &e.bytes, e.known).map(|x| (e, x))
        });
        if let Some((e, (byte, now, then))) = race {
            let (wn, wt) = (first_warp(now, then), first_warp(then, now));
            let (verb, prior) = (
                if write { "writes" } else { "reads" },
                if e.write { "wrote" } else { "read" },
            );
            let after = if e.inst == "copy_async" {
                " (after the copy_async_wait_group that covers the copy: a wait covers only its \
                 own thread's copies)"
            } else {
                ""
            };
            let msg = format!(
                "{inst} {verb} bytes of `{}` (byte {byte}) in warp {wn} that {} {prior} in warp \
                 {wt} at {}, with no barrier between them: on the GPU the two warps run in any \
                 order. Put a `sync()` (or `sync_group()` of a group holding both warps) between \
                 them{after}, or hand the tile over through an mbarrier",
                p.shared(view.tensor).name,
                e.inst,
                e.loc,
            );
            self.c.err_once(s.loc, msg);
            return;
        }
        let by = bytes.values().fold(0, |a, &w| a | w);
        st.pending.push(Pending {
            view: view.clone(),
            stage: here,
            write,
            by,
            known: 0,
            bytes: Rc::new(bytes),
            loc: s.loc,
            inst,
        });
    }

    fn walk(&mut self, stmts: &[Stmt], st: &mut State, threads: (u32, u32)) {
        let p = self.c.p;
        for s in stmts {
            self.clock.tick();
            match &s.kind {
                StmtKind::For { var, body, .. } => {
                    for _ in 0..2 {
                        self.clock.write(*var);
                        self.walk(body, st, threads);
                    }
                }
                StmtKind::While { body, .. } => {
                    self.walk(body, st, threads);
                    self.walk(body, st, threads);
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    let mut other = st.clone();
                    self.walk(then_body, st, threads);
                    self.walk(else_body, &mut other, threads);
                    st.pending.extend(other.pending);
                }
                StmtKind::ThreadGroup {
                    begin,
                    count,
                    copies,
                    body,
                    ..
                } => match copies {
                    None => {
                        let inner = (threads.0.saturating_add(*begin), *count);
                        self.walk(body, st, inner);
                    }
                    // each group on its threads; a stage named by the group's index is
                    // another stage from one group to the next
                    Some(cp) => {
                        // (at most as many groups as the enclosing one holds: more is the
                        // control rule's diagnostic)
                        for i in 0..cp.copies.min(threads.1 / (*count).max(1)) {
                            self.clock.write(cp.index);
                            let first = begin.saturating_add(i.saturating_mul(*count));
                            self.walk(body, st, (threads.0.saturating_add(first), *count));
                        }
                    }
                },
                StmtKind::Sync { scope, .. } => match scope {
                    SyncScope::Group(_) => {
                        // the group's warps learn what any of them did before
                        let group = warps_of(threads);
                        for e in &mut st.pending {
                            if (e.by | e.known) & group != 0 {
                                e.known |= group;
                            }
                        }
                    }
                    _ => st.pending.clear(),
                },
                StmtKind::Let { var, .. } | StmtKind::Assign { var, .. } => self.clock.write(*var),
                StmtKind::Inst(Inst::Mbarrier(crate::ir::MbarrierInst::Wait { .. })) => {
                    st.pending.clear()
                }
                StmtKind::Inst(Inst::Memory(MemoryInst::StoreShared { dst, src })) => {
                    if let Some(rl) = reg_layout(p, src) {
                        let u = Use {
                            view: dst,
                            rl: &rl,
                            write: true,
                            threads,
                            inst: "store_shared",
                        };
                        self.access(st, u, s);
                    }
                }
                StmtKind::Inst(Inst::Memory(MemoryInst::LoadShared { src, out })) => {
                    if let Some(rl) = p.register(*out).layout.as_ref() {
                        let u = Use {
                            view: src,
                            rl,
                            write: false,
                            threads,
                            inst: "load_shared",
                        };
                        self.access(st, u, s);
                    }
                }
                StmtKind::Inst(Inst::CpAsync(c @ CpAsyncInst::Copy { dst, .. })) => {
                    // its bytes land at a wait, but are written by the copying warps
                    if let Some(rl) = c.layout(p) {
                        let u = Use {
                            view: dst,
                            rl: &rl,
                            write: true,
                            threads,
                            inst: "copy_async",
                        };
                        self.access(st, u, s);
                    }
                }
                StmtKind::Inst(_) => {}
            }
        }
    }
}

/// The warps of threads `base .. base + count`, one bit each.
fn warps_of((base, count): (u32, u32)) -> u32 {
    let (first, last) = (base / 32, (base + count.max(1) - 1) / 32);
    (first..=last.min(31)).fold(0, |a, w| a | 1 << w)
}

/// The layout of a register view, permuted as the view reads it.
fn reg_layout(p: &Program, v: &RegView) -> Option<RegisterLayout> {
    let l = p.register(v.tensor).layout.as_ref()?;
    Some(l.permute(&v.perm(l.rank())))
}

/// The race rule over a laid-out, planned program.
pub(super) fn check(c: &mut Checker) {
    let p = c.p;
    let mut w = Walk {
        c,
        clock: Clock::default(),
    };
    w.walk(&p.body, &mut State::default(), (0, p.threads()));
}
