//! Global memory through register tiles, as `codegen/memory/global.rs` emits it: elements are
//! at the view's strides times their coordinates; elements outside the view are skipped by
//! stores and atomics and read the fill value in loads (the generated code checks every
//! vector, and element by element where the view's end cuts one); an element inside the view
//! but outside its buffer is a `GlobalOutOfBounds` fault.
//!
//! A block reads buffers as they were when its batch started, plus its own writes in program
//! order (`Block::read_global`); its writes land after it, in block order, atomics combining
//! with what the buffer holds then (`GlobalWrite::apply`). Atomics on one element within a
//! block apply in program order, and within one instruction in thread order; only the thread
//! holding an element's first copy updates it.

use super::super::publication::Kind;
use super::super::state::{
    bits_to_f32, bits_to_int, f32_to_bits, Block, Fail, GlobalWrite, RegData, WriteOp, R,
};
use super::super::task::{value, values, Task};
use crate::error::Fault;
use crate::ir::{DType, Expr, GlobalId, Loc, MemoryInst, RegView};

/// A view as one instruction sees it: extents and strides evaluated, its buffer.
pub(in crate::interp) struct View {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub arg: usize,
    /// Elements the buffer holds.
    len: usize,
}

impl View {
    pub fn new(b: &Block<'_, '_>, task: &Task<'_>, g: GlobalId, loc: Loc) -> R<View> {
        let d = b.program().global(g);
        let shape = values(b, task, &d.shape, loc)?;
        let strides = values(b, task, &d.strides, loc)?;
        let (arg, buf) = b.view_buffer(g, loc)?;
        Ok(View {
            name: d.name.clone(),
            dtype: d.dtype,
            shape,
            strides,
            arg,
            // packed elements count by bits
            len: buf.bytes.len() * 8 / d.dtype.bits() as usize,
        })
    }

    pub fn eb(&self) -> usize {
        self.dtype.nbytes() as usize
    }

    /// The first bit of an element inside the view (packed types), or the fault of one
    /// outside the buffer.
    pub fn bit(&self, c: &[i64], flat: i64, what: &str, thread: u32, loc: Loc) -> R<usize> {
        self.byte_or_bit(c, flat, what, thread, loc, self.dtype.bits() as usize)
    }

    /// The element offset of coordinates inside the view (`None` outside it).
    pub fn flat(&self, c: &[i64]) -> Option<i64> {
        let inside = c.len() == self.shape.len()
            && c.iter().zip(&self.shape).all(|(x, n)| (0..*n).contains(x));
        inside.then(|| {
            c.iter()
                .zip(&self.strides)
                .fold(0i64, |a, (x, s)| a.saturating_add(x.saturating_mul(*s)))
        })
    }

    /// The byte of an element inside the view, or the fault of one outside the buffer.
    pub fn byte(&self, c: &[i64], flat: i64, what: &str, thread: u32, loc: Loc) -> R<usize> {
        self.byte_or_bit(c, flat, what, thread, loc, self.eb())
    }

    fn byte_or_bit(
        &self,
        c: &[i64],
        flat: i64,
        what: &str,
        thread: u32,
        loc: Loc,
        unit: usize,
    ) -> R<usize> {
        if flat >= 0 && (flat as u64) < self.len as u64 {
            return Ok(flat as usize * unit);
        }
        Err(Fail::new(
            Fault::GlobalOutOfBounds,
            loc,
            format!(
                "out-of-bounds global access: {what} element {c:?} of view `{}` {:?} (thread \
                 {thread}), which is element {flat} of a buffer of {} elements; the element is \
                 inside the view but the view is larger than the buffer",
                self.name, self.shape, self.len
            ),
        ))
    }
}

/// The view's coordinates of local `l` of thread `ti` of a tile seen through `perm`.
fn coords(
    info: &super::super::state::RegInfo,
    perm: &[usize],
    offs: &[i64],
    ti: usize,
    l: usize,
    c: &mut [i64],
) {
    let rank = info.rank;
    for (dd, cd) in c.iter_mut().enumerate() {
        let td = perm[dd];
        *cd = offs[dd] + info.tc[ti * rank + td] + info.lc[l * rank + td];
    }
}

