//! Races on shared memory between the warps of a block, found at run time the way
//! compute-sanitizer's racecheck finds them on the chip.
//!
//! The interpreter runs the threads of a task tile by tile together, so a program in which one
//! warp reads bytes another warp wrote, with no barrier between, computes the right result here
//! and reads stale bytes on the GPU now and then. This file makes that a fault.
//!
//! Each warp keeps a vector clock: what it knows of every warp's progress. Ordering comes only
//! from the block's synchronization:
//! - a block or group barrier (`sync`, `sync_group`, the barrier after `mbarrier.alloc`) joins
//!   the clocks of the warps that meet there;
//! - an `mbarrier` arrival releases the arriving warps' clocks into the barrier, and a wait that
//!   returns acquires what the barrier held when the phase it waited for completed.
//!
//! Every byte of shared memory keeps the last ordinary write (which thread, at which of its
//! warp's clocks, where) and the reads since. A read or write by another warp that does not
//! know of that write (a write: of those reads either) races with it. Threads of one warp are
//! taken to run in step (the code the compiler emits for a warp does not diverge around shared
//! accesses), so a warp never races with itself.
//!
//! TMA copies take part too (what they overlap while in flight is `hazards.rs`'s): a TMA load
//! counts as a write by the issuing warp when it is issued (a stage refilled while another warp
//! still reads it races), and when it lands its bytes are written by the *copy engine*, one
//! more clock beside the warps', which the copy's `complete_tx` releases into its barrier: a
//! warp reads them safely after waiting for that phase, or after meeting at a barrier a warp
//! that waited (one thread waits, then `sync()`). A TMA store counts as a read by the issuing
//! warp (the threads that filled the tile must have met it at a barrier first).

use super::state::Fail;
use crate::error::Fault;
use crate::ir::{BarrierArrayId, Loc};
use std::collections::HashMap;

/// Bytes per page of the shadow (pages are made on first touch: most kernels touch little of
/// their shared memory with ordinary accesses).
const PAGE: usize = 1024;
/// No thread: the byte has no ordinary writer (or reader) to order against.
const NOBODY: u16 = u16::MAX;

/// One access of a byte: the thread, its warp's own clock then, and where.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    thread: u16,
    clock: u32,
    at: u32,
}

const NONE: Epoch = Epoch {
    thread: NOBODY,
    clock: 0,
    at: 0,
};

/// The shadow of one byte.
#[derive(Clone, Copy, Debug)]
struct Cell {
    /// The last write; with `writers`, the warps that wrote the byte in that instruction (the
    /// copies of a replicated register tile write the same value from several warps).
    write: Epoch,
    writers: u32,
    /// The instruction (its count in the block) of the last write.
    op: u32,
    /// The last read, or (`many` non-zero) the reads of several warps that no one of them
    /// ordered after the others, in `Races::many`.
    read: Epoch,
    many: u32,
}

const EMPTY: Cell = Cell {
    write: NONE,
    writers: 0,
    op: 0,
    read: NONE,
    many: 0,
};

/// How a byte is accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Two accesses of a byte by threads of different warps, with nothing ordering the earlier
/// before the later.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Race {
    /// The byte, in the region.
    pub byte: u64,
    /// The later access: how, by which thread.
    pub access: Access,
    pub thread: u32,
    /// The earlier access: how, by which thread, where.
    pub prior: Access,
    pub prior_thread: u32,
    pub prior_loc: Loc,
    /// The earlier access is a TMA copy's landing (the copy engine's write).
    pub prior_engine: bool,
}

impl Race {
    /// The fault: `inst` at `loc` accessed bytes of `tile` (how messages name it).
    pub fn fail(&self, inst: &str, tile: &str, loc: Loc) -> Fail {
        let who = |t: u32| format!("thread {t} (warp {})", t / 32);
        let now = who(self.thread);
        if self.prior_engine {
            return Fail::new(
                Fault::SharedRace,
                loc,
                format!(
                    "{inst}: {now} {} bytes of `{tile}` (region byte {}) that a TMA copy wrote, \
                     without waiting for the copy's barrier phase or meeting a thread that \
                     did: the copy may not have landed yet. Wait on the barrier in these \
                     threads, or `sync()` after the thread that waits",
                    self.access.present(),
                    self.byte
                ),
            )
            .note(self.prior_loc, "the copy was issued here");
        }
        let then = who(self.prior_thread);
        let (verb, prior_verb) = (self.access.present(), self.prior.past());
        let risk = match (self.prior, self.access) {
            (Access::Write, Access::Read) => "the read may see the bytes before the write lands",
            (Access::Read, Access::Write) => {
                "the write may land before the read, which then sees the new bytes"
            }
            _ => "the two writes may land in either order",
        };
        Fail::new(
            Fault::SharedRace,
            loc,
            format!(
                "{inst}: {now} {verb} bytes of `{tile}` (region byte {}) that {then} {prior_verb} \
                 with nothing ordering the two: their warps met at no barrier in between, so \
                 {risk}. A `sync()` (or the group barrier of both, or an \
                 mbarrier that one arrives on and the other waits for) between them orders them",
                self.byte
            ),
        )
        .note(self.prior_loc, format!("{then} {prior_verb} them here"))
    }
}

