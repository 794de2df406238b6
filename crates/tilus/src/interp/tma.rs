//! TMA copies as `codegen/tma.rs` emits them, with the copy engine's timing made explicit:
//! issuing records a pending copy; the scheduler lands it later (when nothing else can run),
//! writing the box into the tile through its swizzle, zeros for elements outside the view, and
//! delivering the box's bytes on the barrier's transaction count.

use super::barrier::{complete_tx, resolve};
use super::hazards;
use super::state::{read_bits, strides, write_bits, Block, Fail, Retire, Work, R};
use super::task::{values, Step, Task};
use crate::error::Fault;
use crate::ir::{BarrierArrayId, Facts, GlobalId, Loc, SharedId, TmaInst};

/// A TMA load in flight: the box to copy and the barrier its bytes complete on.
struct CopyIn {
    src: GlobalId,
    dst: SharedId,
    /// Coordinates of the box's first element in the view.
    coords: Vec<i64>,
    /// The view's extents when the copy was issued.
    shape: Vec<i64>,
    bar: (BarrierArrayId, usize),
    loc: Loc,
    /// The barrier's completed phases when the copy was issued.
    issue_phase: u64,
}

impl Work for CopyIn {
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()> {
        land(b, *self)
    }
}

pub(crate) fn exec(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &TmaInst,
    facts: &Facts<'_>,
    loc: Loc,
) -> R<Step> {
    match i {
        TmaInst::GlobalToShared {
            src,
            dst,
            offsets,
            bar,
            ..
        } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let coords = values(b, task, offsets, loc)?;
            let shape = values(b, task, &b.program().global(*src).shape, loc)?;
            let issue_phase = b.bar_phases(a, idx);
            // every thread of the group issues its own copy (the verifier allows one thread)
            for _ in &task.threads {
                let work = CopyIn {
                    src: *src,
                    dst: *dst,
                    coords: coords.clone(),
                    shape: shape.clone(),
                    bar: (a, idx),
                    loc,
                    issue_phase,
                };
                let retire = Retire::Barrier {
                    bar: (a, idx),
                    issue_phase,
                };
                hazards::issue(
                    b,
                    i.name(),
                    "a TMA copy",
                    loc,
                    hazards::touches(facts),
                    vec![],
                    retire,
                    Box::new(work),
                );
                b.stats.tma_copies += 1;
            }
            Ok(Step::Next)
        }
    }
}

/// The copy engine finishes a copy: bytes into the tile, then `complete_tx` on the barrier.
fn land(b: &mut Block<'_, '_>, c: CopyIn) -> R<()> {
    let p = b.program();
    let g = p.global(c.src);
    let d = p.shared(c.dst);
    let loc = c.loc;
    let Some(layout) = d.layout.as_ref() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!("shared tensor `{}` has no layout", d.name),
        ));
    };
    let (off, end) = b.tile_range(c.dst);
    if end > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "tma.global_to_shared writes `{}` at bytes {off}..{end}, beyond the block's {} \
                 bytes of shared memory",
                d.name,
                b.smem.len()
            ),
        ));
    }
    let rank = d.shape.len();
    if c.coords.len() != rank || c.shape.len() != rank {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "tma.global_to_shared: view `{}` has {} dimensions, tile `{}` {rank} and the \
                 offsets {}",
                g.name,
                c.shape.len(),
                d.name,
                c.coords.len()
            ),
        ));
    }
    let buf =
        b.prep.global_arg[c.src.0 as usize].and_then(|arg| b.bufs.get(arg).copied().flatten());
    let Some(buf) = buf else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!("no buffer was passed for the pointer of view `{}`", g.name),
        ));
    };
    let eb = g.dtype.nbytes() as usize;
    let st = strides(&c.shape);
    let total: i64 = d.shape.iter().product();
    let mut idx = vec![0i64; rank];
    let mut gc = vec![0i64; rank];
    for lin in 0..total.max(0) as usize {
        let mut inside = true;
        for dd in 0..rank {
            gc[dd] = c.coords[dd] + idx[dd];
            inside &= gc[dd] >= 0 && gc[dd] < c.shape[dd];
        }
        let bits = if inside {
            let flat: i64 = gc.iter().zip(&st).map(|(x, s)| x * s).sum();
            let byte = flat as usize * eb;
            if byte + eb > buf.bytes.len() {
                return Err(Fail::new(
                    Fault::GlobalOutOfBounds,
                    loc,
                    format!(
                        "out-of-bounds global read: tma.global_to_shared reads element {gc:?} of \
                         view `{}` {:?}, which is element {flat} of a buffer of {} elements \
                         (the view is larger than the buffer)",
                        g.name,
                        c.shape,
                        buf.bytes.len() / eb
                    ),
                ));
            }
            read_bits(buf.bytes, byte, g.dtype)
        } else {
            0
        };
        let at = off as usize + layout.linear_byte_offset(lin as i64) as usize;
        if at + eb > b.smem.len() {
            return Err(Fail::new(
                Fault::SharedOutOfBounds,
                loc,
                format!(
                    "tma.global_to_shared: element {lin} of tile `{}` lands at byte {at}, beyond \
                     the block's {} bytes of shared memory",
                    d.name,
                    b.smem.len()
                ),
            ));
        }
        write_bits(&mut b.smem, at, bits, eb);
        // next element, innermost dimension fastest
        for dd in (0..rank).rev() {
            idx[dd] += 1;
            if idx[dd] < d.shape[dd] {
                break;
            }
            idx[dd] = 0;
        }
    }
    let bytes = d.nbytes() as i64;
    let (a, i) = c.bar;
    complete_tx(b, a, i, bytes, c.issue_phase, loc)?;
    Ok(())
}
