//! Emitters for printing: device `printf` with the formats of `ir/inst/debug.rs`, from the
//! first thread of the group. A tile prints row by row from shared memory (through its layout,
//! swizzle included); a register tile first meets in its scratch tile, between block
//! barriers. NaN prints as `nan` whatever its sign, so that the text does not depend on which
//! NaN an operation produced (the interpreter prints the same).

use super::memory::{layout, read, smem_address};
use super::{Emitter, Helper};
use crate::ir::debug::{header_format, line_format, printf_format, view_name, LINE_ELEMS};
use crate::ir::{DType, DebugInst, Expr, RegView, SharedId, SharedView};

pub(super) fn emit(e: &mut Emitter, i: &DebugInst) {
    match i {
        DebugInst::Printf { pieces, args } => emit_printf(e, pieces, args),
        DebugInst::PrintRegister { src, scratch } => emit_print_register(e, src, *scratch),
        DebugInst::Assume { var, divisor } => {
            let name = e.p.var(*var).name.clone();
            e.line(format!(
                "__builtin_assume({name} % {divisor} == 0);  // checked at launch"
            ));
        }
        DebugInst::PrintShared { src } => {
            let opened = open_first_thread(e);
            let d = e.p.shared(src.tensor);
            let name = view_name(&d.name, src.transposed);
            print_tile(e, src, &name);
            if opened {
                e.close();
            }
        }
    }
}

/// A C string literal of `s` (quotes, backslashes, `?` (trigraphs) and anything outside
/// printable ASCII escaped, the last in octal).
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'?' => out.push_str("\\?"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            b => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// Opens `if (tid == 0)` when the current group has more than one thread; whether it did.
fn open_first_thread(e: &mut Emitter) -> bool {
    let (tid, threads) = (e.tid().name.clone(), e.tid().threads);
    if threads > 1 {
        e.open(format!("if ({tid} == 0)"));
        true
    } else {
        false
    }
}

/// A scalar as the `printf` argument its conversion expects.
fn scalar_arg(e: &mut Emitter, a: &Expr) -> String {
    let c = e.expr(a);
    match a.dtype() {
        DType::Bool => format!("(({c}) ? \"true\" : \"false\")"),
        DType::I32 => format!("(int)({c})"),
        DType::U32 => format!("(unsigned)({c})"),
        DType::I64 => format!("(long long)({c})"),
        DType::U64 => format!("(unsigned long long)({c})"),
        DType::Int(_) => format!("(int)({c})"),
        DType::UInt(_) => format!("(unsigned)({c})"),
        // float scalars are held in `float` (16-bit ones widened exactly)
        DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. } => {
            e.use_helper(Helper::Debug(DebugHelper::Float));
            format!("tilus_print_float((float)({c}))")
        }
    }
}

fn emit_printf(e: &mut Emitter, pieces: &[String], args: &[Expr]) {
    let fmt = c_string(&printf_format(pieces, args));
    let vals: Vec<String> = args
        .iter()
        .map(|a| format!(", {}", scalar_arg(e, a)))
        .collect();
    let opened = open_first_thread(e);
    e.line(format!("printf({fmt}{});", vals.concat()));
    if opened {
        e.close();
    }
}

/// The element of a tile at shared address `addr`, as the `printf` argument its conversion
/// expects.
fn element_arg(e: &mut Emitter, dtype: DType, addr: &str) -> String {
    e.use_helper(Helper::Debug(DebugHelper::Shared));
    let float = |e: &mut Emitter, x: String| {
        e.use_helper(Helper::Debug(DebugHelper::Float));
        format!("tilus_print_float({x})")
    };
    match dtype {
        DType::F32 => float(e, format!("__uint_as_float(tilus_print_ld32({addr}))")),
        DType::F16 | DType::BF16 => {
            let (h, t) = if dtype == DType::F16 {
                (super::arithmetic::ArithHelper::CvtF16, "f16")
            } else {
                (super::arithmetic::ArithHelper::CvtBf16, "bf16")
            };
            e.use_helper(Helper::Arith(h));
            float(
                e,
                format!("tilus_{t}_to_f32((u16)tilus_print_ld16({addr}))"),
            )
        }
        DType::I32 => format!("(int)tilus_print_ld32({addr})"),
        DType::U32 => format!("(unsigned)tilus_print_ld32({addr})"),
        DType::I64 => format!("(long long)tilus_print_ld64({addr})"),
        DType::U64 => format!("(unsigned long long)tilus_print_ld64({addr})"),
        DType::Bool => format!("(tilus_print_ld8({addr}) ? \"true\" : \"false\")"),
        // the print scratch keeps a low-precision element's code in a byte of its own
        t @ DType::Float { .. } => {
            let v = super::lowp::decode(e, t, &format!("tilus_print_ld8({addr})"));
            float(e, v)
        }
        t @ DType::Int(_) => format!(
            "(int){}",
            super::lowp::decode(e, t, &format!("tilus_print_ld8({addr})"))
        ),
        t @ DType::UInt(_) => format!(
            "(unsigned){}",
            super::lowp::decode(e, t, &format!("tilus_print_ld8({addr})"))
        ),
    }
}

