//! Emitters for global memory through register tiles: `store_global` and `load_global` with
//! the vector width lowering chose (one bounds check per vector; a vector the view's end cuts
//! falls back to element accesses), and the atomics (`red.global`/`atom.global` through
//! inline PTX, one per element, by the thread holding the element's first copy). Addresses
//! are the view's strides times the coordinates, in 64 bits.

use super::super::{c_type, Core, Emitter, Helper};
use super::{declare, layout, read, storage, word, MemoryHelper, Storage};
use crate::ir::{AtomicOp, DType, Expr, GlobalId, MemoryInst, RegId, RegView};
use crate::layout::RegisterLayout;

/// The C text of a stride in 64-bit arithmetic (`1` for a unit stride, so that the address
/// drops the product); row-major strides print as `(i64)n`.
pub(in crate::codegen) fn stride_text(e: &Emitter, s: &Expr) -> String {
    if let Some(v @ (0 | 1)) = s.eval(&|_| None) {
        return v.to_string();
    }
    match s {
        Expr::Cast(DType::I64, x) if matches!(**x, Expr::Var(..) | Expr::Int(..)) => {
            format!("(i64){}", e.expr(x))
        }
        Expr::Var(..) | Expr::Int(..) if s.dtype() != DType::I64 => {
            format!("(i64){}", e.expr(s))
        }
        _ if s.dtype() == DType::I64 => e.expr(s),
        _ => format!("(i64)({})", e.expr(s)),
    }
}

/// What the walk over a tile's elements in a view has set up: the per-element bounds check
/// pieces and the address of the current vector's first element.
pub(super) struct Walk {
    /// `(u32)(tilus_cD) < (u32)(nD)` for every dimension but the innermost, and for each
    /// dimension of a masked layout, that the coordinate is within the tile.
    pub outer: Vec<String>,
    /// The innermost coordinate and extent.
    pub last: (String, String),
    /// `ptr + (i64)tilus_c0 * s0 + ...` (for packed elements, the byte of the vector's
    /// first one: the element offset times the bits, over 8).
    pub place: String,
    /// Whether a vector may be cut by the view's end (the innermost extent is not a known
    /// multiple of the width), so that it needs the element fallback.
    pub may_straddle: bool,
    /// Whether every element of the tile lies inside the view along the innermost dimension,
    /// known at compile time (a constant offset and extent): no check along it.
    pub last_inside: bool,
}

impl Walk {
    /// The check that the current coordinates, moved by `plus` along the innermost dimension,
    /// are inside the view (`plus = width - 1`: the whole vector).
    pub fn inside(&self, plus: i64) -> String {
        let (c, n) = &self.last;
        let c = if plus > 0 {
            format!("{c} + {plus}")
        } else {
            c.clone()
        };
        let mut all = self.outer.clone();
        if !self.last_inside {
            all.push(format!("(u32)({c}) < (u32)({n})"));
        }
        if all.is_empty() {
            "true".into()
        } else {
            all.join(" && ")
        }
    }

    /// The check that the whole vector of `width` elements at local `l` is inside the view
    /// and, with a mask (a bool tile laid out as the stored one), kept by it: its first
    /// element's flag for a mask with one value per row.
    pub fn whole_and_kept(&self, e: &Emitter, width: i64, mask: Option<&RegView>) -> String {
        let mut whole = self.inside(width - 1);
        if let Some(m) = mask {
            let flags = if row_uniform(e, m) { 1 } else { width };
            let all: Vec<String> = (0..flags)
                .map(|j| read(e, m.tensor, &format!("l + {j}")))
                .collect();
            whole = format!("{whole} && {}", all.join(" && "));
        }
        whole
    }

    /// The checks of the outer dimensions (`true` for a 1-D view).
    pub fn outer_or_true(&self) -> String {
        if self.outer.is_empty() {
            "true".into()
        } else {
            self.outer.join(" && ")
        }
    }
}

