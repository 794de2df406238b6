//! Emitters for elementwise register operations.

use super::memory::{read, storage, Storage};
use super::{Emitter, Helper};
use crate::ir::{ArithInst, DType};

pub(super) fn emit(e: &mut Emitter, i: &ArithInst) {
    let ArithInst::Cast { src, out } = i;
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
                (Helper::CvtF16, "f16")
            } else {
                (Helper::CvtBf16, "bf16")
            };
            e.use_helper(h);
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
                (Helper::CvtF16, "f16")
            } else {
                (Helper::CvtBf16, "bf16")
            };
            e.use_helper(h);
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
