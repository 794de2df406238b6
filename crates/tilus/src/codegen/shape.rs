//! Emitters for tiles seen with another shape: the result's registers are copies of the
//! source's in the same thread (all of them, in order, for a reshape; the slice's, for a
//! slice; the ones each element's thread already holds, for a layout conversion in
//! registers), which the CUDA compiler's register allocation turns into renamings. A layout
//! conversion whose threads need other threads' elements goes through its shared scratch.

use super::memory::{declare, layout, read, storage, word, MemoryHelper, Storage};
use super::{Emitter, Helper};
use crate::ir::{DType, RegId, RegView, Repeat, ShapeInst, SharedId};

pub(super) fn emit(e: &mut Emitter, i: &ShapeInst) {
    if let ShapeInst::Convert {
        src,
        out,
        scratch,
        map,
    } = i
    {
        if i.converts_through_shared(e.p) {
            return convert_through_shared(e, src, *out, *scratch, *map);
        }
    }
    let (src, out) = i.operands();
    let table = i
        .source_locals(e.p)
        .expect("planned programs' shape views fit their layouts (check_planned)");
    declare(e, out);
    if let Some(k) = i.unpack_count(e.p) {
        // part `l % k` of word `l / k`: the element's bits shifted down and masked
        let b = e.p.register(out).dtype.bits() as usize;
        let mask = (1u64 << b) - 1;
        let on = e.p.register(out).name.clone();
        for (l, &s) in table.iter().enumerate() {
            let v = read(e, src.tensor, &s.to_string());
            let shift = (l % k as usize) * b;
            e.line(format!(
                "{on}[{l}] = (u8)(((u32)({v}) >> {shift}) & {mask}u);"
            ));
            if e.p.register(src.tensor).dtype.bits() == 32 {
                e.unpacked.insert((out, l), (src.tensor, s, shift as u32));
            }
        }
        return;
    }
    if let Some(k) = i.pack_count(e.p) {
        // word `j`: the codes of locals `k j ..` shifted into place, the first lowest
        let b = e.p.register(src.tensor).dtype.bits() as i64;
        let od = e.p.register(out);
        let (on, ty) = (od.name.clone(), super::c_type(od.dtype));
        for (j, &s) in table.iter().enumerate() {
            let parts: Vec<String> = (0..k)
                .map(|x| {
                    let v = read(e, src.tensor, &(s as i64 + x).to_string());
                    format!("((u32)({v}) << {})", x * b)
                })
                .collect();
            e.line(format!("{on}[{j}] = ({ty})({});", parts.join(" | ")));
        }
        return;
    }
    // the copies of unpacked codes come from the same words
    for (l, &s) in table.iter().enumerate() {
        if let Some(&from) = e.unpacked.get(&(src.tensor, s)) {
            e.unpacked.insert((out, l), from);
        }
    }
    let (sd, od) = (e.p.register(src.tensor), e.p.register(out));
    let (sp, op) = (
        storage(sd) == Storage::Packed16,
        storage(od) == Storage::Packed16,
    );
    let on = od.name.clone();
    let n = table.len();
    let identity = table.iter().enumerate().all(|(l, &s)| l == s);
    if identity && (sp == op) {
        // the same registers in the same order
        e.line("#pragma unroll");
        if op {
            let w = word(e, src.tensor, "2 * w");
            e.line(format!(
                "for (int w = 0; w < {}; ++w) {on}[w] = {w};",
                n / 2
            ));
        } else {
            let v = read(e, src.tensor, "l");
            e.line(format!("for (int l = 0; l < {n}; ++l) {on}[l] = {v};"));
        }
        return;
    }
    if op {
        for (w, pair) in table.chunks(2).enumerate() {
            let (a, b) = (pair[0], pair[1]);
            let v = if sp && a % 2 == 0 && b == a + 1 {
                word(e, src.tensor, &a.to_string())
            } else {
                format!(
                    "(u32){} | ((u32){} << 16)",
                    read(e, src.tensor, &a.to_string()),
                    read(e, src.tensor, &b.to_string())
                )
            };
            e.line(format!("{on}[{w}] = {v};"));
        }
    } else {
        for (l, &s) in table.iter().enumerate() {
            let v = read(e, src.tensor, &s.to_string());
            e.line(format!("{on}[{l}] = {v};"));
        }
    }
}

