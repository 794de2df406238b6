//! Emitters for elementwise register operations (f16 operations in pairs: `f16_pairs.rs`).

mod f16_pairs;

use super::memory::{read, storage, MemoryHelper, Storage};
use super::{Emitter, Helper};
use crate::ir::{
    ArithInst, BinaryOp, DType, RandomKind, ReduceOp, RegId, RegView, ScanOp, SharedId, TileExpr,
    UnaryOp,
};
use crate::layout::RegisterLayout;

pub(super) fn emit(e: &mut Emitter, i: &ArithInst) {
    match i {
        ArithInst::Cast { src, out } => emit_cast(e, src, out),
        ArithInst::Map { expr, out } => emit_map(e, expr, *out, true),
        ArithInst::Assign { expr, out } => emit_map(e, expr, *out, false),
        ArithInst::Reduce {
            src,
            op,
            dim,
            out,
            scratch,
            ..
        } => emit_reduce(e, src, *op, *dim, *out, *scratch),
        ArithInst::Scan {
            src,
            op,
            dim,
            exclusive,
            out,
            scratch,
        } => {
            let shared = i.scans_through_shared(e.p);
            emit_scan(
                e,
                src,
                (*op, *dim, *exclusive),
                *out,
                shared.then_some(*scratch),
            );
        }
    }
}

/// `a op b` in the compute type of `t`, rounded as written.
fn scan_combine(op: ScanOp, t: DType, a: &str, b: &str) -> String {
    match (op, t.is_float()) {
        (ScanOp::Sum, true) => format!("__fadd_rn({a}, {b})"),
        (ScanOp::Prod, true) => format!("__fmul_rn({a}, {b})"),
        (ScanOp::Max, true) => format!("fmaxf({a}, {b})"),
        (ScanOp::Min, true) => format!("fminf({a}, {b})"),
        (ScanOp::Sum, false) => format!("({a} + {b})"),
        (ScanOp::Prod, false) => format!("({a} * {b})"),
        (ScanOp::Max, false) => format!("max({a}, {b})"),
        (ScanOp::Min, false) => format!("min({a}, {b})"),
    }
}

/// The value an exclusive scan gives a line's first element.
fn scan_identity(op: ScanOp, t: DType) -> String {
    let (lo, hi) = match t {
        DType::I32 | DType::Int(_) => ("(-2147483647 - 1)", "2147483647"),
        DType::U32 | DType::UInt(_) => ("0u", "0xffffffffu"),
        _ => ("__int_as_float(0xff800000)", "__int_as_float(0x7f800000)"),
    };
    match op {
        ScanOp::Sum if t.is_float() => "0.0f".into(),
        ScanOp::Prod if t.is_float() => "1.0f".into(),
        ScanOp::Sum => format!("(({})0)", compute_c_type(t)),
        ScanOp::Prod => format!("(({})1)", compute_c_type(t)),
        ScanOp::Max => lo.into(),
        ScanOp::Min => hi.into(),
    }
}

