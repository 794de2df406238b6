//! Elementwise register operations as `codegen/arithmetic.rs` emits them: the source and the
//! result share a layout, so local element `l` of each thread maps to local element `l`.

use super::state::{Block, Fail, RegData, R};
use super::task::{Step, Task};
use crate::error::Fault;
use crate::ir::{ArithInst, DType, Loc};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &ArithInst, loc: Loc) -> R<Step> {
    match i {
        ArithInst::Cast { src, out } => {
            let p = b.program();
            let (st, ot) = (p.register(src.tensor).dtype, p.register(*out).dtype);
            let (ls_in, ls) = (b.prep.reg(src.tensor).ls, b.prep.reg(*out).ls);
            if ls_in != ls {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "cast: the source and the result have different layouts",
                ));
            }
            let supported = matches!((st, ot), (DType::F32, DType::F16 | DType::BF16))
                || matches!((st, ot), (DType::F16 | DType::BF16, DType::F32))
                || st == ot
                || !st.is_float()
                || (st == DType::F32 && !ot.is_float());
            if !supported || (!st.is_float() && matches!(ot, DType::F16 | DType::BF16)) {
                return Err(Fail::new(
                    Fault::Unsupported,
                    loc,
                    format!("cast {st} -> {ot} is not supported by the interpreter yet"),
                ));
            }
            b.reg_mut(src.tensor);
            b.reg_mut(*out);
            if src.tensor == *out {
                return Ok(Step::Next);
            }
            let Some(input) = b.regs[src.tensor.0 as usize].take() else {
                return Ok(Step::Next);
            };
            if let Some(o) = b.regs[out.0 as usize].as_mut() {
                for &t in &task.threads {
                    let r = t as usize * ls..(t as usize + 1) * ls;
                    match (&input, &mut *o) {
                        (RegData::Float(x), RegData::Float(y)) => {
                            for (d, s) in y[r.clone()].iter_mut().zip(&x[r]) {
                                // 16-bit values are kept exactly in f32: widening is a copy
                                *d = match ot {
                                    // round to nearest even, as cvt.rn does
                                    DType::F16 => half::f16::from_f32(*s).to_f32(),
                                    DType::BF16 => half::bf16::from_f32(*s).to_f32(),
                                    _ => *s,
                                };
                            }
                        }
                        (RegData::Float(x), RegData::Int(y)) => {
                            for (d, s) in y[r.clone()].iter_mut().zip(&x[r]) {
                                // C truncates toward zero (saturating where C leaves it undefined)
                                *d = crate::ir::wrap_to(*s as i64, ot);
                            }
                        }
                        (RegData::Int(x), RegData::Float(y)) => {
                            for (d, s) in y[r.clone()].iter_mut().zip(&x[r]) {
                                *d = *s as f32;
                            }
                        }
                        (RegData::Int(x), RegData::Int(y)) => {
                            for (d, s) in y[r.clone()].iter_mut().zip(&x[r]) {
                                *d = crate::ir::wrap_to(*s, ot);
                            }
                        }
                    }
                }
            }
            b.regs[src.tensor.0 as usize] = Some(input);
            Ok(Step::Next)
        }
    }
}
