//! `dot` as `codegen/mma.rs` emits it: per warp, loops over the plan's repeats of
//! mma.sync m16n8k16, each reading its operands from the lanes' registers by local index (the
//! plan's `a_local`/`b_local`/`c_local`) and placing them by the PTX fragment tables, with f32
//! accumulation. The instruction is warp-collective: a warp runs it only with all 32 lanes.

use super::state::{Block, Fail, RegData, R};
use super::task::{Step, Task};
use crate::error::Fault;
use crate::ir::{Loc, MmaInst};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &MmaInst, loc: Loc) -> R<Step> {
    match i {
        MmaInst::Dot {
            a,
            b: bv,
            c,
            out,
            plan,
        } => {
            let Some(plan) = plan else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "dot has no mma plan: the interpreter runs planned programs (the output of \
                     passes::compile_program)",
                ));
            };
            // whole warps only (the scheduler lets lanes that are elsewhere arrive first)
            let base = task.base();
            let warps: Vec<u32> = {
                let mut w: Vec<u32> = task
                    .threads
                    .iter()
                    .map(|t| t.saturating_sub(base) / 32)
                    .collect();
                w.dedup();
                w
            };
            let p = b.program();
            let ta = p.register(a.tensor);
            if !ta.dtype.is_float() || !p.register(c.tensor).dtype.is_float() {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "dot: operands must be floating point",
                ));
            }
            let (la, lb, lc) = (
                b.prep.reg(a.tensor).ls,
                b.prep.reg(bv.tensor).ls,
                b.prep.reg(*out).ls,
            );
            let need_a = (plan.rep_m * plan.rep_k * 8) as usize;
            let need_b = (plan.rep_k * plan.rep_n * 4) as usize;
            let need_c = (plan.rep_m * plan.rep_n * 4) as usize;
            if la < need_a || lb < need_b || lc < need_c || b.prep.reg(c.tensor).ls < need_c {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "dot: the operands' layouts do not hold the plan's fragments",
                ));
            }
            // out = a @ b + c: start from c (in place when out is c's tensor)
            b.reg_mut(*out);
            if c.tensor != *out {
                b.reg_mut(c.tensor);
                let Some(RegData::Float(cv)) = b.regs[c.tensor.0 as usize].take() else {
                    return Err(Fail::new(Fault::Invalid, loc, "dot: c is not a float tile"));
                };
                if let Some(RegData::Float(ov)) = b.regs[out.0 as usize].as_mut() {
                    for &t in &task.threads {
                        let t = t as usize;
                        ov[t * lc..t * lc + need_c].copy_from_slice(&cv[t * lc..t * lc + need_c]);
                    }
                }
                b.regs[c.tensor.0 as usize] = Some(RegData::Float(cv));
            }
            b.reg_mut(a.tensor);
            b.reg_mut(bv.tensor);
            let Some(RegData::Float(mut ov)) = b.regs[out.0 as usize].take() else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "dot: out is not a float tile",
                ));
            };
            let (Some(RegData::Float(av)), Some(RegData::Float(bvv))) = (
                b.regs[a.tensor.0 as usize].as_ref(),
                b.regs[bv.tensor.0 as usize].as_ref(),
            ) else {
                b.regs[out.0 as usize] = Some(RegData::Float(ov));
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "dot: operands are not float tiles",
                ));
            };
            let prep = b.prep;
            let (fa, fb, fc) = (&prep.frag_a, &prep.frag_b, &prep.frag_c);
            let mut ta16 = [0f32; 256];
            let mut tb = [0f32; 128];
            let mut tc = [0f32; 128];
            for &w in &warps {
                let t0 = (base + w * 32) as usize;
                for ki in 0..plan.rep_k {
                    for mi in 0..plan.rep_m {
                        let a0 = plan.a_local(mi, ki) as usize;
                        for lane in 0..32 {
                            let row = (t0 + lane) * la + a0;
                            for e in 0..8 {
                                ta16[fa[lane * 8 + e]] = av[row + e];
                            }
                        }
                        for ni in 0..plan.rep_n {
                            let b0 = plan.b_local(ki, ni) as usize;
                            let c0 = plan.c_local(mi, ni) as usize;
                            for lane in 0..32 {
                                let rb = (t0 + lane) * lb + b0;
                                let rc = (t0 + lane) * lc + c0;
                                for e in 0..4 {
                                    tb[fb[lane * 4 + e]] = bvv[rb + e];
                                    tc[fc[lane * 4 + e]] = ov[rc + e];
                                }
                            }
                            mma_16x8x16(&ta16, &tb, &mut tc);
                            for lane in 0..32 {
                                let rc = (t0 + lane) * lc + c0;
                                for e in 0..4 {
                                    ov[rc + e] = tc[fc[lane * 4 + e]];
                                }
                            }
                            b.stats.mma += 1;
                        }
                    }
                }
            }
            b.regs[out.0 as usize] = Some(RegData::Float(ov));
            Ok(Step::Next)
        }
    }
}

/// `d = a · b + d` for a 16x16 A, a 16x8 B and a 16x8 D, accumulating in f32 (products of
/// 16-bit values are exact in f32).
fn mma_16x8x16(a: &[f32; 256], b: &[f32; 128], d: &mut [f32; 128]) {
    for r in 0..16 {
        let ar = &a[r * 16..r * 16 + 16];
        for c in 0..8 {
            let mut acc = d[r * 8 + c];
            for k in 0..16 {
                acc += ar[k] * b[k * 8 + c];
            }
            d[r * 8 + c] = acc;
        }
    }
}