impl Access {
    fn present(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "wrote",
        }
    }
}

/// An mbarrier's side of the clocks: what its arrivals released, and what that was when each
/// parity's phase completed last.
#[derive(Clone, Debug, Default)]
struct BarClock {
    released: Vec<u32>,
    completed: [Vec<u32>; 2],
}

/// The block's clocks and the shadow of its shared memory.
pub(crate) struct Races {
    /// Per warp, its vector clock (one entry per warp, and the copy engine's last).
    clocks: Vec<Vec<u32>>,
    /// The copy engine's own clock: one step per landed copy.
    engine: u32,
    bars: HashMap<(BarrierArrayId, usize), BarClock>,
    pages: Vec<Option<Box<[Cell]>>>,
    /// Read sets of bytes read by several unordered warps; slot 0 is unused, freed slots are
    /// reused.
    many: Vec<Vec<Epoch>>,
    free: Vec<u32>,
    /// Locations by index, so that a byte's shadow stays small.
    locs: Vec<Loc>,
    loc_index: HashMap<Loc, u32>,
    /// Instructions that accessed shared memory so far.
    op: u32,
}

fn warp(thread: u16) -> usize {
    thread as usize / 32
}

/// The pseudo-thread that stands for the copy engine: the first of the warp after the block's.
fn engine_thread(warps: usize) -> u16 {
    (warps * 32).min(NOBODY as usize - 1) as u16
}

/// A warp's bit in a cell's `writers` (warps past 31, which no block has, share the last).
fn warp_bit(w: usize) -> u32 {
    1 << w.min(31)
}

fn join(into: &mut [u32], from: &[u32]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}

impl Races {
    /// The state of a block of `block_threads` threads over `smem_bytes` bytes of shared memory.
    pub fn new(block_threads: u32, smem_bytes: usize) -> Races {
        let warps = (block_threads as usize).div_ceil(32).max(1);
        let clocks = (0..warps)
            .map(|w| {
                let mut c = vec![0; warps + 1];
                c[w] = 1;
                c
            })
            .collect();
        Races {
            clocks,
            engine: 1,
            bars: HashMap::new(),
            pages: vec![None; smem_bytes.div_ceil(PAGE)],
            many: vec![vec![]],
            free: vec![],
            locs: vec![],
            loc_index: HashMap::new(),
            op: 0,
        }
    }

    /// The index of a location in `locs`.
    fn intern(&mut self, loc: Loc) -> u32 {
        if let Some(&i) = self.loc_index.get(&loc) {
            return i;
        }
        self.locs.push(loc);
        let i = (self.locs.len() - 1) as u32;
        self.loc_index.insert(loc, i);
        i
    }

    fn cell(&mut self, byte: usize) -> Option<&mut Cell> {
        let page = self.pages.get_mut(byte / PAGE)?;
        let page = page.get_or_insert_with(|| vec![EMPTY; PAGE].into_boxed_slice());
        Some(&mut page[byte % PAGE])
    }

    /// Whether warp `w` knows of an access.
    fn knows(&self, w: usize, e: Epoch) -> bool {
        e.thread == NOBODY || warp(e.thread) == w || self.clocks[w][warp(e.thread)] >= e.clock
    }

    fn race(&self, byte: usize, access: Access, thread: u16, prior: Access, e: Epoch) -> Race {
        Race {
            byte: byte as u64,
            access,
            thread: thread as u32,
            prior,
            prior_thread: e.thread as u32,
            prior_loc: self.locs[e.at as usize],
            prior_engine: warp(e.thread) == self.clocks.len(),
        }
    }

