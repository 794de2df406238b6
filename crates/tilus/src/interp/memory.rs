//! The memory family as `codegen/memory.rs` emits it: shared tiles are byte ranges of the
//! planned region (checked against every live buffer when allocated), register tiles hold one
//! value per (thread, local index) as their layout says, `load_shared` reads through the
//! tile's swizzle; global memory (`load_global`, `store_global`, atomics) is in
//! `memory/global.rs`.

mod global;

pub(super) use global::{check_aligned, planned_width, whole_vector, View};

use super::hazards;
use super::races::Access;
use super::region::overlaps;
use super::state::{bits_to_f32, bits_to_int, f32_to_bits, read_bits, Block, Fail, RegData, R};
use super::task::{Step, Task};
use super::views;
use crate::error::Fault;
use crate::ir::facts::Memory;
use crate::ir::{DType, Expr, Loc, MemoryInst, SharedId, SharedView};

pub(crate) fn exec(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<Step> {
    match i {
        MemoryInst::GlobalView(_) => {}
        MemoryInst::AllocShared(s) => alloc_shared(b, *s, loc)?,
        MemoryInst::FreeShared(s) => b.live[s.0 as usize] = false,
        MemoryInst::AllocRegister { out, init } => alloc_register(b, task, *out, init.as_ref()),
        MemoryInst::LoadShared { src, out } => load_shared(b, task, src, *out, loc)?,
        MemoryInst::StoreGlobal { .. } => global::store_global(b, task, i, loc)?,
        MemoryInst::LoadGlobal { .. } => global::load_global(b, task, i, loc)?,
        MemoryInst::AtomicGlobal { .. } => global::atomic_global(b, task, i, loc)?,
        MemoryInst::ScatterGlobal { .. } => global::scatter_global(b, task, i, loc)?,
        MemoryInst::AtomicScalar { .. } => global::atomic_scalar(b, task, i, loc)?,
        MemoryInst::LoadScalar { .. } => global::load_scalar(b, task, i, loc)?,
        MemoryInst::StoreShared { dst, src } => store_shared(b, task, dst, src, loc)?,
        // the fence's effect on the proxy-fence record is applied by `hazards::after`
        MemoryInst::FenceProxyAsync => {}
        // the interpreter's global memory is sequentially consistent: every store is seen by
        // every later access, fence or not; the fence counts for the publication rule
        MemoryInst::FenceGpu => b.publication.fences += 1,
    }
    Ok(Step::Next)
}

/// Places a tile at its planned offset, after checking that no live buffer, barrier or copy in
/// flight uses any of its bytes.
fn alloc_shared(b: &mut Block<'_, '_>, s: SharedId, loc: Loc) -> R<()> {
    let p = b.program();
    let d = p.shared(s);
    let me = b.tile_range(s);
    if me.1 > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "shared tensor `{}` is planned at bytes {}..{}, beyond the block's {} bytes of \
                 shared memory",
                d.name,
                me.0,
                me.1,
                b.smem.len()
            ),
        ));
    }
    if b.live[s.0 as usize] {
        // allocated again (a loop) while still alive: the same bytes, nothing new
        return Ok(());
    }
    for (j, other) in p.shareds.iter().enumerate() {
        if j == s.0 as usize || !b.live[j] {
            continue;
        }
        let r = b.tile_range(SharedId(j as u32));
        if overlaps(me, r) {
            return Err(Fail::new(
                Fault::SharedOverlap,
                loc,
                format!(
                    "shared tensor `{}` (bytes {}..{}) overlaps `{}` (bytes {}..{}), which is still \
                     alive: the two buffers would corrupt each other",
                    d.name, me.0, me.1, other.name, r.0, r.1
                ),
            )
            .note(other.loc, format!("`{}` was allocated here", other.name)));
        }
    }
    for (j, bar) in p.barriers.iter().enumerate() {
        if b.bars[j].is_none() {
            continue;
        }
        let off = bar.offset.unwrap_or(0) as u64;
        let r = (off, off + 8 * bar.counts.len() as u64);
        if overlaps(me, r) {
            return Err(Fail::new(
                Fault::SharedOverlap,
                loc,
                format!(
                    "shared tensor `{}` (bytes {}..{}) overlaps the mbarriers `{}` (bytes {}..{}): \
                     writing the tile would corrupt the barriers",
                    d.name, me.0, me.1, bar.name, r.0, r.1
                ),
            )
            .note(bar.loc, format!("`{}` was allocated here", bar.name)));
        }
    }
    let in_flight = hazards::writing_into(b, me).and_then(|(op, x)| match (x.memory, x.bytes) {
        (Memory::Shared(into), Some(span)) if into != s => Some((into, span.range, op.loc)),
        _ => None,
    });
    if let Some((dst, r, at)) = in_flight {
        return Err(Fail::new(
            Fault::SharedOverlap,
            loc,
            format!(
                "shared tensor `{}` (bytes {}..{}) overlaps `{}` (bytes {}..{}), into which a TMA \
                 copy is still in flight: the copy would overwrite the new tile",
                d.name,
                me.0,
                me.1,
                p.shared(dst).name,
                r.0,
                r.1
            ),
        )
        .note(at, "the copy was issued here"));
    }
    b.live[s.0 as usize] = true;
    Ok(())
}

