//! Warp-group MMA as `codegen/wgmma.rs` emits it, with its asynchrony made explicit:
//! `wgmma.mma` records the product for its warp group; `commit_group` closes the group of
//! products issued since the last commit; `wait_group(n)` completes the oldest groups until at
//! most `n` remain. A product runs when it completes (as late as the hardware may run it):
//! `d[M, N] += a[M, K] @ b[K, N]` per `m64nNk16` instruction in the codegen's order, operands
//! read from shared memory through the tiles' layouts (or from the lanes' registers for a
//! register `a`), f32 accumulation.
//!
//! Using the accumulator before the wait that covers it, starting a product on a tile a TMA
//! copy is still writing, and overwriting a tile an unfinished product reads are faults
//! (`hazards.rs`, from the instruction's facts).

use super::hazards;
use super::region::Placed;
use super::state::{bits_to_f32, read_bits, Block, Fail, RegData, Retire, Work, R};
use super::task::{Step, Task};
use super::views;
use crate::error::Fault;
use crate::ir::facts::AsyncGroup;
use crate::ir::{Facts, Loc, RegId, RegView, WgmmaA, WgmmaInst, WgmmaTarget};
use crate::layout::WgmmaPlan;

/// A shared operand as it was issued: its elements (a tile, or the stage the task indexed) and
/// whether it is seen transposed.
#[derive(Clone, Debug)]
struct SharedOperand {
    placed: Placed,
    transposed: bool,
}

/// The `[M, K]` operand as it was issued.
#[derive(Clone, Debug)]
enum OperandA {
    Shared(SharedOperand),
    Register(RegView),
}

/// One issued `wgmma.mma` of one warp group.
#[derive(Clone, Debug)]
struct WgOp {
    a: OperandA,
    b: SharedOperand,
    d: RegId,
    target: WgmmaTarget,
    plan: WgmmaPlan,
    /// First block thread of the group the instruction ran in (layouts are relative to it).
    base: u32,
    /// The warp group (block thread / 128).
    wg: u32,
    loc: Loc,
}

impl Work for WgOp {
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()> {
        run(b, &self)
    }
}

pub(crate) fn exec(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    i: &WgmmaInst,
    facts: &Facts<'_>,
    loc: Loc,
) -> R<Step> {
    let kind = AsyncGroup::Wgmma;
    match i {
        // orders register accesses; the interpreter's are in program order already
        WgmmaInst::Fence => {}
        WgmmaInst::Mma {
            a,
            b: bv,
            d,
            target,
            plan,
        } => {
            let Some(plan) = plan else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "wgmma.mma has no plan: the interpreter runs planned programs (the output of \
                     passes::compile_program)",
                ));
            };
            let shared = |v: &crate::ir::SharedView| -> R<SharedOperand> {
                Ok(SharedOperand {
                    placed: views::place(b, task, v, i.name(), loc)?,
                    transposed: v.transposed,
                })
            };
            let a = match a {
                WgmmaA::Shared(v) => OperandA::Shared(shared(v)?),
                WgmmaA::Register(v) => OperandA::Register(*v),
            };
            let bv = shared(bv)?;
            let touches = hazards::touches(b, task, facts, i.name(), loc)?;
            for (wg, threads) in hazards::owners(task, kind) {
                let op = WgOp {
                    a: a.clone(),
                    b: bv.clone(),
                    d: *d,
                    target: *target,
                    plan: *plan,
                    base: task.base(),
                    wg,
                    loc,
                };
                let retire = Retire::Group {
                    kind,
                    owner: wg,
                    group: None,
                };
                hazards::issue(
                    b,
                    i.name(),
                    "a wgmma",
                    loc,
                    touches.clone(),
                    threads,
                    retire,
                    Box::new(op),
                );
            }
        }
        WgmmaInst::Commit => hazards::commit(b, task, kind),
        WgmmaInst::Wait(n) => hazards::wait(b, task, kind, *n, false)?,
    }
    Ok(Step::Next)
}

/// Reads element `(row, col)` of a `[rows, cols]` operand from a shared view.
fn shared_elem(b: &Block<'_, '_>, v: &SharedOperand, row: i64, col: i64) -> Option<f32> {
    let d = b.program().shared(v.placed.tensor);
    let (l, shape) = (&v.placed.layout, &v.placed.shape);
    let coords = if v.transposed { [col, row] } else { [row, col] };
    if shape.len() != 2
        || coords[0] < 0
        || coords[0] >= shape[0]
        || coords[1] < 0
        || coords[1] >= shape[1]
    {
        return None;
    }
    let at = v.placed.range.0 as usize + l.byte_offset(&coords) as usize;
    let eb = d.dtype.nbytes() as usize;
    (at + eb <= b.smem.len()).then(|| bits_to_f32(read_bits(&b.smem, at, d.dtype), d.dtype))
}