    /// The first earlier access of `byte` that an access of `access` kind by `thread` races
    /// with.
    fn check(&mut self, byte: usize, access: Access, thread: u16) -> Option<Race> {
        let w = warp(thread);
        let c = *self.cell(byte)?;
        if access == Access::Write && c.op == self.op {
            // another copy of the same element, written by the same instruction
            return None;
        }
        // a warp that wrote a copy reads its own value, or a copy of it; a write must be ordered
        // after the first copy's (the others' clocks are not kept)
        let wrote_it = access == Access::Read && c.writers >> w.min(31) & 1 == 1;
        if !wrote_it && !self.knows(w, c.write) {
            return Some(self.race(byte, access, thread, Access::Write, c.write));
        }
        if access == Access::Read {
            return None;
        }
        let reads: &[Epoch] = if c.many != 0 {
            &self.many[c.many as usize]
        } else {
            std::slice::from_ref(&c.read)
        };
        let bad = reads.iter().copied().find(|&r| !self.knows(w, r));
        bad.map(|r| self.race(byte, access, thread, Access::Read, r))
    }

    /// Records an access of `byte` by `thread` at location index `at`.
    fn record(&mut self, byte: usize, access: Access, thread: u16, at: u32) {
        let w = warp(thread);
        let now = Epoch {
            thread,
            clock: self.clocks[w][w],
            at,
        };
        let Some(c) = self.cell(byte) else { return };
        let mut c = *c;
        match access {
            Access::Write if c.op == self.op => c.writers |= warp_bit(w),
            Access::Write => {
                if c.many != 0 {
                    self.many[c.many as usize].clear();
                    self.free.push(c.many);
                }
                c = Cell {
                    write: now,
                    writers: warp_bit(w),
                    op: self.op,
                    read: NONE,
                    many: 0,
                };
            }
            Access::Read if c.many != 0 => {
                let set = &mut self.many[c.many as usize];
                match set.iter_mut().find(|r| warp(r.thread) == w) {
                    Some(r) => *r = now,
                    None => set.push(now),
                }
            }
            Access::Read => {
                if self.knows(w, c.read) {
                    // the earlier read is ordered before this one: this one stands for both
                    c.read = now;
                } else {
                    let slot = self.free.pop().unwrap_or_else(|| {
                        self.many.push(vec![]);
                        (self.many.len() - 1) as u32
                    });
                    self.many[slot as usize] = vec![c.read, now];
                    c.many = slot;
                    c.read = NONE;
                }
            }
        }
        if let Some(cell) = self.cell(byte) {
            *cell = c;
        }
    }

    /// Checks and records ordinary accesses of one instruction at `loc`: `(thread, first
    /// byte)` pairs of `nbytes` bytes each. The first race found is returned (the accesses
    /// before it are recorded).
    pub fn accesses(
        &mut self,
        access: Access,
        loc: Loc,
        nbytes: usize,
        each: impl IntoIterator<Item = (u32, usize)>,
    ) -> Option<Race> {
        let at = self.intern(loc);
        self.op += 1;
        for (thread, first) in each {
            let thread = thread.min(NOBODY as u32 - 1) as u16;
            for byte in first..first + nbytes {
                if let Some(r) = self.check(byte, access, thread) {
                    return Some(r);
                }
                self.record(byte, access, thread, at);
            }
        }
        None
    }

    /// An asynchronous write into `range` issued by `thread` (a TMA load): checked as a write,
    /// then the bytes have no ordinary writer or reader left.
    pub fn async_write(&mut self, thread: u32, range: (u64, u64)) -> Option<Race> {
        let thread = thread.min(NOBODY as u32 - 1) as u16;
        self.op += 1;
        for byte in range.0 as usize..range.1 as usize {
            if let Some(r) = self.check(byte, Access::Write, thread) {
                return Some(r);
            }
            self.forget(byte);
        }
        None
    }

    /// A TMA copy issued at `loc` lands in `bytes`: the copy engine writes them.
    pub fn landed(&mut self, bytes: std::ops::Range<usize>, loc: Loc) {
        let at = self.intern(loc);
        let engine = engine_thread(self.clocks.len());
        let now = Epoch {
            thread: engine,
            clock: self.engine,
            at,
        };
        for byte in bytes {
            self.forget(byte);
            if let Some(c) = self.cell(byte) {
                c.write = now;
                c.writers = 0;
            }
        }
    }

