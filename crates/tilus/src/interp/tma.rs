//! TMA copies as `codegen/tma.rs` emits them, with the copy engine's timing made explicit.
//! A load records a pending copy; the scheduler lands it later (when nothing else can run),
//! writing the box into the tile through its swizzle, zeros for elements outside the view, and
//! delivering the box's bytes on the barrier's transaction count. A store joins the issuing
//! thread's bulk group and writes global memory when a `wait_group` covers it, reading the
//! tile as it is then (a write to the tile before that wait is a fault, `hazards.rs`).

use super::barrier::{complete_tx, resolve};
use super::hazards;
use super::publication::Kind;
use super::races::Access;
use super::region::Placed;
use super::state::{
    read_bits, write_bits, Block, CopyIn, Fail, GlobalWrite, Remote, RemoteCopy, Retire, Touch,
    Work, WriteOp, R,
};
use super::task::{value, values, Step, Task};
use super::views;
use crate::error::Fault;
use crate::ir::facts::{AsyncGroup, ThreadScope};
use crate::ir::{Facts, GlobalId, Loc, TmaInst};

/// A TMA load (its data in `state.rs`, so that blocks can carry shares of it to each other)
/// completes by landing.
impl Work for CopyIn {
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()> {
        land(b, *self)
    }
}

/// Puts a copy in flight in block `b`, its bytes due on `b`'s barrier (`name`, `label`: how
/// diagnostics call it).
fn put_in_flight(
    b: &mut Block<'_, '_>,
    mut copy: CopyIn,
    touches: Vec<Touch>,
    (name, label): (&'static str, &'static str),
) {
    copy.issue_phase = b.bar_phases(copy.bar.0, copy.bar.1);
    let retire = Retire::Barrier {
        bar: copy.bar,
        issue_phase: copy.issue_phase,
    };
    let loc = copy.loc;
    hazards::issue(b, name, label, loc, touches, vec![], retire, Box::new(copy));
    b.stats.tma_copies += 1;
}

/// The receiving block takes a multicast copy's share in flight, as if it had issued it: it
/// lands when nothing else can run there, on that block's barrier.
pub(crate) fn receive(b: &mut Block<'_, '_>, c: RemoteCopy) {
    let names = ("tma.global_to_shared_multicast", "a multicast TMA copy");
    put_in_flight(b, c.copy, c.touches, names);
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
            multicast,
            ..
        } => {
            let (a, idx) = resolve(b, task, bar, i.name(), loc)?;
            let coords = values(b, task, offsets, loc)?;
            let shape = values(b, task, &b.program().global(*src).shape, loc)?;
            let dst = views::place(b, task, dst, i.name(), loc)?;
            let issuer = task.threads.first().copied().unwrap_or(0);
            if let Some(race) = b.races.async_write(issuer, dst.range) {
                let tile = views::label(b, dst.tensor, dst.stage);
                return Err(race.fail(i.name(), &tile, loc));
            }
            let touches = hazards::touches(b, task, facts, i.name(), loc)?;
            let strides = values(b, task, &b.program().global(*src).strides, loc)?;
            // one copy per thread, or per warp where a warp elects its issuing lane (the
            // verifier allows one thread or one warp)
            let issuers = match facts.scope {
                ThreadScope::OneOrWarp => task.threads.len().div_ceil(32),
                _ => task.threads.len(),
            };
            // the blocks that receive the box: this one, or those of a multicast's mask
            let (own, size) = b.cluster_rank();
            let ranks: Vec<usize> = match multicast {
                None => vec![own],
                Some(m) => {
                    let mask = value(b, task, m, loc)? as u64 & 0xffff;
                    if let Some(r) = (size..16).find(|r| mask >> r & 1 == 1) {
                        return Err(Fail::new(
                            Fault::Invalid,
                            loc,
                            format!(
                                "tma.global_to_shared_multicast to the block of rank {r} (mask \
                                 0x{mask:x}): the cluster has {size} block(s)"
                            ),
                        ));
                    }
                    (0..size).filter(|r| mask >> r & 1 == 1).collect()
                }
            };
            let copy = CopyIn {
                src: *src,
                dst,
                coords,
                shape,
                strides,
                bar: (a, idx),
                loc,
                issue_phase: 0,
            };
            for &rank in ranks.iter().filter(|&&r| r != own) {
                for _ in 0..issuers {
                    let share = RemoteCopy {
                        copy: copy.clone(),
                        touches: touches.clone(),
                    };
                    b.outbox.push(Remote::Copy {
                        rank,
                        copy: Box::new(share),
                    });
                }
            }
            let local = if ranks.contains(&own) { issuers } else { 0 };
            for _ in 0..local {
                put_in_flight(b, copy.clone(), touches.clone(), (i.name(), "a TMA copy"));
            }
            Ok(Step::Next)
        }
        TmaInst::SharedToGlobal {
            src, dst, offsets, ..
        } => {
            let coords = values(b, task, offsets, loc)?;
            let shape = values(b, task, &b.program().global(*dst).shape, loc)?;
            let src = views::place(b, task, src, i.name(), loc)?;
            let issuer = task.threads.first().copied().unwrap_or(0);
            let bytes = (src.range.0 as usize..src.range.1 as usize).map(|at| (issuer, at));
            if let Some(race) = b.races.accesses(Access::Read, loc, 1, bytes) {
                let tile = views::label(b, src.tensor, src.stage);
                return Err(race.fail(i.name(), &tile, loc));
            }
            let touches = hazards::touches(b, task, facts, i.name(), loc)?;
            let strides = values(b, task, &b.program().global(*dst).strides, loc)?;
            for (owner, threads) in hazards::owners(task, AsyncGroup::Bulk) {
                let work = CopyOut {
                    src: src.clone(),
                    dst: *dst,
                    coords: coords.clone(),
                    shape: shape.clone(),
                    strides: strides.clone(),
                    loc,
                };
                let retire = Retire::Group {
                    kind: AsyncGroup::Bulk,
                    owner,
                    group: None,
                };
                hazards::issue(
                    b,
                    i.name(),
                    "a TMA store",
                    loc,
                    touches.clone(),
                    threads,
                    retire,
                    Box::new(work),
                );
                b.stats.tma_copies += 1;
            }
            Ok(Step::Next)
        }
        TmaInst::CommitGroup => {
            hazards::commit(b, task, AsyncGroup::Bulk);
            Ok(Step::Next)
        }
        TmaInst::WaitGroup { pending, read } => {
            hazards::wait(b, task, AsyncGroup::Bulk, *pending, *read)?;
            Ok(Step::Next)
        }
    }
}

