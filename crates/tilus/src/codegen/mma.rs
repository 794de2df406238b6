//! Emitter for `dot`: unrolled loops of mma.sync m16n8k16 over the plan's repeat counts.

use super::{Emitter, Helper};
use crate::ir::{DType, MmaInst};

pub(super) fn emit(e: &mut Emitter, i: &MmaInst) {
    let MmaInst::Dot { a, b, c, out, plan } = i;
    let p = plan.expect("dot plans are chosen by layout inference");
    let h = if e.p.register(a.tensor).dtype == DType::BF16 {
        Helper::MmaBf16
    } else {
        Helper::MmaF16
    };
    let t = if h == Helper::MmaBf16 { "bf16" } else { "f16" };
    e.use_helper(h);
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