    /// The copies landed so far complete their transactions on `bar`: a wait for the phase
    /// orders the waiting warps after them.
    pub fn engine_release(&mut self, bar: (BarrierArrayId, usize)) {
        let n = self.clocks.len();
        let b = self.bars.entry(bar).or_default();
        b.released.resize(n + 1, 0);
        b.released[n] = b.released[n].max(self.engine);
        self.engine += 1;
    }

    /// The byte has no ordinary writer or reader left.
    pub fn forget(&mut self, byte: usize) {
        let Some(page) = self.pages.get(byte / PAGE) else {
            return;
        };
        if page.is_none() {
            return;
        }
        if let Some(c) = self.cell(byte) {
            let many = c.many;
            *c = EMPTY;
            if many != 0 {
                self.many[many as usize].clear();
                self.free.push(many);
            }
        }
    }

    /// The warps of a set of threads, once each.
    fn warps_of(&self, threads: &[u32]) -> Vec<usize> {
        let mut ws: Vec<usize> = threads
            .iter()
            .map(|&t| t as usize / 32)
            .filter(|&w| w < self.clocks.len())
            .collect();
        ws.sort_unstable();
        ws.dedup();
        ws
    }

    /// The threads meet at a block or group barrier: each of their warps learns what all of
    /// them knew.
    pub fn sync(&mut self, threads: &[u32]) {
        let ws = self.warps_of(threads);
        let mut all = vec![0; self.clocks.len() + 1];
        for &w in &ws {
            join(&mut all, &self.clocks[w]);
        }
        for &w in &ws {
            self.clocks[w].clone_from(&all);
            self.clocks[w][w] += 1;
        }
    }

    /// The threads arrive on an mbarrier: what their warps did so far is released to the
    /// threads that wait for the phase.
    pub fn release(&mut self, bar: (BarrierArrayId, usize), threads: &[u32]) {
        let ws = self.warps_of(threads);
        let n = self.clocks.len();
        let b = self.bars.entry(bar).or_default();
        b.released.resize(n + 1, 0);
        for &w in &ws {
            join(&mut b.released, &self.clocks[w]);
        }
        for &w in &ws {
            self.clocks[w][w] += 1;
        }
    }

    /// The barrier's phase of parity `parity` completed.
    pub fn completed(&mut self, bar: (BarrierArrayId, usize), parity: u32) {
        let b = self.bars.entry(bar).or_default();
        b.completed[(parity & 1) as usize].clone_from(&b.released);
    }

