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

struct Walk {
    pos: usize,
    start: Vec<usize>,
    end: Vec<usize>,
    /// The loops (start, end) enclosing each tile's allocation, outermost first.
    alloc_loops: Vec<Vec<usize>>,
    loops: Vec<(usize, usize)>,
    loop_stack: Vec<usize>,
    /// Pending TMA writes: (tile, barrier) issued and not yet observed by a wait on that barrier.
    pending: Vec<(usize, BarrierRef)>,
    /// Tiles freed while a TMA write into them was pending.
    freed_pending: Vec<usize>,
    bar_start: Vec<usize>,
    tma_dst: Vec<bool>,
}

impl Walk {
    fn visit(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.pos += 1;
            match &s.kind {
                StmtKind::For { body, .. } => {
                    let id = self.loops.len();
                    self.loops.push((self.pos, 0));
                    self.loop_stack.push(id);
                    self.visit(body);
                    self.loop_stack.pop();
                    self.loops[id].1 = self.pos;
                }
                StmtKind::ThreadGroup { body, .. } => self.visit(body),
                StmtKind::Inst(Inst::Memory(MemoryInst::AllocShared(id))) => {
                    self.start[id.0 as usize] = self.pos;
                    self.alloc_loops[id.0 as usize] = self.loop_stack.clone();
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
                    self.tma_dst[dst.0 as usize] = true;
                    self.pending.push((dst.0 as usize, bar.clone()));
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Wait { bar, .. })) => {
                    // A wait observes the copies issued on that very barrier (array and index).
                    self.pending.retain(|(_, b)| b != bar);
                    let pos = self.pos;
                    let pending = &self.pending;
                    let end = &mut self.end;
                    self.freed_pending.retain(|&t| {
                        let still = pending.iter().any(|(x, _)| *x == t);
                        if !still {
                            end[t] = pos;
                        }
                        still
                    });
                }
                StmtKind::Inst(Inst::Mbarrier(MbarrierInst::Alloc(id))) => {
                    self.bar_start[id.0 as usize] = self.pos;
                }
                // wgmma reads its shared operands through descriptors: same alignment as TMA.
                StmtKind::Inst(Inst::Wgmma(crate::ir::WgmmaInst::Mma { a, b, .. })) => {
                    if let crate::ir::WgmmaA::Shared(v) = a {
                        self.tma_dst[v.tensor.0 as usize] = true;
                    }
                    self.tma_dst[b.tensor.0 as usize] = true;
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
        alloc_loops: vec![vec![]; n],
        loops: vec![],
        loop_stack: vec![],
        pending: vec![],
        freed_pending: vec![],
        bar_start: vec![0; p.barriers.len()],
        tma_dst: vec![false; n],
    };
    w.visit(&p.body);
    // A tile allocated in a loop that outlives the loop body (freed after it, or never) is
    // allocated again by the next iteration while the previous one is still alive: it takes the
    // whole loop, from its first statement.
    for t in 0..n {
        for &l in &w.alloc_loops[t] {
            let (ls, le) = w.loops[l];
            if w.end[t] > le {
                w.start[t] = w.start[t].min(ls);
                break;
            }
        }
    }
    let mut intervals: Vec<Interval> = vec![];
    for (i, s) in p.shareds.iter().enumerate() {
        // TMA destinations need the alignment of their swizzle (128 bytes at least); other tiles
        // only the 16 bytes of vector accesses.
        let align = if w.tma_dst[i] {
            s.layout.as_ref().map_or(128, |l| l.swizzle.alignment()) as u64
        } else {
            16
        };
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