/// Opens a block with each dimension's thread coordinate and an unrolled loop over the
/// thread's locals in steps of `width`, and sets up the checks and the address of the
/// current vector. The caller emits the accesses and closes both.
pub(super) fn open_walk(
    e: &mut Emitter,
    g: GlobalId,
    l: &RegisterLayout,
    offsets: &[Expr],
    width: i64,
) -> Walk {
    let d = e.p.global(g);
    let ptr = e.p.var(d.ptr).name.clone();
    let shape = d.shape.clone();
    let strides: Vec<String> = d.strides.iter().map(|s| stride_text(e, s)).collect();
    let (tt, lt, ls) = (l.thread_terms(), l.local_terms(), l.local_size());
    let masked = l.masked_dims();
    let threads = e.tid().threads as i64;
    let tid = e.tid().name.clone();
    let rank = shape.len();
    e.open("");
    for dd in 0..rank {
        let t = format!(
            "{} + {}",
            e.expr(&offsets[dd]),
            e.terms(&tt[dd], &tid, threads)
        );
        e.line(format!("const i32 tilus_t{dd} = {t};"));
    }
    e.line("#pragma unroll");
    e.open(format!("for (int l = 0; l < {ls}; l += {width})"));
    let mut outer = vec![];
    let mut addr = vec![];
    for dd in 0..rank {
        e.line(format!(
            "const i32 tilus_c{dd} = tilus_t{dd} + {};",
            e.terms(&lt[dd], "l", ls)
        ));
        if dd + 1 < rank {
            // one unsigned comparison also rejects negative coordinates
            outer.push(format!(
                "(u32)(tilus_c{dd}) < (u32)({})",
                e.expr(&shape[dd])
            ));
        }
        // a masked layout's registers beyond the tile hold nothing (whole vectors: the
        // padding is a whole number of them)
        if let Some(&(_, n)) = masked.iter().find(|(d, _)| *d == dd) {
            outer.push(format!(
                "(u32)(tilus_c{dd} - ({})) < {n}u",
                e.expr(&offsets[dd])
            ));
        }
        match strides[dd].as_str() {
            // a zero stride (a broadcast view) adds nothing
            "0" => {}
            "1" => addr.push(format!("tilus_c{dd}")),
            s => addr.push(format!("(i64)tilus_c{dd} * {s}")),
        }
    }
    let n_last = shape[rank - 1].eval(&|_| None);
    let at_last = offsets[rank - 1].eval(&|_| None);
    // (a masked layout's kept elements end at its shape; its padding is checked above)
    let last_inside = match (at_last, n_last) {
        (Some(at), Some(n)) => at >= 0 && at + l.shape()[rank - 1] <= n,
        _ => false,
    };
    let bits = d.dtype.bits();
    Walk {
        outer,
        last: (format!("tilus_c{}", rank - 1), e.expr(&shape[rank - 1])),
        place: if addr.is_empty() {
            ptr
        } else if bits < 8 {
            // a vector of packed elements starts on a byte (the verifier saw to it)
            format!("{ptr} + ((i64)({}) * {bits} >> 3)", addr.join(" + "))
        } else {
            format!("{ptr} + {}", addr.join(" + "))
        },
        may_straddle: width > 1 && !last_inside && n_last.is_none_or(|n| n % width != 0),
        last_inside,
    }
}

pub(super) fn close_walk(e: &mut Emitter) {
    e.close();
    e.close();
}

/// Opens `if (..)` around the code that only the thread holding each element's first copy
/// runs (replicated copies do not repeat an update; a group larger than the layout wraps
/// around); whether it opened one (the caller closes it).
pub(in crate::codegen) fn open_first_copy(e: &mut Emitter, l: &RegisterLayout) -> bool {
    let tid = e.tid().name.clone();
    let threads = e.tid().threads as i64;
    let mut first: Vec<String> = l
        .replica_terms()
        .iter()
        .map(|t| format!("{} == 0", e.terms(std::slice::from_ref(t), &tid, threads)))
        .collect();
    if l.num_threads() < threads {
        first.push(format!("{tid} < {}", l.num_threads()));
    }
    if first.is_empty() {
        return false;
    }
    e.open(format!("if ({})", first.join(" && ")));
    true
}