    /// The threads' wait for the phase of parity `parity` returned: their warps learn what the
    /// phase's arrivals released.
    pub fn acquire(&mut self, bar: (BarrierArrayId, usize), parity: u32, threads: &[u32]) {
        let ws = self.warps_of(threads);
        let Some(b) = self.bars.get(&bar) else { return };
        let done = &b.completed[(parity & 1) as usize];
        for &w in &ws {
            join(&mut self.clocks[w], done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: Loc = Loc {
        file: "here.rs",
        line: 1,
        col: 1,
    };
    const THERE: Loc = Loc {
        file: "there.rs",
        line: 2,
        col: 1,
    };
    const BAR: (BarrierArrayId, usize) = (BarrierArrayId(0), 0);

    fn races() -> Races {
        Races::new(128, 4096)
    }

    #[test]
    fn a_read_of_another_warps_write_races_until_they_meet() {
        let mut r = races();
        assert!(r.accesses(Access::Write, HERE, 4, [(0, 0)]).is_none());
        let race = r.accesses(Access::Read, THERE, 2, [(40, 2)]).unwrap();
        assert_eq!((race.byte, race.thread, race.prior_thread), (2, 40, 0));
        assert_eq!((race.access, race.prior), (Access::Read, Access::Write));
        assert_eq!(race.prior_loc, HERE);
        // the same warp reads its own write; after a barrier, so does the other
        assert!(r.accesses(Access::Read, THERE, 4, [(31, 0)]).is_none());
        r.sync(&[0, 40]);
        assert!(r.accesses(Access::Read, THERE, 4, [(40, 0)]).is_none());
    }

    #[test]
    fn copies_of_an_element_written_by_one_instruction_do_not_race() {
        let mut r = races();
        assert!(r
            .accesses(Access::Write, HERE, 4, [(0, 0), (32, 0)])
            .is_none());
        // each writer reads its own copy; a third warp must meet them
        assert!(r
            .accesses(Access::Read, THERE, 4, [(0, 0), (33, 0)])
            .is_none());
        assert!(r.accesses(Access::Read, THERE, 4, [(64, 0)]).is_some());
        // another instruction's write by a warp that did not meet the first copy's races
        let race = r.accesses(Access::Write, HERE, 4, [(96, 0)]).unwrap();
        assert_eq!((race.prior, race.prior_thread), (Access::Write, 0));
    }

    #[test]
    fn bytes_next_to_a_write_do_not_race() {
        let mut r = races();
        r.accesses(Access::Write, HERE, 2, [(0, 100)]);
        assert!(r
            .accesses(Access::Read, THERE, 2, [(64, 98), (64, 102)])
            .is_none());
        assert!(r.accesses(Access::Read, THERE, 1, [(64, 101)]).is_some());
    }

    #[test]
    fn a_write_after_unordered_reads_of_several_warps_races_with_each() {
        let mut r = races();
        r.accesses(Access::Write, HERE, 1, [(0, 7)]);
        r.sync(&(0..128).collect::<Vec<_>>());
        r.accesses(Access::Read, HERE, 1, [(32, 7), (64, 7)]);
        // warp 1 met warp 3, warp 2 did not
        r.sync(&[32, 96]);
        let race = r.accesses(Access::Write, THERE, 1, [(96, 7)]).unwrap();
        assert_eq!((race.prior, race.prior_thread), (Access::Read, 64));
        r.sync(&[64, 96]);
        assert!(r.accesses(Access::Write, THERE, 1, [(96, 7)]).is_none());
    }

    #[test]
    fn a_barrier_of_some_warps_orders_only_them() {
        let mut r = races();
        r.accesses(Access::Write, HERE, 1, [(0, 0)]);
        r.sync(&[0, 32]);
        assert!(r.accesses(Access::Read, THERE, 1, [(32, 0)]).is_none());
        assert!(r.accesses(Access::Read, THERE, 1, [(64, 0)]).is_some());
    }

    #[test]
    fn an_mbarrier_orders_arrivals_before_the_wait_for_their_phase_only() {
        let mut r = races();
        r.accesses(Access::Write, HERE, 1, [(0, 0)]);
        r.release(BAR, &[0]);
        // the phase has not completed: the wait for parity 0 acquires nothing yet
        r.acquire(BAR, 0, &[64]);
        assert!(r.accesses(Access::Read, THERE, 1, [(64, 0)]).is_some());
        r.completed(BAR, 0);
        r.acquire(BAR, 0, &[96]);
        assert!(r.accesses(Access::Read, THERE, 1, [(96, 0)]).is_none());
        // a write after the arrival is not covered by it
        r.accesses(Access::Write, HERE, 1, [(0, 1)]);
        r.acquire(BAR, 0, &[96]);
        assert!(r.accesses(Access::Read, THERE, 1, [(96, 1)]).is_some());
        // the next phase (parity 1) carries it
        r.release(BAR, &[0]);
        r.completed(BAR, 1);
        r.acquire(BAR, 1, &[32]);
        assert!(r.accesses(Access::Read, THERE, 1, [(32, 1)]).is_none());
    }

    #[test]
    fn a_landed_copy_is_read_safely_after_its_phase_or_a_barrier_with_a_waiter() {
        let mut r = races();
        r.landed(0..16, HERE);
        r.engine_release(BAR);
        r.completed(BAR, 0);
        let race = r.accesses(Access::Read, THERE, 4, [(32, 0)]).unwrap();
        assert!(race.prior_engine && race.prior_loc == HERE);
        r.acquire(BAR, 0, &[0]);
        assert!(r.accesses(Access::Read, THERE, 4, [(0, 0)]).is_none());
        r.sync(&[0, 32]);
        assert!(r.accesses(Access::Read, THERE, 4, [(32, 4)]).is_none());
        // a copy that landed after the phase the waiter saw is not covered
        r.landed(0..16, HERE);
        r.engine_release(BAR);
        r.acquire(BAR, 0, &[64]);
        assert!(r.accesses(Access::Read, THERE, 4, [(64, 8)]).is_some());
    }

    #[test]
    fn an_async_write_races_with_unordered_reads_and_clears_the_bytes() {
        let mut r = races();
        r.accesses(Access::Write, HERE, 1, [(0, 10)]);
        r.sync(&[0, 32]);
        r.accesses(Access::Read, HERE, 1, [(32, 10)]);
        assert!(r.async_write(0, (8, 16)).is_some());
        r.sync(&[0, 32]);
        assert!(r.async_write(0, (8, 16)).is_none());
        // nothing left to order against
        assert!(r.accesses(Access::Read, THERE, 1, [(64, 10)]).is_none());
    }
}