/// Completes one product for its warp group.
fn run(b: &mut Block<'_, '_>, op: &WgOp) -> R<()> {
    let wg = op.wg;
    let p = op.plan;
    let (m, n, k, kd) = (p.rep_m * 64, p.total_n(), p.k_steps * p.k_inst, p.k_inst);
    let bad = |what: &str| {
        Fail::new(
            Fault::Invalid,
            op.loc,
            format!("wgmma.mma: {what} does not fit the plan"),
        )
    };
    // operands as dense matrices
    let mut am = vec![0f32; (m * k) as usize];
    match &op.a {
        OperandA::Shared(v) => {
            for r in 0..m {
                for c in 0..k {
                    am[(r * k + c) as usize] =
                        shared_elem(b, v, r, c).ok_or_else(|| bad("operand a"))?;
                }
            }
        }
        OperandA::Register(v) => {
            let info = b.prep.reg(v.tensor);
            let perm = v.perm(info.rank);
            let Some(RegData::Float(vals)) = b.regs[v.tensor.0 as usize].as_ref() else {
                return Err(bad("register operand a (never written)"));
            };
            for t in 0..128u32 {
                let abs = wg * 128 + t;
                let ti = (abs.saturating_sub(op.base) as usize) % info.nthreads;
                for l in 0..info.ls {
                    let c: Vec<i64> = (0..info.rank)
                        .map(|dd| {
                            info.tc[ti * info.rank + perm[dd]] + info.lc[l * info.rank + perm[dd]]
                        })
                        .collect();
                    if c.len() != 2 || c[0] >= m || c[1] >= k || c[0] < 0 || c[1] < 0 {
                        return Err(bad("register operand a"));
                    }
                    am[(c[0] * k + c[1]) as usize] = vals[abs as usize * info.ls + l];
                }
            }
        }
    }
    let mut bm = vec![0f32; (k * n) as usize];
    for r in 0..k {
        for c in 0..n {
            bm[(r * n + c) as usize] =
                shared_elem(b, &op.b, r, c).ok_or_else(|| bad("operand b"))?;
        }
    }
    // an f16 accumulator (f16 inputs) is rounded after every instruction
    let round: fn(f32) -> f32 = match b.program().register(op.d).dtype {
        crate::ir::DType::F16 => |x| half::f16::from_f32(x).to_f32(),
        crate::ir::DType::BF16 => |x| half::bf16::from_f32(x).to_f32(),
        _ => |x| x,
    };
    // the whole accumulator's columns (a window's product lands in `n` of them, from
    // `start`)
    let full = b
        .program()
        .register(op.d)
        .shape
        .get(1)
        .copied()
        .unwrap_or(n);
    // the accumulator, gathered through its layout
    let info = b.prep.reg(op.d);
    let (ls, nthreads) = (info.ls, info.nthreads);
    let flat_t = info.flat_t.clone();
    let flat_l = info.flat_l.clone();
    b.reg_mut(op.d);
    let Some(RegData::Float(dv)) = b.regs[op.d.0 as usize].as_mut() else {
        return Err(bad("accumulator"));
    };
    let start = op.target.window.unwrap_or(0);
    let mut dm = vec![0f32; (m * full) as usize];
    let index = |t: u32, l: usize| -> Option<usize> {
        let ti = (t.saturating_sub(op.base) as usize) % nthreads;
        let f = flat_t[ti] + flat_l[l];
        (f >= 0 && f < m * full).then_some(f as usize)
    };
    for t in wg * 128..wg * 128 + 128 {
        for l in 0..ls {
            let f = index(t, l).ok_or_else(|| bad("accumulator"))?;
            dm[f] = dv[t as usize * ls + l];
        }
    }
    if start < 0 || start.saturating_add(n) > full {
        return Err(bad("the accumulator's window"));
    }
    if op.target.overwrite {
        // scale-d 0 on the first K step: the old values are not read
        for r in 0..m {
            for c in 0..n {
                dm[(r * full + start + c) as usize] = 0.0;
            }
        }
    }
    // the codegen's order: K steps outer, then row blocks and N chunks; one instruction adds
    // a 64 x n x 16 product (x 32 for FP8, whose tensor cores round their partial sums more
    // coarsely than this f32 sum: exact only where every partial sum is small)
    for ki in 0..p.k_steps {
        for r in 0..m {
            let arow = &am[(r * k + ki * kd) as usize..(r * k + ki * kd + kd) as usize];
            for c in 0..n {
                let at = (r * full + start + c) as usize;
                let mut acc = dm[at];
                for (kk, x) in arow.iter().enumerate() {
                    acc += x * bm[((ki * kd + kk as i64) * n + c) as usize];
                }
                dm[at] = round(acc);
            }
        }
    }
    for t in wg * 128..wg * 128 + 128 {
        for l in 0..ls {
            if let Some(f) = index(t, l) {
                dv[t as usize * ls + l] = dm[f];
            }
        }
    }
    b.stats.mma += (p.rep_m * p.n_chunks * p.k_steps) as u64;
    Ok(())
}