fn init_value(e: &Expr, dtype: DType) -> (f32, i64) {
    let x = match e {
        Expr::Float(bits, _) => f64::from_bits(*bits),
        Expr::Int(v, _) => *v as f64,
        _ => 0.0,
    };
    let f = super::state::round_float(x, dtype) as f32;
    (f, crate::ir::wrap_to(x as i64, dtype))
}

fn alloc_register(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    out: crate::ir::RegId,
    init: Option<&Expr>,
) {
    let info = b.prep.reg(out);
    let (ls, dtype) = (info.ls, info.dtype);
    let value = init.map(|e| init_value(e, dtype));
    match b.reg_mut(out) {
        RegData::Float(v) => {
            let x = value.map_or(f32::NAN, |(f, _)| f);
            for &t in &task.threads {
                let t = t as usize;
                v[t * ls..(t + 1) * ls].fill(x);
            }
        }
        RegData::Int(v) => {
            let x = value.map_or(0, |(_, i)| i);
            for &t in &task.threads {
                let t = t as usize;
                v[t * ls..(t + 1) * ls].fill(x);
            }
        }
    }
}

fn load_shared(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    src: &SharedView,
    out: crate::ir::RegId,
    loc: Loc,
) -> R<()> {
    let p = b.program();
    let d = p.shared(src.tensor);
    let placed = views::place(b, task, src, "load_shared", loc)?;
    let layout = &placed.layout;
    let (off, end) = placed.range;
    if end > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "load_shared reads `{}` at bytes {off}..{end}, beyond the block's {} bytes of \
                 shared memory",
                views::label(b, src.tensor, placed.stage),
                b.smem.len()
            ),
        ));
    }
    let prep = b.prep;
    let info = prep.reg(out);
    let base = task.base();
    let eb = d.dtype.nbytes();
    let elems: i64 = placed.shape.iter().product();
    let mut data = b.regs[out.0 as usize].take();
    if data.is_none() {
        b.reg_mut(out);
        data = b.regs[out.0 as usize].take();
    }
    let smem = &b.smem;
    let mut bad = None;
    let read = |flat: i64| -> Option<u64> {
        if flat < 0 || flat >= elems {
            return None;
        }
        let at = off as usize + layout.linear_byte_offset(flat) as usize;
        (at + eb as usize <= smem.len()).then(|| read_bits(smem, at, d.dtype))
    };
    match data.as_mut() {
        Some(RegData::Float(v)) => {
            for &t in &task.threads {
                let ti = (t.saturating_sub(base) as usize) % info.nthreads;
                let ft = info.flat_t[ti];
                for l in 0..info.ls {
                    match read(ft + info.flat_l[l]) {
                        Some(bits) => v[t as usize * info.ls + l] = bits_to_f32(bits, d.dtype),
                        None => bad = Some((t, l)),
                    }
                }
            }
        }
        Some(RegData::Int(v)) => {
            for &t in &task.threads {
                let ti = (t.saturating_sub(base) as usize) % info.nthreads;
                let ft = info.flat_t[ti];
                for l in 0..info.ls {
                    match read(ft + info.flat_l[l]) {
                        Some(bits) => v[t as usize * info.ls + l] = bits_to_int(bits, d.dtype),
                        None => bad = Some((t, l)),
                    }
                }
            }
        }
        None => {}
    }
    b.regs[out.0 as usize] = data;
    if bad.is_none() {
        let eb = eb as usize;
        let each = task.threads.iter().flat_map(|&t| {
            let ft = info.flat_t[(t.saturating_sub(base) as usize) % info.nthreads];
            info.flat_l[..info.ls].iter().map(move |&fl| {
                (
                    t,
                    off as usize + layout.linear_byte_offset(ft + fl) as usize,
                )
            })
        });
        if let Some(race) = b.races.accesses(Access::Read, loc, eb, each) {
            let tile = views::label(b, src.tensor, placed.stage);
            return Err(race.fail("load_shared", &tile, loc));
        }
    }
    if let Some((t, l)) = bad {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "load_shared: element {l} of thread {t} falls outside shared tensor `{}` (the \
                 register layout does not fit the tile)",
                views::label(b, src.tensor, placed.stage)
            ),
        ));
    }
    Ok(())
}