fn check_rank(name: &str, view: &View, tile: usize, offsets: usize, loc: Loc) -> R<()> {
    if tile != view.shape.len() || offsets != tile {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{name}: view `{}` has {} dimensions, the tile {tile} and the offsets {offsets}",
                view.name,
                view.shape.len()
            ),
        ));
    }
    Ok(())
}

pub(in crate::interp) fn planned_width(name: &str, vector: Option<u32>, loc: Loc) -> R<usize> {
    vector.map(|w| w.max(1) as usize).ok_or_else(|| {
        Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{name} has no vector width: the interpreter runs planned programs (the output \
                 of passes::compile_program)"
            ),
        )
    })
}

/// The bits of local `idx` of a tile's storage in `dtype`.
fn bits_of(data: &RegData, idx: usize, dtype: DType) -> u64 {
    match data {
        RegData::Float(v) => f32_to_bits(v[idx], dtype),
        RegData::Int(v) => v[idx] as u64,
    }
}

fn written<'d>(b: &'d Block<'_, '_>, r: &RegView, name: &str, loc: Loc) -> R<&'d RegData> {
    b.regs[r.tensor.0 as usize].as_ref().ok_or_else(|| {
        Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{name}: register tensor `{}` was never written",
                b.program().register(r.tensor).name
            ),
        )
    })
}

/// Whether the vector of `width` elements starting at local `l` lies whole inside the view
/// (what the generated code checks before a vector access).
pub(in crate::interp) fn whole_vector(view: &View, c: &[i64], width: usize) -> bool {
    let Some(last) = c.len().checked_sub(1) else {
        return false;
    };
    let mut end = c.to_vec();
    end[last] += width as i64 - 1;
    view.flat(c).is_some() && view.flat(&end).is_some()
}

/// A vector the generated code accesses at once must be aligned to its width within the
/// buffer (lowering proved it; a violation is a lowering error).
pub(in crate::interp) fn check_aligned(
    name: &str,
    view: &View,
    flat: i64,
    width: usize,
    loc: Loc,
) -> R<()> {
    if width > 1 && flat % width as i64 != 0 {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{name}: a {width}-element vector starts at element {flat} of view `{}`, which \
                 is not a multiple of its width (the generated code would access it misaligned)",
                view.name
            ),
        ));
    }
    Ok(())
}

pub(super) fn store_global(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::StoreGlobal {
        dst,
        src,
        offsets,
        vector,
        mask,
    } = i
    else {
        return Ok(());
    };
    let view = View::new(b, task, *dst, loc)?;
    let offs = values(b, task, offsets, loc)?;
    let width = planned_width("store_global", *vector, loc)?;
    let info = b.prep.reg(src.tensor);
    let rank = info.rank;
    check_rank("store_global", &view, rank, offs.len(), loc)?;
    let perm = src.perm(rank);
    let base = task.base();
    let mut writes = vec![];
    {
        let data = written(b, src, "store_global", loc)?;
        let kept = match mask {
            Some(m) => Some(written(b, m, "store_global_where", loc)?),
            None => None,
        };
        let mut c = vec![0i64; rank];
        for &t in &task.threads {
            let ti = (t.saturating_sub(base) as usize) % info.nthreads;
            for l in 0..info.ls {
                coords(info, &perm, &offs, ti, l, &mut c);
                if l % width == 0 && whole_vector(&view, &c, width.min(info.ls - l)) {
                    let flat = view.flat(&c).unwrap_or(0);
                    check_aligned("store_global", &view, flat, width, loc)?;
                }
                let Some(flat) = view.flat(&c) else { continue };
                let idx = t as usize * info.ls + l;
                if kept.is_some_and(|m| bits_of(m, idx, DType::Bool) == 0) || !info.holds(ti, l) {
                    continue;
                }
                let bits = bits_of(data, t as usize * info.ls + l, view.dtype);
                if view.dtype.is_subbyte() {
                    // the bytes the element's bits fall in, each rewritten under its mask
                    let at = view.bit(&c, flat, "store_global writes", t, loc)?;
                    let w = view.dtype.bits();
                    let mask = ((1u64 << w) - 1) << (at % 8);
                    let code = (bits & ((1u64 << w) - 1)) << (at % 8);
                    for k in 0..(at % 8 + w as usize).div_ceil(8) {
                        let m = (mask >> (8 * k)) & 0xff;
                        writes.push((
                            at / 8 + k,
                            (code >> (8 * k)) & 0xff,
                            1,
                            WriteOp::Bits { mask: m },
                        ));
                    }
                } else {
                    let byte = view.byte(&c, flat, "store_global writes", t, loc)?;
                    writes.push((byte, bits, view.eb(), WriteOp::Store));
                }
            }
        }
    }
    let event = b.event(Kind::Store, loc);
    for (byte, bits, nbytes, op) in writes {
        b.write_global(GlobalWrite {
            arg: view.arg as u32,
            byte,
            bits,
            nbytes: nbytes as u8,
            op,
            event,
        });
    }
    Ok(())
}