/// Prints the tile seen through `src` from the current thread: the header, then each row
/// (the brackets around it computed as `ir::debug::row_marks` does), [`LINE_ELEMS`] elements
/// per `printf`.
fn print_tile(e: &mut Emitter, src: &SharedView, name: &str) {
    let dtype = e.p.shared(src.tensor).dtype;
    // the tile, or one stage of it
    let mut shape = e.p.sview_stored_shape(src);
    if src.transposed && shape.len() == 2 {
        shape.swap(0, 1);
    }
    let n = shape.len();
    let header = c_string(&header_format(name, dtype, &shape));
    e.line(format!(
        "printf({header}, (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);"
    ));
    let lead = &shape[..n - 1];
    let (rows, cols) = (lead.iter().product::<i64>(), shape[n - 1]);
    e.open(format!(
        "for (int tilus_row = 0; tilus_row < {rows}; ++tilus_row)"
    ));
    let mut stride = 1i64;
    let mut strides = vec![0i64; lead.len()];
    for k in (0..lead.len()).rev() {
        strides[k] = stride;
        stride *= lead[k];
    }
    for (k, (&dk, &sk)) in lead.iter().zip(&strides).enumerate() {
        e.line(format!("const int tilus_i{k} = (tilus_row / {sk}) % {dk};"));
    }
    e.line("int tilus_open = 1, tilus_close = 1;");
    if !lead.is_empty() {
        e.line("bool tilus_zeros = true, tilus_lasts = true;");
        for k in (0..lead.len()).rev() {
            e.line(format!(
                "tilus_zeros = tilus_zeros && tilus_i{k} == 0; tilus_open += tilus_zeros;"
            ));
            e.line(format!(
                "tilus_lasts = tilus_lasts && tilus_i{k} == {}; tilus_close += tilus_lasts;",
                lead[k] - 1
            ));
        }
    }
    e.line(format!(
        "const int tilus_blank = tilus_row + 1 < {rows} ? tilus_close - 1 : 0;"
    ));
    let full = cols / LINE_ELEMS * LINE_ELEMS;
    if full > 0 {
        e.open(format!(
            "for (int tilus_col = 0; tilus_col < {full}; tilus_col += {LINE_ELEMS})"
        ));
        let last = format!("tilus_col + {LINE_ELEMS} >= {cols}");
        print_line(e, src, n, LINE_ELEMS, "tilus_col", "tilus_col == 0", &last);
        e.close();
    }
    if cols > full {
        let first = if full == 0 { "true" } else { "false" };
        print_line(e, src, n, cols - full, &full.to_string(), first, "true");
    }
    e.close();
}

/// One `printf` of `count` elements of the current row from column `col0` (a C expression);
/// `first` and `last` say whether they begin and end the row.
fn print_line(
    e: &mut Emitter,
    src: &SharedView,
    rank: usize,
    count: i64,
    col0: &str,
    first: &str,
    last: &str,
) {
    let dtype = e.p.shared(src.tensor).dtype;
    let fmt = c_string(&line_format(count as usize, dtype));
    let lit = |c: &str| c_string(&c.repeat(rank));
    let mut args = vec![
        format!("{} + ({first} ? tilus_open : 0)", lit(" ")),
        format!("{} + ({first} ? {rank} - tilus_open : {rank})", lit("[")),
    ];
    for j in 0..count {
        let mut coords: Vec<String> = (0..rank - 1).map(|k| format!("tilus_i{k}")).collect();
        coords.push(format!("{col0} + {j}"));
        if src.transposed && rank == 2 {
            coords.swap(0, 1);
        }
        let addr = smem_address(e, src, &coords);
        args.push(element_arg(e, dtype, &addr));
    }
    args.push(format!(
        "{} + ({last} ? {rank} - tilus_close : {rank})",
        lit("]")
    ));
    args.push(format!(
        "{} + ({last} ? {rank} - tilus_blank : {rank})",
        lit("\n")
    ));
    e.open("");
    e.line(format!("printf({fmt},"));
    let k = args.len();
    for (i, a) in args.iter().enumerate() {
        e.line(format!("    {a}{}", if i + 1 < k { "," } else { ");" }));
    }
    e.close();
}

