//! The shared-memory plan: one pass over the whole program with liveness, which places shared
//! tiles and mbarriers together.
//!
//! The invariant it keeps is *no barrier inside live data*: a tile lives from its allocation to
//! its `free_shared` (or the end of the kernel; a `while` loop counts as a loop, and the two
//! branches of an `if` are laid out one after the other, as only one runs), and a tile the async proxy still touches stays
//! live until the wait that observes the operation (the barrier wait of a TMA load, the group
//! wait of a TMA store or a wgmma), even when it is freed earlier. All of it is read from the
//! instructions' facts. Barriers live from their
//! allocation to the end of the kernel. Two things that are alive at the same time never share
//! a byte, so `free_shared` can never make a live byte reusable.

use super::async_groups::AsyncGroups;
use crate::ir::facts::{Access, BarrierEffect, Completion, Memory, Ordering, Proxy};
use crate::ir::{BarrierRef, Program, SharedId, Stmt, StmtKind};
use crate::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Shared(usize),
    Barriers(usize),
}

#[derive(Debug)]
struct Interval {
    item: Item,
    start: usize,
    end: usize,
    bytes: u64,
    align: u64,
}

struct Walk<'p> {
    p: &'p Program,
    pos: usize,
    start: Vec<usize>,
    end: Vec<usize>,
    /// The loops (start, end) enclosing each tile's allocation, outermost first.
    alloc_loops: Vec<Vec<usize>>,
    loops: Vec<(usize, usize)>,
    loop_stack: Vec<usize>,
    /// Branches of `if`s seen so far, the open ones (innermost last) and the innermost open
    /// branch at each tile's allocation.
    branches: usize,
    branch_stack: Vec<usize>,
    alloc_branch: Vec<Option<usize>>,
    /// Asynchronous accesses completing at a barrier wait: (tile, barrier) issued and not yet
    /// observed by a wait on that barrier.
    at_barrier: Vec<(SharedId, &'p BarrierRef)>,
    /// Asynchronous accesses completing at a group wait.
    in_groups: AsyncGroups<(SharedId, bool)>,
    /// Tiles freed while an asynchronous access to them was in flight.
    freed_pending: Vec<SharedId>,
    bar_start: Vec<usize>,
    /// Tiles the async proxy touches (they need the alignment of their swizzle).
    asynchronous: Vec<bool>,
}

impl<'p> Walk<'p> {
    fn in_flight(&self, t: SharedId) -> bool {
        self.at_barrier.iter().any(|(x, _)| *x == t)
            || self.in_groups.in_flight().any(|(x, _)| *x == t)
    }

    /// Ends the lives of freed tiles nothing asynchronous touches any more.
    fn settle(&mut self) {
        let pending = std::mem::take(&mut self.freed_pending);
        for t in pending {
            if self.in_flight(t) {
                self.freed_pending.push(t);
            } else {
                self.end[t.0 as usize] = self.pos;
            }
        }
    }

    fn visit(&mut self, stmts: &'p [Stmt]) {
        for s in stmts {
            self.pos += 1;
            match &s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    let id = self.loops.len();
                    self.loops.push((self.pos, 0));
                    self.loop_stack.push(id);
                    self.visit(body);
                    self.loop_stack.pop();
                    self.loops[id].1 = self.pos;
                }
                // The branches are laid out one after the other: a tile allocated and freed in
                // one may share bytes with a tile of the other, as only one of them runs.
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    for body in [then_body, else_body] {
                        self.branches += 1;
                        self.branch_stack.push(self.branches);
                        self.visit(body);
                        self.branch_stack.pop();
                    }
                }
                StmtKind::ThreadGroup { body, .. } => self.visit(body),
                StmtKind::Inst(i) => {
                    let facts = i.facts(self.p);
                    for e in &facts.effects {
                        let Memory::Shared(t) = e.memory else {
                            continue;
                        };
                        let ti = t.0 as usize;
                        if e.proxy == Proxy::Async {
                            self.asynchronous[ti] = true;
                        }
                        match e.access {
                            Access::Declare => {
                                self.start[ti] = self.pos;
                                self.alloc_loops[ti] = self.loop_stack.clone();
                                self.alloc_branch[ti] = self.branch_stack.last().copied();
                            }
                            // Freed on one path only (the verifier rejects it): the tile stays
                            // alive on the other, so its life does not end here.
                            Access::Release
                                if self.branch_stack.last().copied() != self.alloc_branch[ti] => {}
                            Access::Release => {
                                if self.in_flight(t) {
                                    self.freed_pending.push(t);
                                } else {
                                    self.end[ti] = self.pos;
                                }
                            }
                            Access::Read | Access::Write | Access::Update => {}
                        }
                        match e.completes {
                            Completion::Now => {}
                            Completion::Barrier(bar) => self.at_barrier.push((t, bar)),
                            Completion::Group(kind) => self
                                .in_groups
                                .issue(kind, (t, e.access.reads() && !e.access.writes())),
                        }
                    }
                    for b in &facts.barriers {
                        match b {
                            BarrierEffect::Init(id) => self.bar_start[id.0 as usize] = self.pos,
                            // A wait observes the copies issued on that very barrier (array and
                            // index).
                            BarrierEffect::Wait { bar, .. } => {
                                self.at_barrier.retain(|(_, x)| *x != *bar);
                                self.settle();
                            }
                            BarrierEffect::Arrive { .. } | BarrierEffect::CompleteTx { .. } => {}
                        }
                    }
                    match facts.ordering {
                        Some(Ordering::Commit(kind)) => self.in_groups.commit(kind),
                        Some(Ordering::Wait {
                            group,
                            pending,
                            reads_only,
                        }) => {
                            self.in_groups
                                .wait(group, pending, reads_only, |(_, read)| *read);
                            self.settle();
                        }
                        Some(Ordering::ProxyFence | Ordering::RegisterFence(_)) | None => {}
                    }
                }
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
            }
        }
    }
}