/// `out = scan(src)` along `dim`: where each thread holds whole lines, a running value over
/// each line's locals in the order of their coordinate; otherwise every thread stores its
/// elements into `scratch` (row-major, a 32-bit word each), the block meets, thread `j` scans
/// lines `j, j + threads, ..` in place, the block meets, every thread loads its results, and
/// the block meets again before the scratch is reused.
fn emit_scan(
    e: &mut Emitter,
    src: &RegView,
    (op, dim, exclusive): (ScanOp, usize, bool),
    out: RegId,
    scratch: Option<SharedId>,
) {
    super::memory::declare(e, out);
    let t = e.p.register(src.tensor).dtype;
    let ty = compute_c_type(t);
    let sl = view_layout(e, src);
    let ls = sl.local_size();
    e.open("");
    let Some(scratch) = scratch else {
        // lines of locals, each in the order of its coordinate along `dim`
        // (the line's other coordinates, its (coordinate along `dim`, local) pairs)
        type Line = (Vec<i64>, Vec<(i64, usize)>);
        let mut lines: Vec<Line> = vec![];
        for l in 0..ls {
            let mut c = sl.local_coords(l);
            let at = c[dim];
            c[dim] = 0;
            match lines.iter_mut().find(|(k, _)| *k == c) {
                Some((_, v)) => v.push((at, l as usize)),
                None => lines.push((c, vec![(at, l as usize)])),
            }
        }
        let mut vals = vec![String::new(); ls as usize];
        for (_, mut line) in lines {
            line.sort_unstable();
            let mut acc: Option<String> = None;
            for (_, l) in line {
                let v = value(e, src.tensor, &l.to_string());
                let next = match &acc {
                    None => v,
                    Some(a) => scan_combine(op, t, a, &v),
                };
                e.line(format!("const {ty} tilus_r{l} = {next};"));
                vals[l] = if exclusive {
                    acc.clone().unwrap_or_else(|| scan_identity(op, t))
                } else {
                    format!("tilus_r{l}")
                };
                acc = Some(format!("tilus_r{l}"));
            }
        }
        store_values(e, out, &vals);
        e.close();
        return;
    };
    let shape = e.p.view_shape(src);
    let off =
        e.p.shared(scratch)
            .offset
            .expect("scratch tiles are planned before codegen");
    let (n, inner) = (shape[dim], shape[dim + 1..].iter().product::<i64>());
    let lines = shape.iter().product::<i64>() / n.max(1);
    let (tid, threads) = (e.tid().name.clone(), e.tid().threads as i64);
    e.use_helper(Helper::Memory(MemoryHelper::StShared));
    e.use_helper(Helper::Memory(MemoryHelper::LdShared32));
    e.line(format!("const u32 tilus_scratch = tilus_smem + {off}u;"));
    let put = |addr: &str, v: &str| {
        if t.is_float() {
            format!("tilus_st_shared_f32({addr}, {v});")
        } else {
            format!("tilus_st_shared_u32({addr}, (u32)({v}));")
        }
    };
    let get = |addr: &str| {
        let raw = format!("tilus_ld_shared_u32({addr})");
        if t.is_float() {
            format!("__int_as_float((int){raw})")
        } else {
            format!("(({ty}){raw})")
        }
    };
    // 1. every thread's elements, row-major
    for (d, terms) in sl.thread_terms().iter().enumerate() {
        let x = e.terms(terms, &tid, threads);
        e.line(format!("const i32 tilus_s{d} = {x};"));
    }
    for l in 0..ls {
        let idx = row_major(&sl.local_coords(l), &shape, "tilus_s");
        let v = value(e, src.tensor, &l.to_string());
        e.line(put(&format!("tilus_scratch + (u32)({idx}) * 4u"), &v));
    }
    e.line("__syncthreads();");
    // 2. one thread per line, in place
    e.open(format!(
        "for (int tilus_line = {tid}; tilus_line < {lines}; tilus_line += {threads})"
    ));
    e.line(format!(
        "const u32 tilus_at = tilus_scratch + (u32)((tilus_line / {inner}) * {} + tilus_line % {inner}) * 4u;",
        n * inner
    ));
    e.line(format!("{ty} tilus_acc = {};", scan_identity(op, t)));
    e.open(format!("for (int i = 0; i < {n}; ++i)"));
    let at = format!("tilus_at + (u32)(i * {inner}) * 4u");
    e.line(format!("const {ty} tilus_x = {};", get(&at)));
    let first = "i == 0 ? tilus_x : ";
    let next = format!("{first}{}", scan_combine(op, t, "tilus_acc", "tilus_x"));
    if exclusive {
        e.line(put(&at, "tilus_acc"));
        e.line(format!("tilus_acc = {next};"));
    } else {
        e.line(format!("tilus_acc = {next};"));
        e.line(put(&at, "tilus_acc"));
    }
    e.close();
    e.close();
    e.line("__syncthreads();");
    // 3. every thread's results
    let vals: Vec<String> = (0..ls)
        .map(|l| {
            let idx = row_major(&sl.local_coords(l), &shape, "tilus_s");
            get(&format!("tilus_scratch + (u32)({idx}) * 4u"))
        })
        .collect();
    store_values(e, out, &vals);
    // the scratch may be written again (a loop) only once every thread has read it
    e.line("__syncthreads();");
    e.close();
}

