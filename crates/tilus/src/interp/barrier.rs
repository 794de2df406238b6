//! mbarriers as state in shared memory. Each barrier's state lives in its 8 planned bytes (so a
//! tile written over a barrier really corrupts it): the pending arrival count, the expected
//! count, the transaction count and the phase parity. A phase completes when its arrivals are
//! all in and the transaction count is back to zero; `wait(bar, parity)` returns once the
//! phase with that parity has completed (`mbarrier.try_wait.parity`: the barrier's current
//! parity differs from `parity`). The mbarrier family's instructions and every asynchronous
//! copy that completes transactions use these.

use super::state::{read_bits, write_bits, Block, Fail, R};
use super::task::{value, Task};
use crate::error::Fault;
use crate::ir::{BarrierArrayId, BarrierRef, DType, Loc};

/// The decoded 8 bytes of a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BarState {
    /// Arrivals still expected in the current phase.
    pub pending: u32,
    /// Arrivals expected per phase.
    pub count: u32,
    /// Transaction bytes still expected (negative: delivered before they were declared).
    pub tx: i64,
    /// Parity of the current (incomplete) phase.
    pub phase: u32,
}

const BITS20: u64 = (1 << 20) - 1;
const TX_BITS: u32 = 22;
const TX_MASK: u64 = (1 << TX_BITS) - 1;
/// Largest transaction count the encoding holds (the hardware's is 2^20 - 1).
const TX_LIMIT: i64 = 1 << (TX_BITS - 1);

impl BarState {
    fn decode(v: u64) -> BarState {
        let raw = (v >> 40) & TX_MASK;
        let tx = ((raw << (64 - TX_BITS)) as i64) >> (64 - TX_BITS);
        BarState {
            pending: (v & BITS20) as u32,
            count: ((v >> 20) & BITS20) as u32,
            tx,
            phase: ((v >> 62) & 1) as u32,
        }
    }

    fn encode(&self) -> u64 {
        (self.pending as u64 & BITS20)
            | ((self.count as u64 & BITS20) << 20)
            | (((self.tx as u64) & TX_MASK) << 40)
            | ((self.phase as u64 & 1) << 62)
    }
}

/// The state of barrier `i` of an array, read from shared memory.
pub(crate) fn state(b: &Block<'_, '_>, a: BarrierArrayId, i: usize) -> BarState {
    let off = b.bar_offset(a, i);
    if off + 8 > b.smem.len() {
        return BarState {
            pending: 0,
            count: 0,
            tx: 0,
            phase: 0,
        };
    }
    BarState::decode(read_bits(&b.smem, off, DType::U64))
}

pub(crate) fn store(b: &mut Block<'_, '_>, a: BarrierArrayId, i: usize, s: BarState) {
    let off = b.bar_offset(a, i);
    if off + 8 <= b.smem.len() {
        write_bits(&mut b.smem, off, s.encode(), 8);
    }
}

/// Whether the phase with parity `parity` has completed (the wait would return).
pub(crate) fn phase_completed(b: &Block<'_, '_>, a: BarrierArrayId, i: usize, parity: u32) -> bool {
    state(b, a, i).phase != (parity & 1)
}

/// Resolves a barrier reference: the array must be allocated and the index in range.
pub(crate) fn resolve(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    r: &BarrierRef,
    what: &str,
    loc: Loc,
) -> R<(BarrierArrayId, usize)> {
    let p = b.program();
    let d = p.barrier(r.array);
    let i = value(b, task, &r.index, loc)?;
    if i < 0 || i as usize >= d.counts.len() {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{what}: barrier index {i} is out of range: `{}` has {} barrier(s)",
                d.name,
                d.counts.len()
            ),
        ));
    }
    if b.bars[r.array.0 as usize].is_none() {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{what}: barrier `{}` is used before its mbarrier.alloc ran",
                d.name
            ),
        )
        .note(d.loc, "it is allocated here"));
    }
    Ok((r.array, i as usize))
}

/// One arrival, raising the transaction count by `tx` first (`arrive.expect_tx`).
pub(crate) fn arrive(
    b: &mut Block<'_, '_>,
    a: BarrierArrayId,
    i: usize,
    tx: i64,
    loc: Loc,
) -> R<()> {
    let mut s = state(b, a, i);
    s.tx += tx;
    if let Some(m) = b.bar_meta(a, i) {
        if tx != 0 {
            m.expects.push((loc, tx));
        }
        m.arrivals.push(loc);
    }
    if s.pending == 0 {
        // a barrier whose bytes were overwritten (or never initialized) has no arrivals left
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "arrival on barrier `{}`, whose state in shared memory shows no pending arrival: \
                 its bytes were overwritten or it was never initialized",
                b.bar_name(a, i)
            ),
        ));
    }
    s.pending -= 1;
    check_range(b, a, i, s, loc)?;
    settle(b, a, i, s, loc)
}

