//! Warp-group MMA as `codegen/wgmma.rs` emits it, with its asynchrony made explicit:
//! `wgmma.mma` records the product for its warp group; `commit_group` closes the group of
//! products issued since the last commit; `wait_group(n)` completes the oldest groups until at
//! most `n` remain. A product runs when it completes (as late as the hardware may run it):
//! `d[M, N] += a[M, K] @ b[K, N]` per `m64nNk16` instruction in the codegen's order, operands
//! read from shared memory through the tiles' layouts (or from the lanes' registers for a
//! register `a`), f32 accumulation.
//!
//! Using the accumulator before the wait that covers it, starting a product on a tile a TMA
//! copy is still writing, and overwriting a tile an unfinished product reads are faults.

use super::sched::{State, Step, Task};
use super::state::{bits_to_f32, read_bits, Block, Fail, RegData, R};
use super::Fault;
use crate::ir::{Loc, RegId, SharedId, SharedView, WgmmaA, WgmmaInst};
use crate::layout::WgmmaPlan;
use std::collections::VecDeque;

/// One issued `wgmma.mma`.
#[derive(Clone, Debug)]
pub(crate) struct WgOp {
    pub a: WgmmaA,
    pub b: SharedView,
    pub d: RegId,
    pub plan: WgmmaPlan,
    /// First block thread of the group the instruction ran in (layouts are relative to it).
    pub base: u32,
    pub loc: Loc,
}

/// The products in flight of one warp group.
#[derive(Clone, Debug, Default)]
pub(crate) struct WgState {
    /// Issued since the last commit.
    pub open: Vec<WgOp>,
    /// Committed groups, oldest first.
    pub groups: VecDeque<Vec<WgOp>>,
}

impl WgState {
    fn ops(&self) -> impl Iterator<Item = &WgOp> {
        self.open.iter().chain(self.groups.iter().flatten())
    }
}

/// The warp groups (block thread / 128) of a task, when the task holds each of them whole.
fn warp_groups(task: &Task<'_>) -> Option<Vec<u32>> {
    let mut wgs: Vec<u32> = task.threads.iter().map(|t| t / 128).collect();
    wgs.dedup();
    (wgs.len() * 128 == task.threads.len()).then_some(wgs)
}

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &WgmmaInst, loc: Loc) -> R<Step> {
    if matches!(i, WgmmaInst::Fence) {
        // orders register accesses; the interpreter's are in program order already
        return Ok(Step::Next);
    }
    let Some(wgs) = warp_groups(task) else {
        return Ok(Step::Wait(State::Converge {
            collective: true,
            loc,
        }));
    };
    #[allow(unreachable_patterns)]
    match i {
        WgmmaInst::Mma { a, b: bv, d, plan } => {
            let Some(plan) = plan else {
                return Err(Fail::new(
                    Fault::Invalid,
                    loc,
                    "wgmma.mma has no plan: the interpreter runs planned programs (the output of \
                     passes::compile_program)",
                ));
            };
            if let WgmmaA::Shared(v) = a {
                super::memory::check_no_copy_in_flight(b, v.tensor, "wgmma.mma", loc)?;
                check_published(b, v.tensor, loc)?;
            }
            super::memory::check_no_copy_in_flight(b, bv.tensor, "wgmma.mma", loc)?;
            check_published(b, bv.tensor, loc)?;
            let op = WgOp {
                a: a.clone(),
                b: *bv,
                d: *d,
                plan: *plan,
                base: task.base(),
                loc,
            };
            for wg in wgs {
                b.wgmma.entry(wg).or_default().open.push(op.clone());
            }
        }
        WgmmaInst::Commit => {
            for wg in wgs {
                let st = b.wgmma.entry(wg).or_default();
                let g = std::mem::take(&mut st.open);
                st.groups.push_back(g);
            }
        }
        WgmmaInst::Wait(n) => {
            let keep = *n as usize;
            for wg in wgs {
                // the oldest groups complete first, until at most `n` are left
                while let Some(group) = b
                    .wgmma
                    .get_mut(&wg)
                    .filter(|st| st.groups.len() > keep)
                    .and_then(|st| st.groups.pop_front())
                {
                    for op in group {
                        run(b, &op, wg)?;
                    }
                }
            }
        }
        other => {
            return Err(Fail::new(
                Fault::Unsupported,
                loc,
                format!("`{}` is not supported by the interpreter yet", other.name()),
            ))
        }
    }
    Ok(Step::Next)
}

/// Fails when an instruction other than a wgmma uses a register tile that an unfinished wgmma
/// of one of the task's warp groups writes.
pub(crate) fn check_accumulators(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    regs: &[RegId],
    what: &str,
    loc: Loc,
) -> R<()> {
    if b.wgmma.is_empty() || regs.is_empty() {
        return Ok(());
    }
    let mut wgs: Vec<u32> = task.threads.iter().map(|t| t / 128).collect();
    wgs.dedup();
    for wg in wgs {
        let Some(st) = b.wgmma.get(&wg) else {
            continue;
        };
        if let Some(op) = st.ops().find(|op| regs.contains(&op.d)) {
            let name = &b.program().register(op.d).name;
            let committed = st.open.iter().all(|o| !std::ptr::eq(o, op));
            return Err(Fail::new(
                Fault::ReadBeforeWait,
                loc,
                format!(
                    "{what} uses accumulator `{name}` while a wgmma into it is unfinished: {}",
                    if committed {
                        "wgmma.wait_group(..) until its group is covered first"
                    } else {
                        "it was never committed; wgmma.commit_group() and wgmma.wait_group(..) first"
                    }
                ),
            )
            .note(op.loc, "the wgmma was issued here"));
        }
    }
    Ok(())
}