/// The row-major index, as a C expression, of the element whose coordinates are a thread's
/// named part (`{prefix}{d}`) plus `local`.
fn row_major(local: &[i64], shape: &[i64], prefix: &str) -> String {
    let mut terms = vec![];
    let mut stride = 1;
    for d in (0..shape.len()).rev() {
        let c = match local[d] {
            0 => format!("{prefix}{d}"),
            x => format!("({prefix}{d} + {x})"),
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

/// The C value of a tile's local element `l` (a C expression) in its compute type: `float` for
/// every float type (16-bit floats convert exactly), the integer or `bool` otherwise.
pub(super) fn value(e: &mut Emitter, r: RegId, l: &str) -> String {
    let t = e.p.register(r).dtype;
    let raw = read(e, r, l);
    match t {
        DType::F16 => {
            e.use_helper(Helper::Arith(ArithHelper::CvtF16));
            format!("tilus_f16_to_f32({raw})")
        }
        DType::BF16 => {
            e.use_helper(Helper::Arith(ArithHelper::CvtBf16));
            format!("tilus_bf16_to_f32({raw})")
        }
        t if t.is_lowp() => super::lowp::decode(e, t, &raw),
        _ => raw,
    }
}

/// The C expression of a tile expression at one output element: `idx` gives, for each tile the
/// expression reads (in order), the C index of its local element.
fn expr_c(
    e: &mut Emitter,
    x: &TileExpr,
    idx: &mut std::slice::Iter<'_, String>,
    coords: &[String],
) -> String {
    let p = e.p;
    match x {
        TileExpr::Tile(v) => {
            let l = idx.next().cloned().unwrap_or_else(|| "0".into());
            value(e, v.tensor, &l)
        }
        TileExpr::Scalar(s) => {
            let c = e.expr(s);
            if s.dtype().is_float() {
                format!("((float)({c}))")
            } else {
                c
            }
        }
        TileExpr::Unary(op, a) => {
            let t = a.dtype(p);
            let a = expr_c(e, a, idx, coords);
            let float = t.is_float();
            match op {
                UnaryOp::Neg => format!("(-{a})"),
                UnaryOp::Abs if float => format!("fabsf({a})"),
                UnaryOp::Abs => format!("abs({a})"),
                UnaryOp::Exp => format!("expf({a})"),
                UnaryOp::Exp2 => format!("exp2f({a})"),
                UnaryOp::ExpApprox => format!("__expf({a})"),
                UnaryOp::Exp2Approx => {
                    e.use_helper(Helper::Arith(ArithHelper::Exp2Approx));
                    format!("tilus_exp2_approx({a})")
                }
                UnaryOp::Log => format!("logf({a})"),
                UnaryOp::Sqrt => format!("sqrtf({a})"),
                UnaryOp::Rsqrt => format!("rsqrtf({a})"),
                UnaryOp::Sin => format!("sinf({a})"),
                UnaryOp::Cos => format!("cosf({a})"),
                UnaryOp::Round => format!("rintf({a})"),
                UnaryOp::Square if float => format!("__fmul_rn({a}, {a})"),
                UnaryOp::Square => format!("({a} * {a})"),
                UnaryOp::Tanh => format!("tanhf({a})"),
                UnaryOp::RecipApprox => {
                    e.use_helper(Helper::Arith(ArithHelper::RecipApprox));
                    format!("tilus_recip_approx({a})")
                }
                UnaryOp::TanhApprox => {
                    e.use_helper(Helper::Arith(ArithHelper::TanhApprox));
                    format!("tilus_tanh_approx({a})")
                }
                UnaryOp::Not => format!("(!{a})"),
            }
        }
        TileExpr::Binary(op, a, b) => {
            let float = a.dtype(p).is_float();
            let (a, b) = (expr_c(e, a, idx, coords), expr_c(e, b, idx, coords));
            match op {
                // rounded as written: no contraction into an fma, as the interpreter computes
                BinaryOp::Add if float => format!("__fadd_rn({a}, {b})"),
                BinaryOp::Sub if float => format!("__fsub_rn({a}, {b})"),
                BinaryOp::Mul if float => format!("__fmul_rn({a}, {b})"),
                BinaryOp::Div if float => format!("__fdiv_rn({a}, {b})"),
                BinaryOp::Max if float => format!("fmaxf({a}, {b})"),
                BinaryOp::Min if float => format!("fminf({a}, {b})"),
                BinaryOp::Max => format!("max({a}, {b})"),
                BinaryOp::Min => format!("min({a}, {b})"),
                op => format!("({a} {} {b})", op.name()),
            }
        }
        TileExpr::Select(c, a, b) => {
            let c = expr_c(e, c, idx, coords);
            let (a, b) = (expr_c(e, a, idx, coords), expr_c(e, b, idx, coords));
            format!("({c} ? {a} : {b})")
        }
        TileExpr::MulAdd(a, b, c) => {
            let float = a.dtype(p).is_float();
            let a = expr_c(e, a, idx, coords);
            let (b, c) = (expr_c(e, b, idx, coords), expr_c(e, c, idx, coords));
            if float {
                format!("__fmaf_rn({a}, {b}, {c})")
            } else {
                format!("({a} * {b} + {c})")
            }
        }
        TileExpr::Cast(t, a) => {
            let from = a.dtype(p);
            // a tile of low-precision codes straight to a float (small integers without the
            // slow conversion)
            if let (TileExpr::Tile(v), true) = (a.as_ref(), t.is_float() && from.is_lowp()) {
                let l = idx.next().cloned().unwrap_or_else(|| "0".into());
                return lowp_float_value(e, v.tensor, &l, *t);
            }
            let a = expr_c(e, a, idx, coords);
            cast_c(e, &a, from, *t)
        }
        TileExpr::Bitcast(to, a) => {
            let from = a.dtype(p);
            let a = expr_c(e, a, idx, coords);
            bitcast_c(e, &a, from, *to)
        }
        TileExpr::Random {
            kind,
            seed,
            counter,
        } => {
            e.use_helper(Helper::Arith(ArithHelper::Philox));
            let s = e.expr(seed);
            let c = expr_c(e, counter, idx, coords);
            let f = match kind {
                RandomKind::Uniform => "tilus_rand",
                RandomKind::Normal => "tilus_randn",
                RandomKind::Int => "tilus_randint",
            };
            format!("{f}((u32)({s}), (u32)((u64)(i64)({s}) >> 32), (u32)({c}))")
        }
        TileExpr::Index { shape, dim } if shape[*dim] == 1 => "0".into(),
        TileExpr::Index { shape, dim } => coords[coords.len() - shape.len() + dim].clone(),
    }
}

/// A C value of compute type `from` whose bits are read as type `to` of the same width, in
/// `to`'s compute type (16-bit floats through their bits: a value of one is exact in f32).
fn bitcast_c(e: &mut Emitter, a: &str, from: DType, to: DType) -> String {
    let helper = |e: &mut Emitter, t: DType| {
        e.use_helper(Helper::Arith(if t == DType::F16 {
            ArithHelper::CvtF16
        } else {
            ArithHelper::CvtBf16
        }));
        if t == DType::F16 {
            "f16"
        } else {
            "bf16"
        }
    };
    match (from, to) {
        (f @ (DType::F16 | DType::BF16), t @ (DType::F16 | DType::BF16)) => {
            let (f, t) = (helper(e, f), helper(e, t));
            format!("tilus_{t}_to_f32(tilus_cvt_{f}({a}))")
        }
        (DType::F32, DType::I32) => format!("__float_as_int({a})"),
        (DType::F32, _) => format!("__float_as_uint({a})"),
        (_, DType::F32) => format!("__uint_as_float((u32)({a}))"),
        (_, t) => format!("(({})({a}))", super::c_type(t)),
    }
}

/// The value of a low-precision tile's local element `l` (a C expression) converted to float
/// type `to`, in `to`'s compute type: small integers by the exponent trick, the others
/// through their compute values.
fn lowp_float_value(e: &mut Emitter, r: RegId, l: &str, to: DType) -> String {
    let t = e.p.register(r).dtype;
    let code = read(e, r, l);
    match super::lowp::fast_to_f32(e, t, &code) {
        Some(f) => cast_c(e, &f, DType::F32, to),
        None => {
            let v = value(e, r, l);
            cast_c(e, &v, t, to)
        }
    }
}

/// Converts a C value of compute type `from` to the compute type of `to`; a conversion to a
/// 16-bit float rounds, even from a 16-bit float type (whose values are computed in f32),
/// and the value stays a `float`.
fn cast_c(e: &mut Emitter, a: &str, from: DType, to: DType) -> String {
    // 16-bit floats are computed in f32: a conversion to one always rounds
    match (from.is_float(), to) {
        _ if from == to && to.bits() > 16 => a.to_string(),
        (_, DType::F16) | (_, DType::BF16) => {
            let (h, t) = if to == DType::F16 {
                (ArithHelper::CvtF16, "f16")
            } else {
                (ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            format!("tilus_{t}_to_f32(tilus_cvt_{t}((float)({a})))")
        }
        // the value the code of `to` holds: rounded (floats) or wrapped (integers)
        (_, t) if t.is_lowp() => {
            let code = super::lowp::encode(e, t, a, from);
            super::lowp::decode(e, t, &code)
        }
        (_, DType::F32) => format!("((float)({a}))"),
        (true, DType::Bool) => format!("({a} != 0.0f)"),
        (true, t) if t.is_int() => format!("(({})__float2ll_rz({a}))", super::c_type(t)),
        (_, t) => format!("(({})({a}))", super::c_type(t)),
    }
}

/// Writes compute-type values into a tile's local elements: `vals[l]` for element `l`.
pub(super) fn store_values(e: &mut Emitter, out: RegId, vals: &[String]) {
    let d = e.p.register(out);
    let name = d.name.clone();
    match (storage(d), d.dtype) {
        (Storage::Packed16, t) => {
            let (h, n) = if t == DType::F16 {
                (ArithHelper::CvtF16, "f16")
            } else {
                (ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            for (w, pair) in vals.chunks(2).enumerate() {
                e.line(format!(
                    "{name}[{w}] = tilus_cvt_{n}x2({}, {});",
                    pair[0], pair[1]
                ));
            }
        }
        (Storage::Plain, t @ (DType::F16 | DType::BF16)) => {
            let (h, n) = if t == DType::F16 {
                (ArithHelper::CvtF16, "f16")
            } else {
                (ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            for (l, v) in vals.iter().enumerate() {
                e.line(format!("{name}[{l}] = tilus_cvt_{n}({v});"));
            }
        }
        (Storage::Plain, t) if t.is_lowp() => {
            for (l, v) in vals.iter().enumerate() {
                let code = super::lowp::encode(e, t, v, t);
                e.line(format!("{name}[{l}] = (u8){code};"));
            }
        }
        (Storage::Plain, _) => {
            for (l, v) in vals.iter().enumerate() {
                e.line(format!("{name}[{l}] = {v};"));
            }
        }
    }
}

/// The layout of a view of a tile.
fn view_layout(e: &Emitter, v: &RegView) -> RegisterLayout {
    v.layout_of(&super::memory::layout(e, v.tensor))
}

/// `out = expr`: one line per output element, each reading the elements of the expression's
/// tiles that the same thread holds (a broadcast tile's element repeats across the output's).
/// `declare`: `out` is new (a `compute`); otherwise it exists and is overwritten (an
/// `assign_tile`: every value is computed before any is stored, so `x` may read `out`).
fn emit_map(e: &mut Emitter, x: &TileExpr, out: RegId, declare: bool) {
    if declare {
        super::memory::declare(e, out);
    } else {
        // an assigned tile's codes no longer come from the words they were unpacked from
        e.unpacked.retain(|&(r, _), _| r != out);
    }
    let out_t = e.p.register(out).dtype;
    // a conversion to the output's own 16-bit type at the top is the rounding the store does
    // anyway: rounding twice gives the same bits, but costs three conversions per element
    let x = match x {
        TileExpr::Cast(t, inner) if *t == out_t && out_t.is_float() && out_t.bits() <= 16 => {
            inner.as_ref()
        }
        _ => x,
    };
    let ol = super::memory::layout(e, out);
    let n = ol.local_size() as usize;
    let tables = x
        .operand_locals(e.p, out)
        .expect("planned programs' operands fit their outputs (check_planned)");
    // f16 operations in pairs, where they give the f32 form's bits
    if f16_pairs::emit(e, x, out, &tables) {
        return;
    }
    // a fresh scope, so that values are named per element only where they must be
    e.open("");
    // indices: each element's coordinates, the thread's part named once
    let indexed = x.has_index();
    if indexed {
        let (tid, threads) = (e.tid().name.clone(), e.tid().threads as i64);
        for (d, terms) in ol.thread_terms().iter().enumerate() {
            let t = e.terms(terms, &tid, threads);
            e.line(format!("const i32 tilus_i{d} = {t};"));
        }
    }
    let mut vals = Vec::with_capacity(n);
    for l in 0..n {
        let idx: Vec<String> = tables.iter().map(|t| t[l].to_string()).collect();
        let coords: Vec<String> = match indexed {
            true => ol
                .local_coords(l as i64)
                .iter()
                .enumerate()
                .map(|(d, &c)| match c {
                    0 => format!("tilus_i{d}"),
                    c => format!("(tilus_i{d} + {c})"),
                })
                .collect(),
            false => vec![],
        };
        vals.push(expr_c(e, x, &mut idx.iter(), &coords));
    }
    let named: Vec<String> = vals
        .iter()
        .enumerate()
        .map(|(l, v)| {
            let ty = compute_c_type(out_t);
            e.line(format!("const {ty} tilus_v{l} = {v};"));
            format!("tilus_v{l}")
        })
        .collect();
    store_values(e, out, &named);
    e.close();
}

/// The C type values of a tile's elements are computed in.
fn compute_c_type(t: DType) -> &'static str {
    match t {
        DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. } => "float",
        DType::Int(_) => "i32",
        DType::UInt(_) => "u32",
        t => super::c_type(t),
    }
}

/// `out = op(src)` along `dim`: each thread folds the elements it holds; the threads that
/// split `dim` within a warp meet by butterfly shuffles over the lane bits; those in other
/// warps through the scratch tile behind two block barriers. The folding order is the
/// interpreter's (`interp/arithmetic.rs`), so that both give the same bits.
/// The C value that leaves a reduction unchanged: what a masked-off register counts as.
fn reduce_identity(op: ReduceOp, t: DType) -> String {
    match (op, t) {
        (ReduceOp::Sum, _) => scan_identity(ScanOp::Sum, t),
        (ReduceOp::Max, DType::I64) => "(-9223372036854775807LL - 1)".into(),
        (ReduceOp::Min, DType::I64) => "9223372036854775807LL".into(),
        (ReduceOp::Max, DType::U64) => "0ull".into(),
        (ReduceOp::Min, DType::U64) => "0xffffffffffffffffull".into(),
        (ReduceOp::Max, _) => scan_identity(ScanOp::Max, t),
        (ReduceOp::Min, _) => scan_identity(ScanOp::Min, t),
        (ReduceOp::Any, _) => "false".into(),
        (ReduceOp::All, _) => "true".into(),
    }
}

fn emit_reduce(
    e: &mut Emitter,
    src: &RegView,
    op: ReduceOp,
    dim: usize,
    out: RegId,
    scratch: Option<SharedId>,
) {
    super::memory::declare(e, out);
    let sl = view_layout(e, src);
    let ol = super::memory::layout(e, out);
    let table = crate::ir::reduce_locals(e.p, src, dim).expect("a collapsed layout meets its own");
    let n_out = ol.local_size() as usize;
    let t = e.p.register(src.tensor).dtype;
    let ty = compute_c_type(t);
    let combine = |a: &str, b: &str| -> String {
        match (op, t.is_float()) {
            (ReduceOp::Sum, true) => format!("__fadd_rn({a}, {b})"),
            (ReduceOp::Sum, false) => format!("{a} + {b}"),
            (ReduceOp::Max, true) => format!("fmaxf({a}, {b})"),
            (ReduceOp::Min, true) => format!("fminf({a}, {b})"),
            (ReduceOp::Max, false) => format!("max({a}, {b})"),
            (ReduceOp::Min, false) => format!("min({a}, {b})"),
            // not `||` and `&&`: every lane must run the shuffle on the right
            (ReduceOp::Any, _) => format!("{a} | {b}"),
            (ReduceOp::All, _) => format!("{a} & {b}"),
        }
    };
    e.open("");
    e.line(format!("{ty} tilus_acc[{n_out}];"));
    // 1. this thread's elements, in local order (a masked-off register as the identity)
    let mut seen = vec![false; n_out];
    let tid = e.tid().name.clone();
    let threads = e.tid().threads as i64;
    let (tt, masked) = (sl.thread_terms(), sl.masked_dims());
    for (i, &j) in table.iter().enumerate() {
        let mut v = value(e, src.tensor, &i.to_string());
        let local = sl.local_coords(i as i64);
        let outside: Vec<String> = masked
            .iter()
            .filter(|&&(d, n)| {
                // the largest coordinate any thread gives this local
                let most: i64 = tt[d].iter().map(|t| (t.modulus - 1) * t.stride).sum();
                local[d] + most >= n
            })
            .map(|&(d, n)| {
                let at = e.terms(&tt[d], &tid, threads);
                format!("({at}) + {} < {n}", local[d])
            })
            .collect();
        if !outside.is_empty() {
            v = format!(
                "(({}) ? {v} : {})",
                outside.join(" && "),
                reduce_identity(op, t)
            );
        }
        if seen[j] {
            let c = combine(&format!("tilus_acc[{j}]"), &v);
            e.line(format!("tilus_acc[{j}] = {c};"));
        } else {
            seen[j] = true;
            e.line(format!("tilus_acc[{j}] = {v};"));
        }
    }
    let bits = sl.thread_bits(dim).unwrap_or(0);
    // 2. lanes of the same warp, by butterflies over the lane bits
    for b in 0..5 {
        if bits & (1 << b) != 0 {
            e.line("#pragma unroll");
            let shfl = if t == DType::Bool {
                format!(
                    "(bool)__shfl_xor_sync(0xffffffffu, (int)tilus_acc[j], {})",
                    1 << b
                )
            } else {
                format!("__shfl_xor_sync(0xffffffffu, tilus_acc[j], {})", 1 << b)
            };
            let c = combine("tilus_acc[j]", &shfl);
            e.line(format!(
                "for (int j = 0; j < {n_out}; ++j) tilus_acc[j] = {c};"
            ));
        }
    }
    // 3. warps, through shared memory
    let warp_bits = bits & !31;
    if crate::ir::reduce_crosses_warps(e.p, scratch) && warp_bits != 0 {
        let s = scratch.expect("layout inference sizes the scratch of a reduction across warps");
        let sname = e.p.shared(s).name.clone();
        let off =
            e.p.shared(s)
                .offset
                .expect("scratch tiles are planned before codegen");
        e.use_helper(Helper::Memory(MemoryHelper::StShared));
        e.use_helper(Helper::Memory(MemoryHelper::LdShared32));
        e.line(format!("const u32 {sname} = tilus_smem + {off}u;"));
        let store = |idx: &str| format!("{sname} + (u32)(({idx}) * {n_out} + j) * 4u");
        let mine = store(&tid);
        e.line("#pragma unroll");
        let put = if t.is_float() {
            format!("tilus_st_shared_f32({mine}, (float)tilus_acc[j])")
        } else {
            format!("tilus_st_shared_u32({mine}, (u32)tilus_acc[j])")
        };
        e.line(format!("for (int j = 0; j < {n_out}; ++j) {put};"));
        e.line("__syncthreads();");
        let partners = crate::ir::subsets(warp_bits);
        e.line("#pragma unroll");
        e.open(format!("for (int j = 0; j < {n_out}; ++j)"));
        for (k, sub) in partners.iter().enumerate() {
            let who = format!("(({tid} & ~{warp_bits}) | {sub})");
            let at = store(&who);
            let raw = format!("tilus_ld_shared_u32({at})");
            let v = if t.is_float() {
                format!("__int_as_float((int){raw})")
            } else if t == DType::Bool {
                format!("({raw} != 0u)")
            } else {
                format!("(({ty}){raw})")
            };
            if k == 0 {
                e.line(format!("tilus_acc[j] = {v};"));
            } else {
                let c = combine("tilus_acc[j]", &v);
                e.line(format!("tilus_acc[j] = {c};"));
            }
        }
        e.close();
        // the scratch may be written again (a loop) only once every thread has read it
        e.line("__syncthreads();");
    }
    // 4. the result, in the output's type
    let vals: Vec<String> = (0..n_out).map(|j| format!("tilus_acc[{j}]")).collect();
    store_values(e, out, &vals);
    e.close();
}

fn emit_cast(e: &mut Emitter, src: &RegView, out: &RegId) {
    super::memory::declare(e, *out);
    let (sd, od) = (e.p.register(src.tensor), e.p.register(*out));
    let n = od
        .layout
        .as_ref()
        .expect("layouts are inferred")
        .local_size();
    let (st, ot, on) = (sd.dtype, od.dtype, od.name.clone());
    let out_packed = storage(od) == Storage::Packed16;
    match (st, ot) {
        (DType::F32, DType::F16 | DType::BF16) => {
            let (h, t) = if ot == DType::F16 {
                (ArithHelper::CvtF16, "f16")
            } else {
                (ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            e.line("#pragma unroll");
            if out_packed {
                let (a, b) = (
                    read(e, src.tensor, "2 * w"),
                    read(e, src.tensor, "2 * w + 1"),
                );
                e.line(format!(
                    "for (int w = 0; w < {}; ++w) {on}[w] = tilus_cvt_{t}x2({a}, {b});",
                    n / 2
                ));
            } else {
                let a = read(e, src.tensor, "l");
                e.line(format!(
                    "for (int l = 0; l < {n}; ++l) {on}[l] = tilus_cvt_{t}({a});"
                ));
            }
        }
        (s, o) if s == o => {
            let a = read(e, src.tensor, "l");
            if out_packed {
                e.line("#pragma unroll");
                e.line(format!(
                    "for (int w = 0; w < {}; ++w) {on}[w] = {};",
                    n / 2,
                    super::memory::word(e, src.tensor, "2 * w")
                ));
            } else {
                e.line("#pragma unroll");
                e.line(format!("for (int l = 0; l < {n}; ++l) {on}[l] = {a};"));
            }
        }
        // low-precision codes convert through their compute values, element by element
        // (into one: each source value encodes once, as the interpreter rounds it once)
        // FP8 pairs to f16 pairs in one instruction (exact, as the element-wise decoding)
        (s @ (DType::F8E4M3 | DType::F8E5M2), DType::F16) if out_packed => {
            e.use_helper(Helper::Lowp(super::lowp::LowpHelper::PairToF16(s)));
            let f = format!("tilus_f16x2_from_{}x2", s.name());
            for w in 0..n / 2 {
                let (a, b) = (
                    read(e, src.tensor, &(2 * w).to_string()),
                    read(e, src.tensor, &(2 * w + 1).to_string()),
                );
                e.line(format!(
                    "{on}[{w}] = {f}((u16)((u32){a} | ((u32){b} << 8)));"
                ));
            }
        }
        // small integer pairs to f16 pairs by the exponent trick (exact)
        (s @ (DType::Int(_) | DType::UInt(_)), DType::F16) if out_packed => {
            e.use_helper(Helper::Lowp(super::lowp::LowpHelper::FieldToF16));
            for w in 0..n / 2 {
                let (a, b) = (
                    read(e, src.tensor, &(2 * w).to_string()),
                    read(e, src.tensor, &(2 * w + 1).to_string()),
                );
                let pair = super::lowp::small_ints_to_f16x2(s, &a, &b, 0);
                e.line(format!("{on}[{w}] = {pair};"));
            }
        }
        (s, o) if s.is_lowp() && o.is_float() => {
            let vals: Vec<String> = (0..n)
                .map(|l| lowp_float_value(e, src.tensor, &l.to_string(), o))
                .collect();
            store_values(e, *out, &vals);
        }
        (s, o) if o.is_lowp() => {
            for l in 0..n {
                let v = value(e, src.tensor, &l.to_string());
                let code = super::lowp::encode(e, o, &v, s);
                e.line(format!("{on}[{l}] = (u8){code};"));
            }
        }
        (s, o) if s.is_lowp() => {
            let vals: Vec<String> = (0..n)
                .map(|l| {
                    let v = value(e, src.tensor, &l.to_string());
                    cast_c(e, &v, s, o)
                })
                .collect();
            store_values(e, *out, &vals);
        }
        (s, o) if !s.is_float() || s == DType::F32 && !o.is_float() => {
            let a = read(e, src.tensor, "l");
            e.line("#pragma unroll");
            e.line(format!(
                "for (int l = 0; l < {n}; ++l) {on}[l] = ({})({a});",
                super::c_type(o)
            ));
        }
        (DType::F16 | DType::BF16, DType::F32) => {
            // exact: every 16-bit float is an f32
            let (h, t) = if st == DType::F16 {
                (ArithHelper::CvtF16, "f16")
            } else {
                (ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            let a = read(e, src.tensor, "l");
            e.line("#pragma unroll");
            e.line(format!(
                "for (int l = 0; l < {n}; ++l) {on}[l] = tilus_{t}_to_f32({a});"
            ));
        }
        (s, o) => {
            e.line(format!("// cast {s} -> {o} is not supported yet"));
            e.line(format!("#error \"cast {s} -> {o} is not supported yet\""));
        }
    }
}

/// The conversion helpers that scalar code needs: 16-bit float parameters widen in the
/// prologue, and scalar conversions to 16-bit floats round through them.
pub(super) fn scalar_helpers(p: &crate::ir::Program) -> Vec<ArithHelper> {
    fn visit(e: &crate::ir::Expr, f16: &mut bool, bf16: &mut bool) {
        use crate::ir::Expr;
        match e.dtype() {
            DType::F16 => *f16 = true,
            DType::BF16 => *bf16 = true,
            _ => {}
        }
        match e {
            Expr::Binary(_, a, b) => {
                visit(a, f16, bf16);
                visit(b, f16, bf16);
            }
            Expr::Cast(_, x) => visit(x, f16, bf16),
            Expr::Int(..) | Expr::Float(..) | Expr::Var(..) | Expr::BlockIdx(_) => {}
        }
    }
    let (mut f16, mut bf16) = (false, false);
    for v in &p.vars {
        match v.dtype {
            DType::F16 => f16 = true,
            DType::BF16 => bf16 = true,
            _ => {}
        }
    }
    p.walk(&mut |s| {
        use crate::ir::StmtKind;
        let mut one = |e: &crate::ir::Expr| visit(e, &mut f16, &mut bf16);
        match &s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => one(value),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => one(cond),
            StmtKind::For {
                start, end, step, ..
            } => {
                one(start);
                one(end);
                one(step);
            }
            StmtKind::Inst(i) => i.facts(p).scalars.iter().for_each(|e| one(e)),
            StmtKind::ThreadGroup { .. } | StmtKind::Sync { .. } => {}
        }
    });
    let mut out = vec![];
    if f16 {
        out.push(ArithHelper::CvtF16);
    }
    if bf16 {
        out.push(ArithHelper::CvtBf16);
    }
    out
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ArithHelper {
    /// f32 to f16 conversions.
    CvtF16,
    /// f32 to bf16 conversions.
    CvtBf16,
    /// The hardware's one-instruction tanh.
    TanhApprox,
    /// The hardware's one-instruction reciprocal.
    RecipApprox,
    /// The hardware's one-instruction power of two.
    Exp2Approx,
    /// Philox4x32-10 and the random numbers made of it.
    Philox,
    /// `u32 tilus_<op>_f16x2(u32 a, u32 b)`: an f16x2 operation (`add`, `sub`, `mul`),
    /// rounded to nearest even.
    F16x2(&'static str),
}

/// Philox4x32-10 (the interpreter's `ir::philox`, round for round) and the numbers `rand`,
/// `randn` and `randint` make of its words.
const PHILOX: &str = r#"// Philox4x32-10 for key (k0, k1) at counter (c0, 0, 0, 0).
static __device__ __forceinline__ uint4 tilus_philox(u32 k0, u32 k1, u32 c0) {
  u32 c1 = 0u, c2 = 0u, c3 = 0u;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return make_uint4(c0, c1, c2, c3);
}
// A float in [0, 1): the first word's top 24 bits times 2^-24.
static __device__ __forceinline__ float tilus_rand(u32 k0, u32 k1, u32 offset) {
  return __fmul_rn((float)(tilus_philox(k0, k1, offset).x >> 8), 5.9604644775390625e-08f);
}
// A standard normal float: Box-Muller from the first two words.
static __device__ __forceinline__ float tilus_randn(u32 k0, u32 k1, u32 offset) {
  const uint4 w = tilus_philox(k0, k1, offset);
  const float u1 = __fmul_rn((float)((w.x >> 8) + 1u), 5.9604644775390625e-08f);
  const float u2 = __fmul_rn((float)(w.y >> 8), 5.9604644775390625e-08f);
  return __fmul_rn(sqrtf(__fmul_rn(-2.0f, logf(u1))), cosf(__fmul_rn(6.28318530717958647692f, u2)));
}
// The first word.
static __device__ __forceinline__ u32 tilus_randint(u32 k0, u32 k1, u32 offset) {
  return tilus_philox(k0, k1, offset).x;
}
"#;

/// `float tilus_{name}(float x)`: the f32 function of one PTX instruction, with a comment.
fn one_instruction(name: &str, ptx: &str, comment: &str) -> String {
    format!(
        "// {comment}.\n\
         static __device__ __forceinline__ float tilus_{name}(float x) {{\n  \
         float r;\n  asm(\"{ptx} %0, %1;\" : \"=f\"(r) : \"f\"(x));\n  return r;\n}}\n"
    )
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: ArithHelper) -> String {
    match h {
        ArithHelper::Philox => PHILOX.to_string(),
        ArithHelper::F16x2(op) => format!(
            "// Two f16 {op}s in one instruction, each rounded to nearest even.\n\
             static __device__ __forceinline__ u32 tilus_{op}_f16x2(u32 a, u32 b) {{\n  \
             u32 r;\n  asm(\"{op}.rn.f16x2 %0, %1, %2;\" : \"=r\"(r) : \"r\"(a), \"r\"(b));\n  return r;\n}}\n"
        ),
        ArithHelper::RecipApprox => one_instruction(
            "recip_approx",
            "rcp.approx.ftz.f32",
            "1 / x in one instruction (about one ulp; subnormals flush to zero)",
        ),
        ArithHelper::Exp2Approx => one_instruction(
            "exp2_approx",
            "ex2.approx.ftz.f32",
            "2^x in one instruction (relative error about 2^-22; subnormals flush to zero)",
        ),
        ArithHelper::TanhApprox => one_instruction(
            "tanh_approx",
            "tanh.approx.f32",
            "tanh in one instruction (relative error up to about 2^-11)",
        ),
        ArithHelper::CvtF16 | ArithHelper::CvtBf16 => {
            let t = if h == ArithHelper::CvtF16 {
                "f16"
            } else {
                "bf16"
            };
            format!(
                "// f32 -> {t}, round to nearest even; the pair form puts `lo` in the low half.\n\
                 static __device__ __forceinline__ u16 tilus_cvt_{t}(float x) {{\n  \
                 u16 r;\n  asm(\"cvt.rn.{t}.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x));\n  return r;\n}}\n\
                 static __device__ __forceinline__ u32 tilus_cvt_{t}x2(float lo, float hi) {{\n  \
                 u32 r;\n  asm(\"cvt.rn.{t}x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n  return r;\n}}\n\
                 static __device__ __forceinline__ float tilus_{t}_to_f32(u16 x) {{\n  \
                 float r;\n  asm(\"cvt.f32.{t} %0, %1;\" : \"=f\"(r) : \"h\"(x));\n  return r;\n}}\n"
            )
        }
    }
}
