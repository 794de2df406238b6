//! Tiles seen with another shape, as `codegen/shape.rs` emits them: each thread's result
//! registers are copies of its own source registers (the table the layouts give).

use super::state::{Block, Fail, RegData, R};
use super::task::{Step, Task};
use crate::error::Fault;
use crate::ir::{Loc, ShapeInst};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &ShapeInst, loc: Loc) -> R<Step> {
    let (src, out) = i.operands();
    let Some(table) = i.source_locals(b.program()) else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "{}: the layouts do not fit: the interpreter runs planned programs (the output \
                 of passes::compile_program)",
                i.name()
            ),
        ));
    };
    let (ls_src, ls_out) = (b.prep.reg(src.tensor).ls, b.prep.reg(out).ls);
    b.reg_mut(src.tensor);
    let Some(data) = b.regs[src.tensor.0 as usize].take() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "the source has no registers",
        ));
    };
    let dst = b.reg_mut(out);
    for &t in &task.threads {
        let (from, to) = (t as usize * ls_src, t as usize * ls_out);
        for (l, &s) in table.iter().enumerate().take(ls_out) {
            match (&data, &mut *dst) {
                (RegData::Float(x), RegData::Float(y)) => y[to + l] = x[from + s],
                (RegData::Int(x), RegData::Int(y)) => y[to + l] = x[from + s],
                (RegData::Float(x), RegData::Int(y)) => y[to + l] = x[from + s] as i64,
                (RegData::Int(x), RegData::Float(y)) => y[to + l] = x[from + s] as f32,
            }
        }
    }
    b.regs[src.tensor.0 as usize] = Some(data);
    Ok(Step::Next)
}