/// Ordinary stores of a register tile into a shared tile, through the tile's swizzle; the tile
/// stays unpublished to the async proxy until the writing threads fence.
pub(super) fn store_shared(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    dst: &SharedView,
    src: &crate::ir::RegView,
    loc: Loc,
) -> R<()> {
    let p = b.program();
    let d = p.shared(dst.tensor);
    let placed = views::place(b, task, dst, "store_shared", loc)?;
    let layout = &placed.layout;
    let (off, end) = placed.range;
    if end > b.smem.len() as u64 {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "store_shared writes `{}` at bytes {off}..{end}, beyond the block's shared memory",
                views::label(b, dst.tensor, placed.stage)
            ),
        ));
    }
    let reg = p.register(src.tensor);
    let Some(rl) = reg.layout.as_ref() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!("register tensor `{}` has no layout", reg.name),
        ));
    };
    let rl = rl.permute(&src.perm(rl.rank()));
    let base = task.base();
    let (eb, dtype) = (d.dtype.nbytes(), d.dtype);
    let ls = rl.local_size() as usize;
    let nthreads = rl.num_threads().max(1) as u32;
    let mut writes: Vec<(u32, usize, u64)> = vec![];
    {
        let data = b.regs[src.tensor.0 as usize].as_ref();
        let Some(data) = data else {
            return Err(Fail::new(
                Fault::Invalid,
                loc,
                format!("store_shared reads `{}` before it is written", reg.name),
            ));
        };
        for &t in &task.threads {
            let ti = (t.saturating_sub(base) % nthreads) as i64;
            for l in 0..ls {
                let c = rl.coords(ti, l as i64);
                let at = off as usize + layout.byte_offset(&c) as usize;
                let bits = match data {
                    RegData::Float(v) => f32_to_bits(v[t as usize * ls + l], dtype),
                    RegData::Int(v) => v[t as usize * ls + l] as u64,
                };
                writes.push((t, at, bits));
            }
        }
    }
    let each = writes.iter().map(|&(t, at, _)| (t, at));
    if let Some(race) = b.races.accesses(Access::Write, loc, eb as usize, each) {
        let tile = views::label(b, dst.tensor, placed.stage);
        return Err(race.fail("store_shared", &tile, loc));
    }
    for (_, at, bits) in writes {
        if at + eb as usize <= b.smem.len() {
            super::state::write_bits(&mut b.smem, at, bits, eb as usize);
        }
    }
    Ok(())
}