/// The C text of a constant element of `dtype`: the bits of a 16-bit float, a float literal,
/// an integer.
pub(super) fn constant(e: &Emitter, v: &Expr, dtype: DType) -> String {
    let x = match v {
        Expr::Float(b, _) => f64::from_bits(*b),
        Expr::Int(i, _) => *i as f64,
        _ => 0.0,
    };
    match dtype {
        DType::F16 => format!("(u16)0x{:04x}", half::f16::from_f64(x).to_bits()),
        DType::BF16 => format!("(u16)0x{:04x}", half::bf16::from_f64(x).to_bits()),
        DType::F32 => e.expr(&Expr::Float(x.to_bits(), DType::F32)),
        t if t.is_lowp() => format!("(u8)0x{:02x}", lowp_code(x, t)),
        t => e.expr(&Expr::Int(crate::ir::wrap_to(x as i64, t), t)),
    }
}

/// The code of a constant `x` in low-precision type `t`: rounded from the f32 the value is
/// written as (floats), or its integer part's low bits (integers).
pub(in crate::codegen) fn lowp_code(x: f64, t: DType) -> u64 {
    match t.float_format() {
        Some(f) => f.encode(x as f32 as f64) as u64,
        None => (crate::ir::wrap_to(x as i64, t) as u64) & ((1u64 << t.bits()) - 1),
    }
}

/// Sets local element `l` (a C expression) of tile `r` to `v` (a C value of the element's
/// storage type). Packed 16-bit pairs are set low half first, as every walk does.
pub(super) fn set(e: &mut Emitter, r: RegId, l: &str, v: &str) {
    let d = e.p.register(r);
    let name = d.name.clone();
    match storage(d) {
        Storage::Packed16 => e.line(format!(
            "if ((({l}) & 1) == 0) {name}[({l}) >> 1] = (u32){v}; else {name}[({l}) >> 1] |= (u32){v} << 16;"
        )),
        Storage::Plain => e.line(format!("{name}[{l}] = {v};")),
    }
}

/// Whether mask `m` has one value along each row (as stored: untransposed).
fn row_uniform(e: &Emitter, m: &RegView) -> bool {
    !m.transposed && e.row_uniform.contains(&m.tensor)
}

pub(super) fn store_global(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::StoreGlobal {
        dst,
        src,
        offsets,
        vector,
        mask,
    } = i
    else {
        return;
    };
    let width = vector.expect("vector widths are chosen by lowering") as i64;
    let dtype = e.p.global(*dst).dtype;
    if dtype.is_subbyte() {
        return super::packed::store_packed(e, (*dst, src, offsets, mask.as_ref()), width);
    }
    let rank = e.p.global(*dst).shape.len();
    let l = layout(e, src.tensor).permute(&src.perm(rank));
    let w = open_walk(e, *dst, &l, offsets, width);
    let place = w.place.clone();
    // the whole vector must be inside the view (and kept by the mask)
    let whole = w.whole_and_kept(e, width, mask.as_ref());
    e.open(format!("if ({whole})"));
    let elem_bytes = dtype.nbytes() as i64;
    let bytes = width * elem_bytes;
    let value = |e: &mut Emitter, lidx: &str| -> String {
        // value of one 32-bit word starting at local `lidx`
        if dtype.bits() == 16 {
            word(e, src.tensor, lidx)
        } else if dtype.bits() == 8 {
            // four byte-wide elements (codes, or booleans), the first in the low byte
            let parts: Vec<String> = (0..4)
                .map(|k| {
                    let v = read(e, src.tensor, &format!("{lidx} + {k}"));
                    if k == 0 {
                        format!("(u32)(u8){v}")
                    } else {
                        format!("((u32)(u8){v} << {})", 8 * k)
                    }
                })
                .collect();
            format!("({})", parts.join(" | "))
        } else {
            e.use_helper(Helper::Core(Core::FloatBits));
            let v = read(e, src.tensor, lidx);
            if dtype == DType::F32 {
                format!("tilus_f32_bits({v})")
            } else {
                format!("(u32){v}")
            }
        }
    };
    match bytes {
        2 if dtype.bits() == 8 => {
            let (a, b) = (read(e, src.tensor, "l"), read(e, src.tensor, "l + 1"));
            e.line(format!(
                "*reinterpret_cast<u16*>({place}) = (u16)((u32)(u8){a} | ((u32)(u8){b} << 8));"
            ));
        }
        4 if dtype.bits() <= 16 => {
            let v = value(e, "l");
            e.line(format!("*reinterpret_cast<u32*>({place}) = {v};"));
        }
        8 => {
            let per_word = 4 / elem_bytes;
            let lo = value(e, "l");
            let hi = value(e, &format!("l + {per_word}"));
            e.line(format!(
                "reinterpret_cast<u64*>({place})[0] = (u64){lo} | ((u64){hi} << 32);"
            ));
        }
        16 => {
            e.use_helper(Helper::Memory(MemoryHelper::Vec));
            let per_word = 4 / elem_bytes;
            let words: Vec<String> = (0..4)
                .map(|w| value(e, &format!("l + {}", w * per_word)))
                .collect();
            e.line(format!(
                "*reinterpret_cast<tilus_vec<u32, 4>*>({place}) = tilus_vec<u32, 4>{{{{{}}}}};",
                words.join(", ")
            ));
        }
        _ => {
            let v = read(e, src.tensor, "l");
            e.line(format!("*({place}) = {v};"));
        }
    }
    e.close();
    // a mask with one value per row keeps or drops a vector whole: only the view's end may
    // cut one
    let partial_mask = mask.filter(|m| !row_uniform(e, m) || w.may_straddle);
    if let Some(m) = partial_mask {
        // some of the vector's elements: those inside the view that the mask keeps
        e.open("else");
        e.line("#pragma unroll");
        e.open(format!("for (int j = 0; j < {width}; ++j)"));
        let inside = format!(
            "{} && (u32)({} + j) < (u32)({}) && {}",
            w.outer_or_true(),
            w.last.0,
            w.last.1,
            read(e, m.tensor, "l + j")
        );
        let v = read(e, src.tensor, "l + j");
        e.line(format!("if ({inside}) ({place})[j] = {v};"));
        e.close();
        e.close();
    } else if w.may_straddle {
        // the view's end cuts the vector: the elements inside, one by one
        e.open(format!("else if ({})", w.inside(0)));
        let v = read(e, src.tensor, "l");
        e.line(format!("*({place}) = {v};"));
        e.line("#pragma unroll");
        e.open(format!("for (int j = 1; j < {width}; ++j)"));
        let inside = format!("(u32)({} + j) < (u32)({})", w.last.0, w.last.1);
        let v = read(e, src.tensor, "l + j");
        e.line(format!("if ({inside}) ({place})[j] = {v};"));
        e.close();
        e.close();
    }
    close_walk(e);
}