/// The code of the packed element whose first bit is `at` in buffer `arg`, as the block sees
/// it (its bytes checked as published).
fn read_packed(b: &mut Block<'_, '_>, view: &View, at: usize, loc: Loc) -> R<u64> {
    let w = view.dtype.bits() as usize;
    let n = (at % 8 + w).div_ceil(8);
    b.check_published(view.arg, at / 8, n, loc, "load_global reads")?;
    let raw = (0..n).fold(0u64, |acc, k| {
        acc | (b.read_global(view.arg, at / 8 + k, 1) & 0xff) << (8 * k)
    });
    Ok((raw >> (at % 8)) & ((1u64 << w) - 1))
}

/// The value of a constant element (a fill value) as the tile stores it.
fn fill_value(e: &Expr, dtype: DType) -> (f32, i64) {
    let x = match e {
        Expr::Float(bits, _) => f64::from_bits(*bits),
        Expr::Int(v, _) => *v as f64,
        _ => 0.0,
    };
    let f = crate::interp::state::round_float(x, dtype) as f32;
    (f, crate::ir::wrap_to(x as i64, dtype))
}

pub(super) fn load_global(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::LoadGlobal {
        src,
        out,
        offsets,
        fill,
        vector,
    } = i
    else {
        return Ok(());
    };
    let view = View::new(b, task, *src, loc)?;
    let offs = values(b, task, offsets, loc)?;
    let width = planned_width("load_global", *vector, loc)?;
    let info = b.prep.reg(*out);
    let rank = info.rank;
    check_rank("load_global", &view, rank, offs.len(), loc)?;
    let perm: Vec<usize> = (0..rank).collect();
    let base = task.base();
    let (fill_f, fill_i) = fill_value(fill, view.dtype);
    // the elements each thread reads: (storage index, bits or the fill)
    let mut got: Vec<(usize, Option<u64>)> = Vec::with_capacity(task.threads.len() * info.ls);
    let mut c = vec![0i64; rank];
    for &t in &task.threads {
        let ti = (t.saturating_sub(base) as usize) % info.nthreads;
        for l in 0..info.ls {
            coords(info, &perm, &offs, ti, l, &mut c);
            if l % width == 0 && whole_vector(&view, &c, width.min(info.ls - l)) {
                let flat = view.flat(&c).unwrap_or(0);
                check_aligned("load_global", &view, flat, width, loc)?;
            }
            let idx = t as usize * info.ls + l;
            // a masked-off register is filled, as an element outside the view
            let flat = view.flat(&c).filter(|_| info.holds(ti, l));
            let bits = match flat {
                Some(flat) if view.dtype.is_subbyte() => {
                    let at = view.bit(&c, flat, "load_global reads", t, loc)?;
                    Some(read_packed(b, &view, at, loc)?)
                }
                Some(flat) => {
                    let byte = view.byte(&c, flat, "load_global reads", t, loc)?;
                    b.check_published(view.arg, byte, view.eb(), loc, "load_global reads")?;
                    Some(b.read_global(view.arg, byte, view.eb()))
                }
                None => None,
            };
            got.push((idx, bits));
        }
    }
    let dtype = view.dtype;
    match b.reg_mut(*out) {
        RegData::Float(v) => {
            for (idx, bits) in got {
                v[idx] = bits.map_or(fill_f, |x| bits_to_f32(x, dtype));
            }
        }
        RegData::Int(v) => {
            for (idx, bits) in got {
                v[idx] = bits.map_or(fill_i, |x| bits_to_int(x, dtype));
            }
        }
    }
    Ok(())
}