fn check_range(b: &Block<'_, '_>, a: BarrierArrayId, i: usize, s: BarState, loc: Loc) -> R<()> {
    if s.tx >= TX_LIMIT || s.tx <= -TX_LIMIT {
        return Err(Fail::new(
            Fault::TxExceeded,
            loc,
            format!(
                "the transaction count of barrier `{}` reached {} bytes, outside the range an \
                 mbarrier holds",
                b.bar_name(a, i),
                s.tx
            ),
        ));
    }
    Ok(())
}

/// Stores a new state, completing the phase when its arrivals and bytes are all in.
fn settle(b: &mut Block<'_, '_>, a: BarrierArrayId, i: usize, mut s: BarState, loc: Loc) -> R<()> {
    if s.pending == 0 && s.tx < 0 {
        let meta = b.bars[a.0 as usize]
            .as_ref()
            .and_then(|m| m.get(i))
            .cloned()
            .unwrap_or_default();
        let declared: i64 = meta.expects.iter().map(|(_, n)| n).sum();
        let mut f = Fail::new(
            Fault::TxExceeded,
            loc,
            format!(
                "transaction count exceeded: barrier `{}` received {} more byte(s) than \
                 arrive_and_expect_tx declared ({declared}) for the current phase",
                b.bar_name(a, i),
                -s.tx
            ),
        );
        for (l, n) in &meta.expects {
            f = f.note(
                *l,
                format!("arrive_and_expect_tx declared {n} byte(s) here"),
            );
        }
        return Err(f);
    }
    if s.pending == 0 && s.tx == 0 {
        b.races.completed((a, i), s.phase);
        s.phase ^= 1;
        s.pending = s.count;
        if let Some(m) = b.bar_meta(a, i) {
            m.phases += 1;
            m.prev_expects = std::mem::take(&mut m.expects);
            m.arrivals.clear();
            m.delivered = 0;
        }
    }
    store(b, a, i, s);
    Ok(())
}

/// The copy engine delivers `bytes` on a barrier (`complete_tx`); `issue_phase` is the phase the
/// copy was issued in.
pub(crate) fn complete_tx(
    b: &mut Block<'_, '_>,
    a: BarrierArrayId,
    i: usize,
    bytes: i64,
    issue_phase: u64,
    loc: Loc,
) -> R<()> {
    let phases = b.bar_phases(a, i);
    if phases != issue_phase {
        let meta = b.bars[a.0 as usize]
            .as_ref()
            .and_then(|m| m.get(i))
            .cloned()
            .unwrap_or_default();
        let mut f = Fail::new(
            Fault::TxExceeded,
            loc,
            format!(
                "transaction count exceeded: this TMA copy's {bytes} byte(s) arrive on barrier \
                 `{}` after the phase it was issued in already completed (the bytes \
                 arrive_and_expect_tx declared were met without it), so they would count toward \
                 a later phase",
                b.bar_name(a, i)
            ),
        );
        if phases == issue_phase + 1 {
            for (l, n) in &meta.prev_expects {
                f = f.note(
                    *l,
                    format!("arrive_and_expect_tx declared {n} byte(s) here for that phase"),
                );
            }
        }
        return Err(f);
    }
    let mut s = state(b, a, i);
    s.tx -= bytes;
    if let Some(m) = b.bar_meta(a, i) {
        m.delivered += bytes;
    }
    check_range(b, a, i, s, loc)?;
    settle(b, a, i, s, loc)
}

#[cfg(test)]
mod tests {
    use super::BarState;

    #[test]
    fn barrier_state_round_trips_through_its_eight_bytes() {
        for s in [
            BarState {
                pending: 1,
                count: 1,
                tx: 0,
                phase: 0,
            },
            BarState {
                pending: 0,
                count: (1 << 20) - 1,
                tx: -24576,
                phase: 1,
            },
            BarState {
                pending: 127,
                count: 128,
                tx: (1 << 20) - 1,
                phase: 1,
            },
        ] {
            assert_eq!(BarState::decode(s.encode()), s);
        }
    }
}
