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

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ArithHelper {
    /// f32 to f16 conversions.
    CvtF16,
    /// f32 to bf16 conversions.
    CvtBf16,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: ArithHelper) -> String {
    match h {
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
