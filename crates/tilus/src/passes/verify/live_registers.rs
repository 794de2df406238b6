//! The registers a thread's tiles need at once: a lower bound, checked against the 255 a
//! thread can have once layouts give every tile its registers per thread.
//!
//! A tile is alive from where it is written to its last read (backward liveness over the
//! program's statements): an instruction that writes every element of a tile without reading
//! it (a definition, `assign_tile`) ends the life of its old value there, so a tile carried
//! through a loop, assigned anew in each iteration, is not alive between its last read and
//! the next assignment; a loop's back edge keeps alive what its next iteration reads first;
//! only one branch of an `if` runs. Around each instruction the bound takes the larger of the
//! tiles alive into it and those alive out of it (with those it defines): a tile read for the
//! last time and one defined by the same instruction need not be alive together, since the
//! compiler writes the new one over the old one (a cast, a sum, a reshape).

use crate::ir::facts::{Access, Memory};
use crate::ir::{Program, Stmt, StmtKind};
use crate::passes::context::Checker;
use crate::passes::MAX_REGISTERS;

/// Which tiles are alive, by register id.
type Alive = Vec<bool>;

/// The backward walk: each tile's registers per thread, and the worst point seen.
struct Walk<'p> {
    p: &'p Program,
    regs: Vec<u32>,
    /// The largest sum of registers alive at one point, and the tiles alive there.
    worst: (u32, Alive),
}

impl Walk<'_> {
    /// Records the tiles alive at one point.
    fn measure(&mut self, alive: &Alive) {
        let sum = alive
            .iter()
            .zip(&self.regs)
            .filter(|(a, _)| **a)
            .fold(0u32, |s, (_, r)| s.saturating_add(*r));
        if sum > self.worst.0 {
            self.worst = (sum, alive.clone());
        }
    }

    /// What is alive before `stmts`, given what is alive after them.
    fn block(&mut self, stmts: &[Stmt], mut alive: Alive) -> Alive {
        for s in stmts.iter().rev() {
            alive = self.stmt(s, alive);
        }
        alive
    }

    fn stmt(&mut self, s: &Stmt, after: Alive) -> Alive {
        match &s.kind {
            StmtKind::Inst(i) => {
                let (mut out, mut before) = (after.clone(), after);
                let facts = i.facts(self.p);
                let registers = || {
                    facts.effects.iter().filter_map(|e| match e.memory {
                        Memory::Register(r) => Some((r.0 as usize, e)),
                        _ => None,
                    })
                };
                // writes first: one of every element ends the old value (one of some columns
                // leaves the others as they were)
                for (r, e) in registers() {
                    if matches!(e.access, Access::Declare | Access::Write) {
                        out[r] = true;
                        if e.columns.is_none() {
                            before[r] = false;
                        }
                    }
                }
                // then reads: a tile both read and written stays alive into it
                for (r, e) in registers() {
                    if matches!(e.access, Access::Read | Access::Update) {
                        before[r] = true;
                        out[r] |= e.access == Access::Update;
                    }
                }
                self.measure(&out);
                self.measure(&before);
                before
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                let then_alive = self.block(then_body, after.clone());
                let else_alive = self.block(else_body, after);
                union(then_alive, &else_alive)
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                // the end of the body flows into what follows and into its own start; the
                // sets only grow, so the walk settles
                let mut end = after.clone();
                loop {
                    let start = self.block(body, end.clone());
                    // what follows the loop, too: it may run no iteration
                    let next = union(after.clone(), &start);
                    if next == end {
                        return next;
                    }
                    end = next;
                }
            }
            StmtKind::ThreadGroup { body, .. } => self.block(body, after),
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => after,
        }
    }
}

fn union(mut a: Alive, b: &Alive) -> Alive {
    for (x, y) in a.iter_mut().zip(b) {
        *x |= *y;
    }
    a
}

/// Reports the worst point over [`MAX_REGISTERS`], blaming its largest tile (the one worth
/// shrinking).
pub(super) fn check(c: &mut Checker) {
    let p = c.p;
    let regs: Vec<u32> = p
        .registers
        .iter()
        .map(|r| {
            r.layout.as_ref().map_or(0, |l| {
                let bits = (l.local_size() as u64).saturating_mul(r.dtype.bits() as u64);
                u32::try_from(bits.div_ceil(32)).unwrap_or(u32::MAX)
            })
        })
        .collect();
    let n = regs.len();
    let mut walk = Walk {
        p,
        regs,
        worst: (0, vec![false; n]),
    };
    walk.block(&p.body, vec![false; n]);
    let (sum, alive) = walk.worst;
    if sum <= MAX_REGISTERS {
        return;
    }
    let live: Vec<usize> = (0..n).filter(|&t| alive[t]).collect();
    let Some(&largest) = live.iter().max_by_key(|&&t| walk.regs[t]) else {
        return;
    };
    let parts: Vec<String> = live
        .iter()
        .map(|&t| format!("`{}` {}", p.registers[t].name, walk.regs[t]))
        .collect();
    let advice = uneven(p, largest).unwrap_or_else(|| "use a smaller tile or more warps".into());
    c.err(
        p.registers[largest].loc,
        format!(
            "the register tiles alive together need {sum} registers per thread ({}), more than \
             the {MAX_REGISTERS} a thread can have; {advice}",
            parts.join(" + "),
        ),
    );
}

/// Advice for a tile whose extents the block's threads do not divide: its layout gives each
/// thread far more elements than an even share (a row of 1000 over 128 threads keeps copies
/// of most of it), and more warps or a narrower tile would not change that; padding the
/// extent to a multiple of the threads (and masking the loads and stores at the true extent)
/// does. `None` where the tile is spread evenly enough.
fn uneven(p: &Program, tile: usize) -> Option<String> {
    let r = &p.registers[tile];
    let layout = r.layout.as_ref()?;
    // tiles of more elements than an i64 holds are told about the budget alone
    let elements = layout
        .shape()
        .iter()
        .try_fold(1i64, |a, &x| a.checked_mul(x.max(1)))?;
    let threads = i64::from(p.threads()).max(1);
    let even = elements / threads + i64::from(elements % threads != 0);
    if layout.local_size() <= even.saturating_mul(2) {
        return None;
    }
    let shape = layout.shape();
    let last = *shape.last()?;
    let padded = crate::layout::padded_extent(last, threads, i64::from(r.dtype.bits() / 8));
    Some(format!(
        "`{}` {:?} does not divide evenly among the block's {threads} threads, so each keeps \
         {} of its {elements} elements where {even} would be an even share: pad its last \
         extent to {padded} (`tilus::layout::padded_extent`) and mask the loads and stores at \
         {last}, rather than shrinking it or adding warps (a tile that only global loads and \
         stores, expressions, casts and reductions touch, and the tiles it meets there, get that \
         padding by themselves: a masked layout; another instruction uses `{}` or one of them)",
        r.name,
        shape,
        layout.local_size(),
        r.name,
    ))
}
