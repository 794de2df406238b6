//! The shared-memory plan: one pass over the whole program with liveness, which places shared
//! tiles and mbarriers together.
//!
//! The invariant it keeps is *no barrier inside live data*: a tile lives from its allocation to
//! its `free_shared` (or the end of the kernel), and a tile that TMA writes stays live until the
//! wait that observes the copy, even when it is freed earlier. Barriers live from their
//! allocation to the end of the kernel. Two things that are alive at the same time never share
//! a byte, so `free_shared` can never make a live byte reusable.

use crate::ir::{BarrierRef, Inst, MbarrierInst, MemoryInst, Program, Stmt, StmtKind, TmaInst};
use crate::Result;

/// Alignment of the dynamic shared-memory base that generated code establishes.
pub const BASE_ALIGN: u32 = 1024;

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
    bytes: u32,
    align: u32,
}

struct Walk {
    pos: usize,
    start: Vec<usize>,
    end: Vec<usize>,
    /// Pending TMA writes: (tile, barrier) issued and not yet observed by a wait.
    pending: Vec<(usize, BarrierRef)>,
    /// Tiles freed while a TMA write into them was pending.
    freed_pending: Vec<usize>,
    bar_start: Vec<usize>,
}

impl Walk {
    fn visit(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.pos += 1;
            match &s.kind {
                StmtKind::For { body, .. } | StmtKind::ThreadGroup { body, .. } => {
                    let start = self.pos;
                    self.visit(body);
                    // A tile allocated before a loop and freed after it is live throughout; a
                    // tile freed inside its own loop body lives within the body. Pending TMA
                    // writes at the end of a loop body may land during the next iteration, so
                    // they stay pending.
                    let _ = start;
                }
                StmtKind::Inst(Inst::Memory(MemoryInst::AllocShared(id))) => {
                    self.start[id.0 as usize] = self.pos;
                }
                StmtKind::Inst(Inst::Memory(MemoryInst::FreeShared(id))) => {
                    let t = id.0 as usize;
                    if self.pending.iter().any(|(x, _)| *x == t) {
                        self.freed_pending.push(t);
                    } else {
                        self.end[t] = self.pos;
                    }
                }
                StmtKind::Inst(Inst::Tma(TmaInst::GlobalToShared { dst, bar, .. })) => {
                    self.pending.push((dst.0 as usize, bar.clone()));
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Wait { bar, .. })) => {
                    let (done, still): (Vec<_>, Vec<_>) = self
                        .pending
                        .drain(..)
                        .partition(|(_, b)| b.array == bar.array);
                    self.pending = still;
                    for (t, _) in done {
                        if let Some(i) = self.freed_pending.iter().position(|x| *x == t) {
                            self.freed_pending.remove(i);
                            self.end[t] = self.pos;
                        }
                    }
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Alloc(id))) => {
                    self.bar_start[id.0 as usize] = self.pos;
                }
                _ => {}
            }
        }
    }
}

/// Places every shared tile and mbarrier; sets their offsets and the program's shared size.
pub fn run(mut p: Program) -> Result<Program> {
    let n = p.shareds.len();
    let mut w = Walk {
        pos: 0,
        start: vec![0; n],
        end: vec![usize::MAX; n],
        pending: vec![],
        freed_pending: vec![],
        bar_start: vec![0; p.barriers.len()],
    };
    w.visit(&p.body);
    let mut intervals: Vec<Interval> = vec![];
    for (i, s) in p.shareds.iter().enumerate() {
        let align = s
            .layout
            .as_ref()
            .map_or(16, |l| l.swizzle.alignment())
            .max(16);
        intervals.push(Interval {
            item: Item::Shared(i),
            start: w.start[i],
            end: w.end[i],
            bytes: s.nbytes(),
            align,
        });
    }
    for (i, b) in p.barriers.iter().enumerate() {
        intervals.push(Interval {
            item: Item::Barriers(i),
            start: w.bar_start[i],
            end: usize::MAX,
            bytes: 8 * b.counts.len() as u32,
            align: 8,
        });
    }
    // First fit in order of allocation; larger alignment first among simultaneous ones.
    intervals.sort_by_key(|iv| (iv.start, std::cmp::Reverse(iv.align)));
    let mut placed: Vec<(usize, usize, u32, u32)> = vec![]; // (start, end, offset, bytes)
    let mut top = 0u32;
    for iv in &intervals {
        let mut offset = 0u32;
        loop {
            offset = offset.div_ceil(iv.align) * iv.align;
            let clash = placed.iter().find(|(s, e, o, b)| {
                let overlap_time = iv.start <= *e && *s <= iv.end;
                let overlap_space = offset < o + b && *o < offset + iv.bytes;
                overlap_time && overlap_space
            });
            match clash {
                Some((_, _, o, b)) => offset = o + b,
                None => break,
            }
        }
        placed.push((iv.start, iv.end, offset, iv.bytes));
        top = top.max(offset + iv.bytes);
        match iv.item {
            Item::Shared(i) => p.shareds[i].offset = Some(offset),
            Item::Barriers(i) => p.barriers[i].offset = Some(offset),
        }
    }
    let needs_base_align = intervals.iter().any(|iv| iv.align > 16);
    p.smem_bytes = if top == 0 {
        0
    } else {
        top + if needs_base_align { BASE_ALIGN - 16 } else { 0 }
    };
    Ok(p)
}