/// The row-major index in a tile of `shape` of an element whose coordinates are a thread's
/// named part (`{prefix}{d}`) plus local offsets `local`, seen through `map` (the element of
/// the repeated source), as a C expression.
fn row_major_index(prefix: &str, local: &[i64], shape: &[i64], map: Repeat) -> String {
    let mut terms = vec![];
    let mut stride = 1;
    for d in (0..shape.len()).rev() {
        let c = match local[d] {
            0 => format!("{prefix}{d}"),
            x => format!("({prefix}{d} + {x})"),
        };
        let c = match map {
            Repeat::Tile { dim, .. } if dim == d => format!("({c} % {})", shape[d]),
            Repeat::Interleave { dim, times } if dim == d => format!("({c} / {times})"),
            _ => c,
        };
        terms.push(if stride == 1 {
            c
        } else {
            format!("{c} * {stride}")
        });
        stride *= shape[d];
    }
    terms.reverse();
    terms.join(" + ")
}

/// `out = convert_layout(src)` through shared memory: every thread stores its elements (one
/// 32-bit word each, row-major), the block meets, every thread loads the elements of its
/// part of `out`, and the block meets again so that the scratch may be written again.
fn convert_through_shared(
    e: &mut Emitter,
    src: &RegView,
    out: RegId,
    scratch: SharedId,
    map: Repeat,
) {
    declare(e, out);
    let p = e.p;
    let off = p
        .shared(scratch)
        .offset
        .expect("scratch tiles are planned before codegen");
    // the scratch holds the source, row-major; each result element reads its source element
    let (dt, shape) = (p.register(out).dtype, p.view_shape(src));
    let sl = src.layout_of(&layout(e, src.tensor));
    let ol = layout(e, out);
    let (tid, threads) = (e.tid().name.clone(), e.tid().threads as i64);
    e.use_helper(Helper::Memory(MemoryHelper::StShared));
    e.use_helper(Helper::Memory(MemoryHelper::LdShared32));
    e.open("");
    e.line(format!("const u32 tilus_scratch = tilus_smem + {off}u;"));
    for (d, terms) in sl.thread_terms().iter().enumerate() {
        let t = e.terms(terms, &tid, threads);
        e.line(format!("const i32 tilus_s{d} = {t};"));
    }
    for l in 0..sl.local_size() {
        let idx = row_major_index("tilus_s", &sl.local_coords(l), &shape, Repeat::Same);
        let v = super::arithmetic::value(e, src.tensor, &l.to_string());
        let put = if dt.is_float() {
            format!("tilus_st_shared_f32(tilus_scratch + (u32)({idx}) * 4u, (float)({v}));")
        } else {
            format!("tilus_st_shared_u32(tilus_scratch + (u32)({idx}) * 4u, (u32)({v}));")
        };
        e.line(put);
    }
    e.line("__syncthreads();");
    for (d, terms) in ol.thread_terms().iter().enumerate() {
        let t = e.terms(terms, &tid, threads);
        e.line(format!("const i32 tilus_o{d} = {t};"));
    }
    let vals: Vec<String> = (0..ol.local_size())
        .map(|l| {
            let idx = row_major_index("tilus_o", &ol.local_coords(l), &shape, map);
            let raw = format!("tilus_ld_shared_u32(tilus_scratch + (u32)({idx}) * 4u)");
            match dt {
                t if t.is_float() => format!("__int_as_float((int){raw})"),
                DType::Bool => format!("({raw} != 0u)"),
                t => format!("(({}){raw})", super::c_type(t)),
            }
        })
        .collect();
    super::arithmetic::store_values(e, out, &vals);
    // the scratch may be written again (a loop) only once every thread has read it
    e.line("__syncthreads();");
    e.close();
}