pub(super) fn load_global(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::LoadGlobal {
        src,
        out,
        offsets,
        fill,
        vector,
    } = i
    else {
        return;
    };
    let dtype = e.p.global(*src).dtype;
    if dtype.is_subbyte() {
        return super::packed::load_packed(e, i);
    }
    declare(e, *out);
    let width = vector.expect("vector widths are chosen by lowering") as i64;
    let l = layout(e, *out);
    let packed = storage(e.p.register(*out)) == Storage::Packed16;
    let name = e.reg_name(*out);
    let fill = constant(e, fill, dtype);
    let w = open_walk(e, *src, &l, offsets, width);
    let place = w.place.clone();
    e.open(format!("if ({})", w.inside(width - 1)));
    let bytes = width * dtype.nbytes() as i64;
    if width == 1 {
        set(e, *out, "l", &format!("*({place})"));
    } else {
        e.use_helper(Helper::Memory(MemoryHelper::Vec));
        // packed 16-bit tiles take the vector's 32-bit words as they are
        let (ty, n, dst) = if packed {
            ("u32", bytes / 4, format!("{name}[(l >> 1) + "))
        } else {
            (c_type(dtype), width, format!("{name}[l + "))
        };
        e.line(format!(
            "const tilus_vec<{ty}, {n}> v = *reinterpret_cast<const tilus_vec<{ty}, {n}>*>({place});"
        ));
        for k in 0..n {
            e.line(format!("{dst}{k}] = v.v[{k}];"));
        }
    }
    e.close();
    e.open("else");
    if w.may_straddle {
        // the view's end may cut the vector: each element inside is read, the rest filled
        e.line("#pragma unroll");
        e.open(format!("for (int j = 0; j < {width}; ++j)"));
        let inside = format!(
            "{} && (u32)({} + j) < (u32)({})",
            w.outer_or_true(),
            w.last.0,
            w.last.1
        );
        let v = format!("({inside}) ? ({place})[j] : {fill}");
        set(e, *out, "l + j", &format!("({v})"));
        e.close();
    } else {
        // the whole vector is outside the view
        if width == 1 {
            set(e, *out, "l", &fill);
        } else {
            e.line("#pragma unroll");
            e.open(format!("for (int j = 0; j < {width}; ++j)"));
            set(e, *out, "l + j", &fill);
            e.close();
        }
    }
    e.close();
    close_walk(e);
}

