//! Publication of global writes from one block to another: the release and acquire fences a
//! cross-block handshake needs (split-K's partial counts, stream-K's flags, semaphores).
//!
//! On the GPU, a block that stores data and then signals another block with a relaxed atomic
//! must run `fence_gpu` between the stores and the signal (release), and the block that sees
//! the signal must run `fence_gpu` between the atomic that saw it and its loads of the data
//! (acquire); without either, the reader may load stale data. The interpreter's global memory
//! is sequentially consistent, so such a program computes the right result here and fails on
//! the chip now and then. This file makes the missing fence a fault instead.
//!
//! Only runs whose blocks go one after another (atomics that return old values: the only way
//! one block can see another's writes) keep the record:
//! - every instruction that writes global memory is an [`Event`] of its block, with the
//!   block's count of `fence_gpu` at the time; a [`Ledger`] keeps, per byte of each buffer, the
//!   event that wrote it last;
//! - an atomic, or a load, that reads bytes an atomic of another block wrote *sees* that
//!   signal, and every signal the signal's atomic itself continued (the release sequence of
//!   an atomic counter that several blocks increment);
//! - a load (ordinary or TMA) of bytes another block stored before a signal this block saw is
//!   checked: the writer must have fenced between the store and the signal, and this block
//!   between seeing the signal and the load.
//!
//! A fence counts for its whole block: the model does not follow which threads fenced (a
//! fence after a barrier publishes the writes of every thread that reached the barrier, and
//! kernels fence in all threads or after one). Loads of another block's stores that no seen
//! signal covers are not judged: they are not handshakes.

use super::state::{Block, Fail, GlobalWrite, R};
use crate::error::Fault;
use crate::ir::Loc;
use std::collections::HashMap;

/// An event's position in the run's [`Ledger`].
pub(crate) type EventId = u32;

/// What kind of write an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Ordinary stores (`store_global`, a TMA store): data.
    Store,
    /// An atomic: a signal other blocks can see.
    Atomic,
}

/// One execution of an instruction that writes global memory.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    /// The block that ran it.
    pub block: [i64; 3],
    /// The instruction.
    pub loc: Loc,
    /// The block's `fence_gpu` count when it ran.
    pub fences: u64,
    pub kind: Kind,
    /// For an atomic: the other blocks' atomics whose bytes it read (the signals it continues).
    pub priors: Vec<EventId>,
}

/// The run's record: every block's events, in the order blocks ran, and the last writer of
/// every byte of every buffer.
pub(crate) struct Ledger {
    events: Vec<Event>,
    /// Per argument, per byte: 1 + the event that wrote it last, 0 where no block has; empty
    /// until the buffer is first written.
    last: Vec<Vec<EventId>>,
}

impl Ledger {
    /// An empty record for a program with `args` arguments.
    pub fn new(args: usize) -> Ledger {
        Ledger {
            events: vec![],
            last: vec![vec![]; args],
        }
    }

    /// The events that last wrote bytes `byte .. byte + n` of buffer `arg`, each once.
    fn writers(&self, arg: usize, byte: usize, n: usize) -> impl Iterator<Item = EventId> + '_ {
        let bytes = self.last.get(arg).map_or(&[][..], |v| {
            let end = (byte + n).min(v.len());
            v.get(byte..end).unwrap_or(&[])
        });
        let mut prev = 0;
        bytes.iter().filter_map(move |&e| {
            let new = e != 0 && e != prev;
            prev = e;
            new.then(|| e - 1)
        })
    }

    fn event(&self, e: EventId) -> &Event {
        &self.events[e as usize]
    }

    /// Adds a finished block's events and marks the bytes its writes (`writes`, each naming
    /// one of `events` by its index there) touched; `lens` are the buffers' sizes in bytes.
    pub fn apply(&mut self, events: Vec<Event>, writes: &[GlobalWrite], lens: &[usize]) {
        let base = self.events.len() as EventId;
        self.events.extend(events);
        for w in writes {
            let a = w.arg as usize;
            let Some(v) = self.last.get_mut(a) else {
                continue;
            };
            if v.is_empty() {
                v.resize(lens.get(a).copied().unwrap_or(0), 0);
            }
            let end = (w.byte + w.nbytes as usize).min(v.len());
            if let Some(bytes) = v.get_mut(w.byte..end) {
                bytes.fill(base + w.event + 1);
            }
        }
    }
}

/// A signal a block has seen.
#[derive(Clone, Copy, Debug)]
struct Seen {
    signal: EventId,
    /// Where this block saw it, and its fence count then.
    at: Loc,
    fences: u64,
}

/// One block's side of the record.
#[derive(Default)]
pub(crate) struct Publication {
    /// `fence_gpu` instructions the block has run.
    pub fences: u64,
    /// The block's events so far, in program order (their index is their id until the block
    /// is applied to the ledger).
    pub events: Vec<Event>,
    /// Signals seen, by the block that issued them.
    seen: HashMap<[i64; 3], Vec<Seen>>,
}

impl Block<'_, '_> {
    /// Starts an event for an instruction at `loc` that writes global memory; its writes carry
    /// the returned index ([`GlobalWrite::event`]).
    pub fn event(&mut self, kind: Kind, loc: Loc) -> EventId {
        let p = &mut self.publication;
        p.events.push(Event {
            block: self.bidx,
            loc,
            fences: p.fences,
            kind,
            priors: vec![],
        });
        (p.events.len() - 1) as EventId
    }