/// Fails when a copy into `dst` is issued while an unfinished wgmma reads its bytes.
pub(crate) fn check_operands_free(b: &Block<'_, '_>, dst: SharedId, loc: Loc) -> R<()> {
    if b.wgmma.is_empty() {
        return Ok(());
    }
    let me = b.tile_range(dst);
    let overlaps = |s: SharedId| {
        let r = b.tile_range(s);
        me.0 < r.1 && r.0 < me.1
    };
    for st in b.wgmma.values() {
        for op in st.ops() {
            let reads_a = matches!(&op.a, WgmmaA::Shared(v) if overlaps(v.tensor));
            if reads_a || overlaps(op.b.tensor) {
                let name = &b.program().shared(dst).name;
                return Err(Fail::new(
                    Fault::OverwriteBeforeWait,
                    loc,
                    format!(
                        "tma.global_to_shared overwrites shared tensor `{name}` while a wgmma \
                         that reads it is unfinished: wgmma.wait_group(..) until its group is \
                         covered (and let the producer know) before reusing the tile"
                    ),
                )
                .note(op.loc, "the wgmma was issued here"));
            }
        }
    }
    Ok(())
}

/// Reads element `(row, col)` of a `[rows, cols]` operand from a shared view.
fn shared_elem(b: &Block<'_, '_>, v: &SharedView, row: i64, col: i64) -> Option<f32> {
    let d = b.program().shared(v.tensor);
    let l = d.layout.as_ref()?;
    let coords = if v.transposed { [col, row] } else { [row, col] };
    if coords[0] < 0 || coords[0] >= d.shape[0] || coords[1] < 0 || coords[1] >= d.shape[1] {
        return None;
    }
    let at = d.offset? as usize + l.byte_offset(&coords) as usize;
    let eb = d.dtype.nbytes() as usize;
    (at + eb <= b.smem.len()).then(|| bits_to_f32(read_bits(&b.smem, at, d.dtype), d.dtype))
}

/// Completes one product for warp group `wg`.
fn run(b: &mut Block<'_, '_>, op: &WgOp, wg: u32) -> R<()> {
    let p = op.plan;
    let (m, n, k) = (p.rep_m * 64, p.total_n(), p.k_steps * 16);
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
        WgmmaA::Shared(v) => {
            for r in 0..m {
                for c in 0..k {
                    am[(r * k + c) as usize] =
                        shared_elem(b, v, r, c).ok_or_else(|| bad("operand a"))?;
                }
            }
        }
        WgmmaA::Register(v) => {
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
    // the accumulator, gathered through its layout
    let info = b.prep.reg(op.d);
    let (ls, nthreads) = (info.ls, info.nthreads);
    let flat_t = info.flat_t.clone();
    let flat_l = info.flat_l.clone();
    b.reg_mut(op.d);
    let Some(RegData::Float(dv)) = b.regs[op.d.0 as usize].as_mut() else {
        return Err(bad("accumulator"));
    };
    let mut dm = vec![0f32; (m * n) as usize];
    let index = |t: u32, l: usize| -> Option<usize> {
        let ti = (t.saturating_sub(op.base) as usize) % nthreads;
        let f = flat_t[ti] + flat_l[l];
        (f >= 0 && f < m * n).then_some(f as usize)
    };
    for t in wg * 128..wg * 128 + 128 {
        for l in 0..ls {
            let f = index(t, l).ok_or_else(|| bad("accumulator"))?;
            dm[f] = dv[t as usize * ls + l];
        }
    }
    // the codegen's order: K steps outer, then row blocks and N chunks; one instruction adds
    // a 64 x n x 16 product
    for ki in 0..p.k_steps {
        for r in 0..m {
            let arow = &am[(r * k + ki * 16) as usize..(r * k + ki * 16 + 16) as usize];
            for c in 0..n {
                let mut acc = dm[(r * n + c) as usize];
                for (kk, x) in arow.iter().enumerate() {
                    acc += x * bm[((ki * 16 + kk as i64) * n + c) as usize];
                }
                dm[(r * n + c) as usize] = round(acc);
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

/// Fails when the async proxy is about to read a tile written by ordinary stores whose threads
/// have not fenced since.
fn check_published(b: &Block<'_, '_>, t: crate::ir::SharedId, loc: Loc) -> R<()> {
    if let Some((at, writers)) = &b.proxy_dirty[t.0 as usize] {
        let name = &b.program().shared(t).name;
        return Err(Fail::new(
            Fault::MissingProxyFence,
            loc,
            format!(
                "wgmma.mma reads `{name}`, which {} thread(s) wrote with store_shared and have not \
                 published with fence_proxy_async: the tensor cores may read stale bytes",
                writers.len()
            ),
        )
        .note(*at, format!("`{name}` was written here")));
    }
    Ok(())
}