/// The PTX type of an atomic's operation on `dtype` (`.s32`, `.f32`, `.noftz.f16`, ...) and
/// the inline-assembly constraint of its operands.
fn ptx_type(op: AtomicOp, dtype: DType) -> (&'static str, &'static str) {
    match (op, dtype) {
        (AtomicOp::Exchange | AtomicOp::Cas, DType::F32) => ("b32", "f"),
        (AtomicOp::Exchange | AtomicOp::Cas, _) => ("b32", "r"),
        (_, DType::F32) => ("f32", "f"),
        (_, DType::I32) => ("s32", "r"),
        (_, DType::U32) => ("u32", "r"),
        (_, DType::F16) => ("noftz.f16", "h"),
        (_, DType::BF16) => ("noftz.bf16", "h"),
        (_, _) => ("b64", "l"),
    }
}

/// The C name of an atomic helper: `tilus_red_add_f32`, `tilus_atom_cas_u32`, ...
fn atomic_helper(op: AtomicOp, dtype: DType, returns: bool) -> String {
    let kind = if returns { "atom" } else { "red" };
    format!("tilus_{kind}_{}_{}", op.name(), dtype.name())
}

/// Uses the helper of an atomic (and those it is built from) and returns its name.
fn use_atomic(e: &mut Emitter, op: AtomicOp, dtype: DType, returns: bool) -> String {
    if dtype == DType::F32 && matches!(op, AtomicOp::Min | AtomicOp::Max) {
        // f32 min/max go through the integer atomics on the bits
        let max = op == AtomicOp::Max;
        let (pos, neg) = if max {
            (AtomicOp::Max, AtomicOp::Min)
        } else {
            (AtomicOp::Min, AtomicOp::Max)
        };
        e.use_helper(Helper::Core(Core::FloatBits));
        for (o, t) in [(pos, DType::I32), (neg, DType::U32)] {
            e.use_helper(Helper::Memory(MemoryHelper::Atomic {
                op: o,
                dtype: t,
                returns,
            }));
        }
        e.use_helper(Helper::Memory(MemoryHelper::FloatMinMax { max, returns }));
    } else {
        e.use_helper(Helper::Memory(MemoryHelper::Atomic { op, dtype, returns }));
    }
    atomic_helper(op, dtype, returns)
}

/// The C++ text of the f32 min or max: non-negative floats order as signed integers, negative
/// ones in reverse as unsigned integers, so a value with the sign bit clear takes the signed
/// max (min) of the bits, one with it set the unsigned min (max).
pub(super) fn float_min_max_text(max: bool, returns: bool) -> String {
    let op = if max { AtomicOp::Max } else { AtomicOp::Min };
    let name = atomic_helper(op, DType::F32, returns);
    let (pos, neg) = if max { ("max", "min") } else { ("min", "max") };
    let kind = if returns { "atom" } else { "red" };
    let (ty, ret, end) = if returns {
        ("float", "return __int_as_float((i32)", ")")
    } else {
        ("void", "", "")
    };
    format!(
        "// f32 {} through integer atomics on the bits: non-negative floats order as signed\n\
         // integers, negative ones in reverse as unsigned integers.\n\
         static __device__ __forceinline__ {ty} {name}(float* p, float v) {{\n  \
         const u32 b = tilus_f32_bits(v);\n  \
         if ((b & 0x80000000u) == 0) {{ {ret}tilus_{kind}_{pos}_i32((i32*)p, (i32)b){end}; }}\n  \
         else {{ {ret}tilus_{kind}_{neg}_u32((u32*)p, b){end}; }}\n}}\n",
        op.name()
    )
}