pub(super) fn atomic_global(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::AtomicGlobal {
        op,
        dst,
        src,
        compare,
        out,
        offsets,
    } = i
    else {
        return Ok(());
    };
    let name = i.name();
    let view = View::new(b, task, *dst, loc)?;
    let offs = values(b, task, offsets, loc)?;
    let info = b.prep.reg(src.tensor);
    let rank = info.rank;
    check_rank(name, &view, rank, offs.len(), loc)?;
    let perm = src.perm(rank);
    let layout = b.program().register(src.tensor).layout.clone();
    let first = |ti: usize| layout.as_ref().is_none_or(|l| l.is_first_copy(ti as i64));
    let base = task.base();
    let dtype = view.dtype;
    // (thread, local, byte, operand, compared)
    let mut ops = vec![];
    {
        let data = written(b, src, name, loc)?;
        let cmp = match compare {
            Some(cv) => Some((written(b, cv, name, loc)?, b.prep.reg(cv.tensor))),
            None => None,
        };
        let mut c = vec![0i64; rank];
        for &t in &task.threads {
            let rel = t.saturating_sub(base) as usize;
            if !first(rel) {
                continue;
            }
            let ti = rel % info.nthreads;
            for l in 0..info.ls {
                coords(info, &perm, &offs, ti, l, &mut c);
                let Some(flat) = view.flat(&c) else {
                    ops.push((t, l, None, 0, 0));
                    continue;
                };
                let byte = view.byte(&c, flat, &format!("{name} updates"), t, loc)?;
                let v = bits_of(data, t as usize * info.ls + l, dtype);
                // the compared tile has the same layout (inference gives it the values')
                let k = cmp
                    .as_ref()
                    .filter(|(_, ci)| ci.ls == info.ls)
                    .map_or(0, |(d, ci)| bits_of(d, t as usize * ci.ls + l, dtype));
                ops.push((t, l, Some(byte), v, k));
            }
        }
    }
    let mut olds = vec![];
    let event = b.event(Kind::Atomic, loc);
    for (t, l, byte, v, k) in ops {
        let Some(byte) = byte else {
            olds.push((t as usize * info.ls + l, 0));
            continue;
        };
        b.atomic_reads(event, view.arg, byte, view.eb(), loc)?;
        let old = b.read_global(view.arg, byte, view.eb());
        b.write_global(GlobalWrite {
            arg: view.arg as u32,
            byte,
            bits: v,
            nbytes: view.eb() as u8,
            op: WriteOp::Atomic {
                op: *op,
                dtype,
                compare: k,
            },
            event,
        });
        olds.push((t as usize * info.ls + l, old));
    }
    if let Some(o) = out {
        match b.reg_mut(*o) {
            RegData::Float(v) => {
                for (idx, old) in olds {
                    v[idx] = bits_to_f32(old, dtype);
                }
            }
            RegData::Int(v) => {
                for (idx, old) in olds {
                    v[idx] = bits_to_int(old, dtype);
                }
            }
        }
    }
    Ok(())
}

pub(super) fn atomic_scalar(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::AtomicScalar {
        op,
        dst,
        index,
        value: v,
        compare,
        out,
    } = i
    else {
        return Ok(());
    };
    let name = i.name();
    let view = View::new(b, task, *dst, loc)?;
    let idx = values(b, task, index, loc)?;
    let dtype = view.dtype;
    let mask = |x: i64| crate::ir::wrap_to(x, dtype) as u64 & 0xFFFF_FFFF;
    let operand = mask(value(b, task, v, loc)?);
    let k = match compare {
        Some(e) => mask(value(b, task, e, loc)?),
        None => 0,
    };
    let mut old = 0;
    let event = b.event(Kind::Atomic, loc);
    // every thread of the task runs it (the verifier allows one)
    for t in task.threads.clone() {
        let Some(flat) = view.flat(&idx) else {
            old = 0;
            continue;
        };
        let byte = view.byte(&idx, flat, &format!("{name} updates"), t, loc)?;
        b.atomic_reads(event, view.arg, byte, view.eb(), loc)?;
        old = b.read_global(view.arg, byte, view.eb());
        b.write_global(GlobalWrite {
            arg: view.arg as u32,
            byte,
            bits: operand,
            nbytes: view.eb() as u8,
            op: WriteOp::Atomic {
                op: *op,
                dtype,
                compare: k,
            },
            event,
        });
    }
    let t = b.program().var(*out).dtype;
    task.env[out.0 as usize] = Some(crate::ir::wrap_to(bits_to_int(old, dtype), t));
    Ok(())
}