/// Places every shared tile and mbarrier; sets their offsets and the program's shared size.
pub fn run(mut p: Program) -> Result<Program> {
    let n = p.shareds.len();
    let mut w = Walk {
        p: &p,
        pos: 0,
        start: vec![0; n],
        end: vec![usize::MAX; n],
        alloc_loops: vec![vec![]; n],
        loops: vec![],
        loop_stack: vec![],
        branches: 0,
        branch_stack: vec![],
        alloc_branch: vec![None; n],
        at_barrier: vec![],
        in_groups: AsyncGroups::default(),
        freed_pending: vec![],
        bar_start: vec![0; p.barriers.len()],
        asynchronous: vec![false; n],
    };
    w.visit(&p.body);
    let Walk {
        start,
        end,
        alloc_loops,
        loops,
        bar_start,
        asynchronous,
        ..
    } = w;
    // A tile allocated in a loop that outlives the loop body (freed after it, or never) is
    // allocated again by the next iteration while the previous one is still alive: it takes the
    // whole loop, from its first statement.
    let mut start = start;
    for t in 0..n {
        for &l in &alloc_loops[t] {
            let (ls, le) = loops[l];
            if end[t] > le {
                start[t] = start[t].min(ls);
                break;
            }
        }
    }
    let mut intervals: Vec<Interval> = vec![];
    for (i, s) in p.shareds.iter().enumerate() {
        // TMA destinations need the alignment of their swizzle (128 bytes at least); other tiles
        // only the 16 bytes of vector accesses.
        let align = if asynchronous[i] {
            s.layout.as_ref().map_or(128, |l| l.swizzle.alignment()) as u64
        } else {
            16
        };
        intervals.push(Interval {
            item: Item::Shared(i),
            start: start[i],
            end: end[i],
            bytes: s.footprint(),
            align,
        });
    }
    for (i, b) in p.barriers.iter().enumerate() {
        intervals.push(Interval {
            item: Item::Barriers(i),
            start: bar_start[i],
            end: usize::MAX,
            bytes: 8 * b.counts.len() as u64,
            align: 8,
        });
    }
    // First fit in order of allocation; larger alignment first among simultaneous ones.
    // Offsets saturate: a tile too large to count has `u64::MAX` bytes, and the total is
    // checked against the limit after planning.
    intervals.sort_by_key(|iv| (iv.start, std::cmp::Reverse(iv.align)));
    let mut placed: Vec<(usize, usize, u64, u64)> = vec![]; // (start, end, offset, bytes)
    let mut top = 0u64;
    for iv in &intervals {
        let mut offset = 0u64;
        loop {
            offset = offset.div_ceil(iv.align).saturating_mul(iv.align);
            let clash = placed.iter().find(|(s, e, o, b)| {
                let overlap_time = iv.start <= *e && *s <= iv.end;
                let overlap_space =
                    offset < o.saturating_add(*b) && *o < offset.saturating_add(iv.bytes);
                overlap_time && overlap_space
            });
            match clash {
                Some((_, _, o, b)) => offset = o.saturating_add(*b),
                None => break,
            }
        }
        placed.push((iv.start, iv.end, offset, iv.bytes));
        top = top.max(offset.saturating_add(iv.bytes));
        let off32 = u32::try_from(offset).unwrap_or(u32::MAX);
        match iv.item {
            Item::Shared(i) => p.shareds[i].offset = Some(off32),
            Item::Barriers(i) => p.barriers[i].offset = Some(off32),
        }
    }
    let max_align = intervals.iter().map(|iv| iv.align).max().unwrap_or(16);
    let total = if top == 0 {
        0
    } else {
        top.saturating_add(max_align.saturating_sub(16))
    };
    p.smem_bytes = u32::try_from(total).unwrap_or(u32::MAX);
    p.smem_align = max_align as u32;
    Ok(p)
}