/// The C++ text of an atomic helper of PTX.
pub(super) fn atomic_text(op: AtomicOp, dtype: DType, returns: bool) -> String {
    let name = atomic_helper(op, dtype, returns);
    let t = c_type(dtype);
    let (ptx, c) = ptx_type(op, dtype);
    let op_name = match op {
        AtomicOp::Exchange => "exch",
        o => o.name(),
    };
    match (op, returns) {
        (AtomicOp::Cas, _) => format!(
            "static __device__ __forceinline__ {t} {name}({t}* p, {t} compare, {t} v) {{\n  \
             {t} old;\n  \
             asm volatile(\"atom.global.cas.{ptx} %0, [%1], %2, %3;\" : \"={c}\"(old) : \"l\"(p), \"{c}\"(compare), \"{c}\"(v) : \"memory\");\n  \
             return old;\n}}\n"
        ),
        (_, true) => format!(
            "static __device__ __forceinline__ {t} {name}({t}* p, {t} v) {{\n  \
             {t} old;\n  \
             asm volatile(\"atom.global.{op_name}.{ptx} %0, [%1], %2;\" : \"={c}\"(old) : \"l\"(p), \"{c}\"(v) : \"memory\");\n  \
             return old;\n}}\n"
        ),
        (_, false) => format!(
            "static __device__ __forceinline__ void {name}({t}* p, {t} v) {{\n  \
             asm volatile(\"red.global.{op_name}.{ptx} [%0], %1;\" :: \"l\"(p), \"{c}\"(v) : \"memory\");\n}}\n"
        ),
    }
}

pub(super) fn atomic_global(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::AtomicGlobal {
        op,
        dst,
        src,
        compare,
        out,
        offsets,
    } = i
    else {
        return;
    };
    if let Some(o) = out {
        declare(e, *o);
    }
    let dtype = e.p.global(*dst).dtype;
    let rank = e.p.global(*dst).shape.len();
    let l = layout(e, src.tensor).permute(&src.perm(rank));
    let returns = out.is_some();
    let f = use_atomic(e, *op, dtype, returns);
    // one thread per element: the first copy of a replicated layout, and no thread past the
    // layout's (a larger group wraps around)
    let guard = open_first_copy(e, &l);
    let w = open_walk(e, *dst, &l, offsets, 1);
    let place = w.place.clone();
    let v = read(e, src.tensor, "l");
    let args = match compare {
        Some(c) => format!("{place}, {}, {v}", read(e, c.tensor, "l")),
        None => format!("{place}, {v}"),
    };
    match out {
        None => {
            e.line(format!("if ({}) {f}({args});", w.inside(0)));
        }
        Some(o) => {
            let zero = constant(e, &Expr::Int(0, dtype), dtype);
            let old = format!("(({}) ? {f}({args}) : {zero})", w.inside(0));
            set(e, *o, "l", &old);
        }
    }
    close_walk(e);
    if guard {
        e.close();
    }
}

/// One element of a view as C sees it: the bounds checks left at run time (none when the
/// index and the view are constants) and the pointer to it; `None` when the index is a
/// constant outside the view.
struct ScalarAt {
    inside: Vec<String>,
    ptr: String,
}

fn scalar_at(e: &mut Emitter, d: &crate::ir::GlobalDecl, index: &[Expr]) -> Option<ScalarAt> {
    let ptr = e.p.var(d.ptr).name.clone();
    let mut inside = vec![];
    let mut addr = vec![];
    for (k, x) in index.iter().enumerate() {
        let (cx, cn) = (x.eval(&|_| None), d.shape[k].eval(&|_| None));
        match (cx, cn) {
            (Some(i), Some(n)) if (0..n).contains(&i) => {}
            (Some(_), Some(_)) => return None,
            _ => inside.push(format!(
                "(u32)({}) < (u32)({})",
                e.expr(x),
                e.expr(&d.shape[k])
            )),
        }
        let stride = d.strides[k].eval(&|_| None);
        match (cx, stride) {
            (Some(0), _) | (_, Some(0)) => {}
            (Some(i), Some(st)) => addr.push(i.saturating_mul(st).to_string()),
            (_, Some(1)) => addr.push(e.expr(x)),
            _ => addr.push(format!(
                "(i64)({}) * {}",
                e.expr(x),
                stride_text(e, &d.strides[k])
            )),
        }
    }
    let ptr = if addr.is_empty() {
        ptr
    } else {
        format!("{ptr} + {}", addr.join(" + "))
    };
    Some(ScalarAt { inside, ptr })
}