/// `load_global_scalar`: the element (0 outside the view) into the task's variable; every
/// thread reads it, so each read is checked against the publication rules.
pub(super) fn load_scalar(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::LoadScalar { src, index, out } = i else {
        return Ok(());
    };
    let view = View::new(b, task, *src, loc)?;
    let idx = values(b, task, index, loc)?;
    let dtype = view.dtype;
    let mut bits = None;
    if let Some(flat) = view.flat(&idx) {
        for t in task.threads.clone() {
            let byte = view.byte(&idx, flat, "load_global_scalar reads", t, loc)?;
            b.check_published(view.arg, byte, view.eb(), loc, "load_global_scalar reads")?;
            bits = Some(b.read_global(view.arg, byte, view.eb()));
        }
    }
    let bits = bits.unwrap_or(0);
    // scalar variables hold integers as themselves and floats as their f64 bits
    task.env[out.0 as usize] = Some(if dtype.is_float() {
        (bits_to_f32(bits, dtype) as f64).to_bits() as i64
    } else {
        bits_to_int(bits, dtype)
    });
    Ok(())
}

/// `store_global_at` / `atomic_add_at` as `codegen/memory/global.rs` emits them: each element
/// of the values, from the thread holding its first copy, to the coordinates its index tiles
/// hold; elements outside the view are skipped.
pub(super) fn scatter_global(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    i: &MemoryInst,
    loc: Loc,
) -> R<()> {
    let MemoryInst::ScatterGlobal {
        dst,
        src,
        index,
        add,
    } = i
    else {
        return Ok(());
    };
    let name = i.name();
    let view = View::new(b, task, *dst, loc)?;
    let info = b.prep.reg(src.tensor);
    let layout = b.program().register(src.tensor).layout.clone();
    let first = |ti: usize| layout.as_ref().is_none_or(|l| l.is_first_copy(ti as i64));
    let base = task.base();
    let dtype = view.dtype;
    let mut ops = vec![];
    {
        let data = written(b, src, name, loc)?;
        let idx = index
            .iter()
            .map(|v| written(b, v, name, loc))
            .collect::<R<Vec<_>>>()?;
        let mut c = vec![0i64; idx.len()];
        for &t in &task.threads {
            let rel = t.saturating_sub(base) as usize;
            if !first(rel) {
                continue;
            }
            for l in 0..info.ls {
                let at = t as usize * info.ls + l;
                for (d, x) in idx.iter().enumerate() {
                    c[d] = match x {
                        RegData::Int(v) => v[at],
                        RegData::Float(v) => v[at] as i64,
                    };
                }
                let Some(flat) = view.flat(&c) else { continue };
                let byte = view.byte(&c, flat, &format!("{name} writes"), t, loc)?;
                ops.push((byte, bits_of(data, at, dtype)));
            }
        }
    }
    let event = b.event(if *add { Kind::Atomic } else { Kind::Store }, loc);
    for (byte, bits) in ops {
        let op = if *add {
            b.atomic_reads(event, view.arg, byte, view.eb(), loc)?;
            WriteOp::Atomic {
                op: crate::ir::AtomicOp::Add,
                dtype,
                compare: 0,
            }
        } else {
            WriteOp::Store
        };
        b.write_global(GlobalWrite {
            arg: view.arg as u32,
            byte,
            bits,
            nbytes: view.eb() as u8,
            op,
            event,
        });
    }
    Ok(())
}
