//! Tiles seen with another shape, as `codegen/shape.rs` emits them: each thread's result
//! registers are copies of its own source registers (the table the layouts give); a layout
//! conversion whose threads need other threads' elements takes each element from the thread
//! that holds it (the generated code's trip through shared memory).

use super::state::{Block, Fail, RegData, R};
use super::task::{Step, Task};
use crate::error::Fault;
use crate::ir::{Loc, ShapeInst};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &ShapeInst, loc: Loc) -> R<Step> {
    if i.converts_through_shared(b.program()) {
        return convert_across_threads(b, task, i, loc);
    }
    let (src, out) = i.operands();
    let Some(table) = i.source_locals(b.program()) else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{}: the layouts do not fit: the interpreter runs planned programs (the output \
                 of passes::compile_program)",
                i.name()
            ),
        ));
    };
    let (ls_src, ls_out) = (b.prep.reg(src.tensor).ls, b.prep.reg(out).ls);
    b.reg_mut(src.tensor);
    let Some(data) = b.regs[src.tensor.0 as usize].take() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "the source has no registers",
        ));
    };
    let pack = i.pack_count(b.program()).map(|k| {
        let t = b.program().register(src.tensor).dtype;
        (k as usize, t.bits(), t, b.program().register(out).dtype)
    });
    let unpack = i.unpack_count(b.program()).map(|k| {
        let t = b.program().register(out).dtype;
        (k as usize, t.bits(), t)
    });
    let dst = b.reg_mut(out);
    for &t in &task.threads {
        let (from, to) = (t as usize * ls_src, t as usize * ls_out);
        if let Some((k, bits, t, word)) = pack {
            // each element's code (from its value), shifted into its word
            let RegData::Int(y) = &mut *dst else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "pack: words that are not integers",
                ));
            };
            for (j, &s) in table.iter().enumerate().take(ls_out) {
                let mut w = 0u64;
                for x in 0..k {
                    let code = match &data {
                        RegData::Float(v) => super::state::f32_to_bits(v[from + s + x], t),
                        RegData::Int(v) => v[from + s + x] as u64,
                    } & ((1 << bits) - 1);
                    w |= code << (x as u32 * bits);
                }
                y[to + j] = crate::ir::wrap_to(w as i64, word);
            }
            continue;
        }
        if let Some((k, bits, dtype)) = unpack {
            // each element's code from its word, then its value
            let RegData::Int(words) = &data else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "unpack: words that are not integers",
                ));
            };
            for (l, &s) in table.iter().enumerate().take(ls_out) {
                let code =
                    ((words[from + s] as u64) >> ((l % k) as u32 * bits)) & ((1 << bits) - 1);
                match &mut *dst {
                    RegData::Float(y) => y[to + l] = super::state::bits_to_f32(code, dtype),
                    RegData::Int(y) => y[to + l] = super::state::bits_to_int(code, dtype),
                }
            }
            continue;
        }
        for (l, &s) in table.iter().enumerate().take(ls_out) {
            match (&data, &mut *dst) {
                (RegData::Float(x), RegData::Float(y)) => y[to + l] = x[from + s],
                (RegData::Int(x), RegData::Int(y)) => y[to + l] = x[from + s],
                (RegData::Float(x), RegData::Int(y)) => y[to + l] = x[from + s] as i64,
                (RegData::Int(x), RegData::Float(y)) => y[to + l] = x[from + s] as f32,
            }
        }
    }
    b.regs[src.tensor.0 as usize] = Some(data);
    Ok(Step::Next)
}

/// A layout conversion across threads: every element of the result comes from a thread of the
/// task that holds it in the source.
fn convert_across_threads(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &ShapeInst,
    loc: Loc,
) -> R<Step> {
    let p = b.program();
    let (src, out) = i.operands();
    let (Some(sl), Some(ol)) = (&p.register(src.tensor).layout, &p.register(out).layout) else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "convert_layout: a tile without a layout",
        ));
    };
    let sl = src.layout_of(sl);
    let map = match i {
        ShapeInst::Convert { map, .. } => *map,
        _ => crate::ir::Repeat::Same,
    };
    let shape = p.view_shape(src);
    let flat = |c: &[i64]| c.iter().zip(&shape).fold(0i64, |a, (&x, &n)| a * n + x);
    let (ls_src, ls_out) = (b.prep.reg(src.tensor).ls, b.prep.reg(out).ls);
    let (sn, on) = (sl.num_threads().max(1), ol.num_threads().max(1));
    let base = task.base();
    b.reg_mut(src.tensor);
    let Some(data) = b.regs[src.tensor.0 as usize].take() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "the source has no registers",
        ));
    };
    let mut held: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    for &t in &task.threads {
        let ti = i64::from(t.saturating_sub(base)) % sn;
        for l in 0..ls_src {
            held.entry(flat(&sl.coords(ti, l as i64)))
                .or_insert(t as usize * ls_src + l);
        }
    }
    let dst = b.reg_mut(out);
    let mut missing = None;
    for &t in &task.threads {
        let ti = i64::from(t.saturating_sub(base)) % on;
        for l in 0..ls_out {
            let Some(&at) = held.get(&flat(&map.source(&ol.coords(ti, l as i64), &shape))) else {
                missing = Some(t);
                continue;
            };
            let to = t as usize * ls_out + l;
            match (&data, &mut *dst) {
                (RegData::Float(x), RegData::Float(y)) => y[to] = x[at],
                (RegData::Int(x), RegData::Int(y)) => y[to] = x[at],
                (RegData::Float(x), RegData::Int(y)) => y[to] = x[at] as i64,
                (RegData::Int(x), RegData::Float(y)) => y[to] = x[at] as f32,
            }
        }
    }
    b.regs[src.tensor.0 as usize] = Some(data);
    if let Some(t) = missing {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!("convert_layout: thread {t} needs elements no thread of the block holds"),
        ));
    }
    Ok(Step::Next)
}
