//! Emitter for `dot`: unrolled loops of mma.sync m16n8k16 over the plan's repeat counts.

use super::{Emitter, Helper};
use crate::ir::{DType, MmaInst};

pub(super) fn emit(e: &mut Emitter, i: &MmaInst) {
    let MmaInst::Dot { a, b, c, out, plan } = i;
    let p = plan.expect("dot plans are chosen by layout inference");
    let h = if e.p.register(a.tensor).dtype == DType::BF16 {
        MmaHelper::Bf16
    } else {
        MmaHelper::F16
    };
    let t = if h == MmaHelper::Bf16 { "bf16" } else { "f16" };
    e.use_helper(Helper::Mma(h));
    let (an, bn, cn, on) = (
        e.reg_name(a.tensor),
        e.reg_name(b.tensor),
        e.reg_name(c.tensor),
        e.reg_name(*out),
    );
    // out = a @ b + c into a different tensor: start `out` from `c`, then accumulate in place,
    // so every K step adds to the running sum.
    let cn = if c.tensor != *out {
        let n =
            e.p.register(*out)
                .layout
                .as_ref()
                .expect("layouts are inferred")
                .local_size();
        e.line("#pragma unroll");
        e.line(format!("for (int l = 0; l < {n}; ++l) {on}[l] = {cn}[l];"));
        on.clone()
    } else {
        cn
    };
    // A fragments start at local (mi * rep_k + ki) * 8, B at (ki * rep_n + ni) * 4, C at
    // (mi * rep_n + ni) * 4 (see `MmaPlan`); 16-bit operands are packed two to a word.
    e.line("#pragma unroll");
    e.open(format!("for (int ki = 0; ki < {}; ++ki)", p.rep_k));
    e.line("#pragma unroll");
    e.open(format!("for (int mi = 0; mi < {}; ++mi)", p.rep_m));
    e.line("#pragma unroll");
    e.open(format!("for (int ni = 0; ni < {}; ++ni)", p.rep_n));
    let (rk, rn) = (p.rep_k, p.rep_n);
    e.line(format!(
        "tilus_mma_m16n8k16_{t}(&{on}[(mi * {rn} + ni) * 4], &{an}[(mi * {rk} + ki) * 4], &{bn}[(ki * {rn} + ni) * 2], &{cn}[(mi * {rn} + ni) * 4]);"
    ));
    e.close();
    e.close();
    e.close();
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum MmaHelper {
    /// mma.sync m16n8k16 with f16 inputs.
    F16,
    /// mma.sync m16n8k16 with bf16 inputs.
    Bf16,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: MmaHelper) -> String {
    match h {
        MmaHelper::F16 | MmaHelper::Bf16 => {
            let t = if h == MmaHelper::F16 { "f16" } else { "bf16" };
            format!(
                "// d = a * b + c with mma.sync m16n8k16 ({t} inputs, f32 accumulation).\n\
                 static __device__ __forceinline__ void tilus_mma_m16n8k16_{t}(float* d, const u32* a, const u32* b, const float* c) {{\n  \
                 asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%10, %11, %12, %13}};\"\n    \
                 : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3])\n    \
                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]),\n      \
                 \"f\"(c[0]), \"f\"(c[1]), \"f\"(c[2]), \"f\"(c[3]));\n}}\n"
            )
        }
    }
}