/// A TMA store in flight: the tile (or stage) and the box of the view it goes to.
struct CopyOut {
    src: Placed,
    dst: GlobalId,
    /// Coordinates of the box's first element in the view.
    coords: Vec<i64>,
    /// The view's extents when the store was issued.
    shape: Vec<i64>,
    /// The view's strides when the store was issued.
    strides: Vec<i64>,
    loc: Loc,
}

impl Work for CopyOut {
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()> {
        store(b, *self)
    }
}

/// The store completes: the tile's elements inside the view go to the block's global writes.
fn store(b: &mut Block<'_, '_>, c: CopyOut) -> R<()> {
    let p = b.program();
    let g = p.global(c.dst);
    let tile = views::label(b, c.src.tensor, c.src.stage);
    let loc = c.loc;
    let layout = &c.src.layout;
    let tile_shape = boxed(&c.src.shape, c.shape.len());
    let rank = tile_shape.len();
    if c.coords.len() != rank || c.shape.len() != rank {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "tma.shared_to_global: tile `{tile}` has {rank} dimensions, view `{}` {} and the \
                 offsets {}",
                g.name,
                c.shape.len(),
                c.coords.len()
            ),
        ));
    }
    let (arg, buf) = b.view_buffer(c.dst, loc)?;
    let (off, _) = c.src.range;
    let eb = g.dtype.nbytes() as usize;
    let event = b.event(Kind::Store, loc);
    walk_box(
        &tile_shape,
        &c.coords,
        &c.shape,
        &c.strides,
        |lin, inside| {
            let Some((gc, flat)) = inside else {
                return Ok(());
            };
            let byte = flat as usize * eb;
            if byte + eb > buf.bytes.len() {
                return Err(Fail::new(
                    Fault::GlobalOutOfBounds,
                    loc,
                    format!(
                    "out-of-bounds global write: tma.shared_to_global writes element {gc:?} of \
                     view `{}` {:?}, which is element {flat} of a buffer of {} elements (the \
                     view is larger than the buffer)",
                    g.name,
                    c.shape,
                    buf.bytes.len() / eb
                ),
                ));
            }
            let at = off as usize + layout.linear_byte_offset(lin) as usize;
            if at + eb > b.smem.len() {
                return Err(Fail::new(
                    Fault::SharedOutOfBounds,
                    loc,
                    format!(
                    "tma.shared_to_global: element {lin} of tile `{tile}` is at byte {at}, beyond \
                     the block's {} bytes of shared memory",
                    b.smem.len()
                ),
                ));
            }
            let bits = read_bits(&b.smem, at, g.dtype);
            b.write_global(GlobalWrite {
                arg: arg as u32,
                byte,
                bits,
                nbytes: eb as u8,
                op: WriteOp::Store,
                event,
            });
            Ok(())
        },
    )?;
    Ok(())
}