    /// An atomic (this block's event `event`) at `at` reads bytes `byte .. byte + n` of
    /// buffer `arg`: it sees the other blocks' signals there and continues them; other blocks'
    /// stores there are judged as a load's are.
    pub fn atomic_reads(
        &mut self,
        event: EventId,
        arg: usize,
        byte: usize,
        n: usize,
        at: Loc,
    ) -> R<()> {
        let Some(ledger) = self.ledger else {
            return Ok(());
        };
        for e in ledger.writers(arg, byte, n) {
            let ev = ledger.event(e);
            if ev.block == self.bidx {
                continue;
            }
            if ev.kind == Kind::Store {
                self.judge(ledger, e, (arg, byte), at, "an atomic reads")?;
                continue;
            }
            self.see(ledger, e, at);
            let priors = &mut self.publication.events[event as usize].priors;
            if !priors.contains(&e) {
                priors.push(e);
            }
        }
        Ok(())
    }

    /// Records signal `signal` as seen at `at`, with every signal it continued.
    fn see(&mut self, ledger: &Ledger, signal: EventId, at: Loc) {
        let fences = self.publication.fences;
        let mut stack = vec![signal];
        let mut visited = std::collections::HashSet::new();
        while let Some(s) = stack.pop() {
            if !visited.insert(s) {
                continue;
            }
            let ev = ledger.event(s);
            if ev.kind != Kind::Atomic {
                continue;
            }
            let list = self.publication.seen.entry(ev.block).or_default();
            if !list.iter().any(|x| x.signal == s && x.fences == fences) {
                list.push(Seen {
                    signal: s,
                    at,
                    fences,
                });
            }
            stack.extend(ev.priors.iter().copied());
        }
    }

    /// A load at `loc` reads bytes `byte .. byte + n` of buffer `arg` (`what` names the access
    /// for messages): another block's stores there must have been published to this block by
    /// a signal it saw, with the fences on both sides.
    pub fn check_published(
        &mut self,
        arg: usize,
        byte: usize,
        n: usize,
        loc: Loc,
        what: &str,
    ) -> R<()> {
        let Some(ledger) = self.ledger else {
            return Ok(());
        };
        for d in ledger.writers(arg, byte, n) {
            let data = ledger.event(d);
            if data.block == self.bidx {
                continue;
            }
            if data.kind == Kind::Atomic {
                // a load of a flag: it sees the signal as an atomic would
                self.see(ledger, d, loc);
                continue;
            }
            self.judge(ledger, d, (arg, byte), loc, what)?;
        }
        Ok(())
    }

    /// A read at `loc` of bytes another block stored (event `d`) at `(arg, byte)`: fine
    /// unless a signal this block saw covers the store without both fences.
    fn judge(
        &self,
        ledger: &Ledger,
        d: EventId,
        (arg, byte): (usize, usize),
        loc: Loc,
        what: &str,
    ) -> R<()> {
        let data = ledger.event(d);
        let Some(seen) = self.publication.seen.get(&data.block) else {
            return Ok(());
        };
        // the signals issued after the store, and whether each was released (a fence between
        // the store and it)
        let after: Vec<(&Seen, bool)> = seen
            .iter()
            .filter(|s| s.signal > d)
            .map(|s| (s, ledger.event(s.signal).fences > data.fences))
            .collect();
        let acquired = |s: &Seen| self.publication.fences > s.fences;
        if after.is_empty() || after.iter().any(|(s, released)| *released && acquired(s)) {
            return Ok(());
        }
        let buffer = self.arg_name(arg);
        if let Some((s, _)) = after.iter().find(|(_, released)| *released) {
            let signal = ledger.event(s.signal);
            return Err(Fail::new(
                Fault::MissingAcquireFence,
                loc,
                format!(
                    "{what} `{buffer}` (byte {byte}) that block {:?} stored and published, with \
                     no `fence_gpu` since this block saw the signal: add `fence_gpu()` after \
                     the atomic that sees it (acquire), or the read may return stale data on \
                     the GPU",
                    data.block
                ),
            )
            .note(s.at, "where this block saw the signal")
            .note(
                signal.loc,
                format!("the signal, by block {:?}", signal.block),
            )
            .note(data.loc, format!("the store, by block {:?}", data.block)));
        }
        let s = after[0].0;
        let signal = ledger.event(s.signal);
        Err(Fail::new(
            Fault::MissingReleaseFence,
            signal.loc,
            format!(
                "block {:?} signals here over global writes that no `fence_gpu` has published: \
                 another block sees the signal and then reads `{buffer}` (byte {byte}), which \
                 may still be stale on the GPU; add `fence_gpu()` between the stores and this \
                 atomic (release)",
                signal.block
            ),
        )
        .note(data.loc, format!("the store, by block {:?}", data.block))
        .note(s.at, format!("block {:?} sees the signal here", self.bidx))
        .note(loc, format!("and reads what was stored here ({what})")))
    }

    fn arg_name(&self, arg: usize) -> String {
        self.program()
            .params
            .get(arg)
            .map_or_else(|| format!("arg{arg}"), |p| p.name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writers of a range are each event once, in order, skipping bytes no one wrote
    /// (stored as 0, events as their id + 1).
    #[test]
    fn writers_name_each_event_once_and_skip_unwritten_bytes() {
        let mut l = Ledger::new(2);
        l.last[1] = vec![0, 3, 3, 0, 0, 5, 5, 3, 0];
        let all: Vec<EventId> = l.writers(1, 0, 9).collect();
        assert_eq!(all, vec![2, 4, 2]);
        // a range that starts inside a run, and one past the buffer's end
        assert_eq!(l.writers(1, 2, 2).collect::<Vec<_>>(), vec![2]);
        assert_eq!(l.writers(1, 6, 100).collect::<Vec<_>>(), vec![4, 2]);
        assert_eq!(l.writers(0, 0, 4).count(), 0);
    }
}