/// `const T name = (checks) ? value : zero;`, or without the checks where none are left.
fn define_checked(e: &mut Emitter, dtype: DType, name: &str, inside: &[String], value: &str) {
    let t = c_type(dtype);
    let zero = constant(e, &Expr::Int(0, dtype), dtype);
    if inside.is_empty() {
        e.line(format!("const {t} {name} = {value};"));
    } else {
        let inside = inside.join(" && ");
        e.line(format!("const {t} {name} = ({inside}) ? {value} : {zero};"));
    }
}

pub(super) fn atomic_scalar(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::AtomicScalar {
        op,
        dst,
        index,
        value,
        compare,
        out,
    } = i
    else {
        return;
    };
    let d = e.p.global(*dst).clone();
    let dtype = d.dtype;
    let name = e.p.var(*out).name.clone();
    let Some(at) = scalar_at(e, &d, index) else {
        // always outside the view: nothing is updated
        let zero = constant(e, &Expr::Int(0, dtype), dtype);
        define_checked(e, dtype, &name, &[], &zero);
        return;
    };
    let f = use_atomic(e, *op, dtype, true);
    let mut args = at.ptr;
    if let Some(c) = compare {
        args = format!("{args}, {}", e.expr(c));
    }
    let v = e.expr(value);
    define_checked(e, dtype, &name, &at.inside, &format!("{f}({args}, {v})"));
}

/// `load_global_scalar`: every thread reads the element (0 outside the view).
pub(super) fn load_scalar(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::LoadScalar { src, index, out } = i else {
        return;
    };
    let d = e.p.global(*src).clone();
    let dtype = d.dtype;
    let name = e.p.var(*out).name.clone();
    match scalar_at(e, &d, index) {
        Some(at) => define_checked(e, dtype, &name, &at.inside, &format!("*({})", at.ptr)),
        None => define_checked(
            e,
            dtype,
            &name,
            &[],
            &constant(e, &Expr::Int(0, dtype), dtype),
        ),
    }
}

/// `store_global_at` / `atomic_add_at`: each element of the values to the coordinates its
/// index tiles hold (the same layout, so register `l` of each is the same element), skipped
/// outside the view; one thread per element (the first copy of a replicated layout).
pub(super) fn scatter_global(e: &mut Emitter, i: &MemoryInst) {
    let MemoryInst::ScatterGlobal {
        dst,
        src,
        index,
        add,
    } = i
    else {
        return;
    };
    let d = e.p.global(*dst);
    let (dtype, ptr) = (d.dtype, e.p.var(d.ptr).name.clone());
    let shape: Vec<String> = d.shape.iter().map(|s| e.expr(s)).collect();
    let strides: Vec<String> = d.strides.iter().map(|s| stride_text(e, s)).collect();
    let rank = shape.len();
    let l = layout(e, src.tensor);
    let l = l.permute(&src.perm(l.rank()));
    let f = add.then(|| use_atomic(e, AtomicOp::Add, dtype, false));
    let guard = open_first_copy(e, &l);
    e.line("#pragma unroll");
    e.open(format!("for (int l = 0; l < {}; ++l)", l.local_size()));
    let mut inside = vec![];
    let mut addr = vec![];
    for (dd, v) in index.iter().enumerate().take(rank) {
        let c = read(e, v.tensor, "l");
        e.line(format!("const i32 tilus_c{dd} = {c};"));
        inside.push(format!("(u32)(tilus_c{dd}) < (u32)({})", shape[dd]));
        match strides[dd].as_str() {
            "0" => {}
            "1" => addr.push(format!("tilus_c{dd}")),
            s => addr.push(format!("(i64)tilus_c{dd} * {s}")),
        }
    }
    let place = if addr.is_empty() {
        ptr
    } else {
        format!("{ptr} + {}", addr.join(" + "))
    };
    let v = read(e, src.tensor, "l");
    let access = match &f {
        Some(f) => format!("{f}({place}, {v})"),
        None => format!("*({place}) = {v}"),
    };
    let cond = if inside.is_empty() {
        "true".to_string()
    } else {
        inside.join(" && ")
    };
    e.line(format!("if ({cond}) {access};"));
    e.close();
    if guard {
        e.close();
    }
}