/// Every thread stores its elements of `src` into the scratch tile (row-major, the view's
/// shape), the block meets, thread 0 prints the scratch, and the block meets again before the
/// scratch's bytes may be reused. The first barrier keeps the stores off bytes that slower
/// threads may still read (a tile freed just before).
fn emit_print_register(e: &mut Emitter, src: &RegView, scratch: SharedId) {
    let sd = e.p.shared(scratch);
    let (sname, off) = (
        sd.name.clone(),
        sd.offset.expect("scratch tiles are planned before codegen"),
    );
    let rank = sd.shape.len();
    let d = e.p.register(src.tensor);
    let (dtype, name) = (d.dtype, view_name(&d.name, src.transposed));
    let l = layout(e, src.tensor).permute(&src.perm(rank));
    e.use_helper(Helper::Debug(DebugHelper::Shared));
    e.line("__syncthreads();");
    e.open("");
    e.line(format!("const u32 {sname} = tilus_smem + {off}u;"));
    // every thread's elements, at their coordinates
    let (tt, lt, ls) = (l.thread_terms(), l.local_terms(), l.local_size());
    let (tid, threads) = (e.tid().name.clone(), e.tid().threads as i64);
    e.open("");
    for (dim, terms) in tt.iter().enumerate() {
        let t = e.terms(terms, &tid, threads);
        e.line(format!("const i32 tilus_t{dim} = {t};"));
    }
    e.line("#pragma unroll");
    e.open(format!("for (int l = 0; l < {ls}; ++l)"));
    let coords: Vec<String> = (0..rank)
        .map(|k| format!("tilus_t{k} + {}", e.terms(&lt[k], "l", ls)))
        .collect();
    let addr = smem_address(e, &SharedView::plain(scratch), &coords);
    let v = read(e, src.tensor, "l");
    e.line(match dtype {
        DType::F16 | DType::BF16 => format!("tilus_print_st16({addr}, {v});"),
        DType::F32 => format!("tilus_print_st32({addr}, __float_as_uint({v}));"),
        DType::Bool | DType::Int(_) | DType::UInt(_) | DType::Float { .. } => {
            format!("tilus_print_st8({addr}, (u32)({v}));")
        }
        DType::I32 | DType::U32 => format!("tilus_print_st32({addr}, (u32)({v}));"),
        DType::I64 | DType::U64 => format!("tilus_print_st64({addr}, (u64)({v}));"),
    });
    e.close();
    e.close();
    e.line("__syncthreads();");
    let opened = open_first_thread(e);
    print_tile(e, &SharedView::plain(scratch), &name);
    if opened {
        e.close();
    }
    e.line("__syncthreads();");
    e.close();
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum DebugHelper {
    /// Shared-memory loads and stores of 8, 16, 32 and 64 bits.
    Shared,
    /// A float as a `printf` argument, NaN made positive.
    Float,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: DebugHelper) -> String {
    match h {
        DebugHelper::Shared => {
            let mut s = String::from("// Shared-memory accesses of the elements print_tensor prints.\n");
            for (bits, reg, ty) in [(8, "r", "u32"), (16, "h", "u16"), (32, "r", "u32"), (64, "l", "u64")] {
                s.push_str(&format!(
                    "static __device__ __forceinline__ {ty} tilus_print_ld{bits}(u32 addr) {{\n  \
                     {ty} v;\n  asm volatile(\"ld.shared.u{bits} %0, [%1];\" : \"={reg}\"(v) : \"r\"(addr));\n  \
                     return v;\n}}\n\
                     static __device__ __forceinline__ void tilus_print_st{bits}(u32 addr, {ty} v) {{\n  \
                     asm volatile(\"st.shared.u{bits} [%0], %1;\" :: \"r\"(addr), \"{reg}\"(v) : \"memory\");\n}}\n"
                ));
            }
            s
        }
        DebugHelper::Float => r#"// A float as printf takes it; every NaN positive, so that it prints as `nan`.
static __device__ __forceinline__ double tilus_print_float(float x) {
  return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u ? (double)__uint_as_float(0x7fc00000u) : (double)x;
}
"#
        .into(),
    }
}
