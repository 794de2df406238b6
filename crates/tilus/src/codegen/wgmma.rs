//! Emitters for warp-group MMA: descriptors built once per tile, one `wgmma.mma_async` per
//! 64-row block, N chunk and 16-deep K step, and operand fences that keep the compiler from
//! moving accumulator accesses across the asynchronous work.

use super::prelude::wgmma_name;
use super::{Emitter, Helper};
use crate::ir::{DType, Inst, RegId, SharedId, StmtKind, WgmmaA, WgmmaInst};
use crate::layout::Swizzle;

/// The accumulators of every wgmma in the program.
fn accumulators(e: &Emitter) -> Vec<RegId> {
    let mut out = vec![];
    e.p.walk(&mut |s| {
        if let StmtKind::Inst(Inst::Wgmma(WgmmaInst::Mma { d, .. })) = &s.kind {
            if !out.contains(d) {
                out.push(*d);
            }
        }
    });
    out
}

/// Fences every wgmma accumulator declared in an open scope.
fn fence_accumulators(e: &mut Emitter) {
    let accs = accumulators(e);
    let visible: Vec<RegId> = e
        .declared
        .iter()
        .flatten()
        .copied()
        .filter(|r| accs.contains(r))
        .collect();
    for r in visible {
        e.use_helper(Helper::FenceOperand);
        let n = super::memory::layout(e, r).local_size();
        let name = e.reg_name(r);
        e.line("#pragma unroll");
        e.line(format!(
            "for (int l = 0; l < {n}; ++l) tilus_fence_operand({name}[l]);"
        ));
    }
}

/// `(descriptor base expression, row bytes)` of a shared operand.
fn descriptor(e: &mut Emitter, s: SharedId) -> (String, i64) {
    e.use_helper(Helper::WgmmaDesc);
    let d = e.p.shared(s);
    let l = d
        .layout
        .as_ref()
        .expect("shared layouts are inferred before codegen");
    let row = *d.shape.last().unwrap_or(&0) * d.dtype.nbytes() as i64;
    let mode = match l.swizzle {
        Swizzle::None => 0,
        Swizzle::B128 => 1,
        Swizzle::B64 => 2,
        Swizzle::B32 => 3,
    };
    (
        format!("tilus_wgmma_desc({}, {}u, {mode}u)", d.name, 8 * row),
        row,
    )
}

pub(super) fn emit(e: &mut Emitter, i: &WgmmaInst) {
    match i {
        WgmmaInst::Fence => {
            e.use_helper(Helper::WgmmaSync);
            fence_accumulators(e);
            e.line("tilus_wgmma_fence();");
        }
        WgmmaInst::Commit => {
            e.use_helper(Helper::WgmmaSync);
            e.line("tilus_wgmma_commit_group();");
        }
        WgmmaInst::Wait(n) => {
            e.use_helper(Helper::WgmmaSync);
            e.line(format!("tilus_wgmma_wait_group<{n}>();"));
            fence_accumulators(e);
        }
        WgmmaInst::Mma { a, b, d, plan } => {
            let p = plan.expect("wgmma plans are chosen by layout inference");
            let bf16 = e.p.shared(b.tensor).dtype == DType::BF16;
            let rs = matches!(a, WgmmaA::Register(_));
            let f16acc = e.p.register(*d).dtype == DType::F16;
            e.use_helper(Helper::Wgmma(p.n as u16, bf16, rs, f16acc));
            let f = wgmma_name(p.n as u16, bf16, rs, f16acc);
            let dn = e.reg_name(*d);
            e.open("");
            let (db, brow) = descriptor(e, b.tensor);
            e.line(format!("const u64 tilus_db = {db};"));
            // Address fields advance in 16-byte units: 32 bytes per K step (16 halves), a row
            // block of 64 rows or an N chunk of `n` rows apart in the tile.
            let b_off = format!("(u64)((chunk * {} + ki * 32) >> 4)", p.n * brow);
            let a_arg = match a {
                WgmmaA::Shared(v) => {
                    let (da, arow) = descriptor(e, v.tensor);
                    e.line(format!("const u64 tilus_da = {da};"));
                    format!("tilus_da + (u64)((mi * {} + ki * 32) >> 4)", 64 * arow)
                }
                WgmmaA::Register(v) => {
                    let an = e.reg_name(v.tensor);
                    format!("&{an}[(mi * {} + ki) * 4]", p.k_steps)
                }
            };
            e.line("#pragma unroll");
            e.open(format!("for (int ki = 0; ki < {}; ++ki)", p.k_steps));
            e.line("#pragma unroll");
            e.open(format!("for (int mi = 0; mi < {}; ++mi)", p.rep_m));
            e.line("#pragma unroll");
            e.open(format!(
                "for (int chunk = 0; chunk < {}; ++chunk)",
                p.n_chunks
            ));
            // f16 accumulators are packed two elements to a word
            let per = if f16acc { 4 } else { 2 };
            let d_off = format!("mi * {} + chunk * {}", p.total_n() / per, p.n / per);
            e.line(format!("{f}(&{dn}[{d_off}], {a_arg}, tilus_db + {b_off});"));
            e.close();
            e.close();
            e.close();
            e.close();
        }
    }
}
