//! Copies by threads (`copy_async`) as `codegen/cp_async.rs` emits them: each thread reads its
//! vectors of the box when it issues the copy (zeros outside the view) and the bytes land in
//! shared memory when a `copy_async_wait_group` of that thread covers its group. Until then the
//! tile is in flight: using it is a read before the wait, and a block that ends with a copy in
//! flight never waited (`hazards.rs`). Groups are kept per warp (the threads of a warp issue,
//! commit and wait together in a tile program).
//!
//! The landing bytes are ordinary writes of the issuing threads, checked by the race detector
//! when they land: another warp reading them needs a barrier after the wait (the wait only
//! covers the waiting thread's own copies), and the async proxy needs a `fence_proxy_async`
//! after it.

use super::hazards;
use super::memory::{check_aligned, planned_width, whole_vector, View};
use super::races::Access;
use super::state::{write_bits, Block, Dirty, Fail, Retire, Work, R};
use super::task::{values, Step, Task};
use super::views;
use crate::error::Fault;
use crate::ir::facts::AsyncGroup;
use crate::ir::{CpAsyncInst, Facts, Loc, SharedId};

/// One warp's share of a copy in flight: the bytes it writes when it lands.
struct Landing {
    /// `(thread, byte in the region, bits)` per element.
    writes: Vec<(u32, usize, u64)>,
    /// Bytes per element.
    elem: usize,
    tensor: SharedId,
    /// The bytes of the tile (or stage) the copy covers, for the proxy-fence record.
    range: (u64, u64),
    stage: Option<i64>,
    loc: Loc,
}

impl Work for Landing {
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()> {
        let each = self.writes.iter().map(|&(t, at, _)| (t, at));
        if let Some(race) = b.races.accesses(Access::Write, self.loc, self.elem, each) {
            let tile = views::label(b, self.tensor, self.stage);
            return Err(race.fail("copy_async", &tile, self.loc));
        }
        for &(_, at, bits) in &self.writes {
            write_bits(&mut b.smem, at, bits, self.elem);
        }
        // ordinary stores: the async proxy sees them after the writers fence
        let threads = self.writes.iter().map(|&(t, _, _)| t).collect();
        b.proxy_dirty[self.tensor.0 as usize].push(Dirty {
            bytes: self.range,
            loc: self.loc,
            writer: "copy_async",
            threads,
        });
        Ok(())
    }
}

pub(crate) fn exec(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &CpAsyncInst,
    facts: &Facts<'_>,
    loc: Loc,
) -> R<Step> {
    let kind = AsyncGroup::CpAsync;
    match i {
        CpAsyncInst::Copy {
            src,
            dst,
            offsets,
            vector,
            ..
        } => issue(b, task, i, (*src, dst, offsets, *vector), facts, loc)?,
        CpAsyncInst::Commit => hazards::commit(b, task, kind),
        CpAsyncInst::Wait { pending } => hazards::wait(b, task, kind, *pending, false)?,
    }
    Ok(Step::Next)
}

/// The operands of a copy.
type CopyOperands<'i> = (
    crate::ir::GlobalId,
    &'i crate::ir::SharedView,
    &'i [crate::ir::Expr],
    Option<u32>,
);

fn issue(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    i: &CpAsyncInst,
    (src, dst, offsets, vector): CopyOperands<'_>,
    facts: &Facts<'_>,
    loc: Loc,
) -> R<()> {
    let name = i.name();
    let p = b.program();
    let layout = i.layout(p).expect("a copy has a layout");
    let width = planned_width(name, vector, loc)?;
    let view = View::new(b, task, src, loc)?;
    let offs = values(b, task, offsets, loc)?;
    if offs.len() != view.shape.len() || layout.rank() != view.shape.len() {
        let msg = format!(
            "{name}: view `{}` has {} dimensions, the tile {} and the offsets {}",
            view.name,
            view.shape.len(),
            layout.rank(),
            offs.len()
        );
        return Err(Fail::new(Fault::Invalid, loc, msg));
    }
    let placed = views::place(b, task, dst, name, loc)?;
    if placed.range.1 > b.smem.len() as u64 {
        let msg = format!(
            "{name} writes `{}` at bytes {}..{}, beyond the block's shared memory",
            views::label(b, dst.tensor, placed.stage),
            placed.range.0,
            placed.range.1
        );
        return Err(Fail::new(Fault::SharedOutOfBounds, loc, msg));
    }
    let elem = view.eb();
    let (ls, nthreads) = (layout.local_size(), layout.num_threads());
    let base = task.base();
    let mut writes: Vec<(u32, usize, u64)> = vec![];
    for &t in &task.threads {
        let ti = i64::from(t.saturating_sub(base));
        // threads past the layout, and replicated copies, copy nothing
        if ti >= nthreads || !layout.is_first_copy(ti) {
            continue;
        }
        for first in (0..ls).step_by(width) {
            let at = |l: i64| -> Vec<i64> {
                let c = layout.coords(ti, l);
                c.iter().zip(&offs).map(|(x, o)| x + o).collect()
            };
            let g0 = at(first);
            if whole_vector(&view, &g0, width) {
                check_aligned(name, &view, view.flat(&g0).unwrap_or(0), width, loc)?;
            }
            for l in first..first + width as i64 {
                let g = at(l);
                let bits = match view.flat(&g) {
                    Some(flat) => {
                        let byte = view.byte(&g, flat, "copy_async reads", t, loc)?;
                        b.check_published(view.arg, byte, elem, loc, "copy_async reads")?;
                        b.read_global(view.arg, byte, elem)
                    }
                    None => 0,
                };
                let c = layout.coords(ti, l);
                let to = placed.range.0 as usize + placed.layout.byte_offset(&c) as usize;
                writes.push((t, to, bits));
            }
        }
    }
    // the bytes must be free of other warps' unordered reads and writes when issued
    let each = writes.iter().map(|&(t, at, _)| (t, at));
    if let Some(race) = b.races.accesses(Access::Write, loc, elem, each) {
        let tile = views::label(b, dst.tensor, placed.stage);
        return Err(race.fail(name, &tile, loc));
    }
    let touches = hazards::touches(b, task, facts, name, loc)?;
    for (owner, threads) in hazards::owners(task, AsyncGroup::CpAsync) {
        let mine: Vec<(u32, usize, u64)> = writes
            .iter()
            .copied()
            .filter(|(t, _, _)| threads.binary_search(t).is_ok())
            .collect();
        let work = Landing {
            writes: mine,
            elem,
            tensor: dst.tensor,
            range: placed.range,
            stage: placed.stage,
            loc,
        };
        let retire = Retire::Group {
            kind: AsyncGroup::CpAsync,
            owner,
            group: None,
        };
        let label = "a copy_async";
        hazards::issue(
            b,
            name,
            label,
            loc,
            touches.clone(),
            threads,
            retire,
            Box::new(work),
        );
    }
    Ok(())
}