/// The copy engine finishes a copy: bytes into the tile, then `complete_tx` on the barrier.
fn land(b: &mut Block<'_, '_>, c: CopyIn) -> R<()> {
    let p = b.program();
    let g = p.global(c.src);
    let tile = views::label(b, c.dst.tensor, c.dst.stage);
    let loc = c.loc;
    let layout = &c.dst.layout;
    let (off, end) = c.dst.range;
    if end > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "tma.global_to_shared writes `{tile}` at bytes {off}..{end}, beyond the block's {} \
                 bytes of shared memory",
                b.smem.len()
            ),
        ));
    }
    let tile_shape = boxed(&c.dst.shape, c.shape.len());
    let rank = tile_shape.len();
    if c.coords.len() != rank || c.shape.len() != rank {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "tma.global_to_shared: view `{}` has {} dimensions, tile `{tile}` {rank} and the \
                 offsets {}",
                g.name,
                c.shape.len(),
                c.coords.len()
            ),
        ));
    }
    let (arg, buf) = b.view_buffer(c.src, loc)?;
    let eb = g.dtype.nbytes() as usize;
    walk_box(
        &tile_shape,
        &c.coords,
        &c.shape,
        &c.strides,
        |lin, inside| {
            let bits = match inside {
                Some((gc, flat)) => {
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
                    b.check_published(arg, byte, eb, loc, "tma.global_to_shared reads")?;
                    read_bits(buf.bytes, byte, g.dtype)
                }
                None => 0,
            };
            let at = off as usize + layout.linear_byte_offset(lin) as usize;
            if at + eb > b.smem.len() {
                return Err(Fail::new(
                Fault::SharedOutOfBounds,
                loc,
                format!(
                    "tma.global_to_shared: element {lin} of tile `{tile}` lands at byte {at}, beyond \
                     the block's {} bytes of shared memory",
                    b.smem.len()
                ),
            ));
            }
            write_bits(&mut b.smem, at, bits, eb);
            b.races.landed(at..at + eb, loc);
            Ok(())
        },
    )?;
    let bytes = c.dst.shape.iter().product::<i64>() * eb as i64;
    let (a, i) = c.bar;
    b.races.engine_release(c.bar);
    let phase = b.bar_phases(a, i);
    if let Some(m) = b.bar_meta(a, i) {
        m.last_copy = Some((phase, loc));
    }
    complete_tx(b, a, i, bytes, c.issue_phase, loc)?;
    Ok(())
}

/// The box of a tile copied to or from a view of `view_rank` dimensions: the tile's shape,
/// one element deep in the leading dimensions of the view it leaves out.
fn boxed(tile: &[i64], view_rank: usize) -> Vec<i64> {
    let mut b = vec![1; view_rank.saturating_sub(tile.len())];
    b.extend_from_slice(tile);
    b
}

/// Walks the elements of a TMA box: the tile's elements in row-major order, each with its
/// linear index in the tile and, when it lies inside the view, its coordinates in the view
/// (the box placed at `origin`) and its element offset there (the view's strides times its
/// coordinates).
fn walk_box(
    tile: &[i64],
    origin: &[i64],
    view: &[i64],
    st: &[i64],
    mut f: impl FnMut(i64, Option<(&[i64], i64)>) -> R<()>,
) -> R<()> {
    let rank = tile.len();
    let total: i64 = tile.iter().product();
    let mut idx = vec![0i64; rank];
    let mut gc = vec![0i64; rank];
    for lin in 0..total.max(0) {
        let mut inside = true;
        for d in 0..rank {
            gc[d] = origin[d] + idx[d];
            inside &= gc[d] >= 0 && gc[d] < view[d];
        }
        let flat: i64 = gc.iter().zip(st).map(|(x, s)| x * s).sum();
        f(lin, inside.then_some((&gc[..], flat)))?;
        // next element, innermost dimension fastest
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < tile[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}
