//! Elementwise register operations and reductions as `codegen/arithmetic.rs` emits them:
//! floats computed in f32 and rounded once to the result's type, integers wrapping in their
//! type at every operation, broadcast operands read through the same local-element tables,
//! and reductions folded in the generated code's order (a thread's elements in local order,
//! then butterflies over the lane bits from the lowest, then the warps' partials in the order
//! of their thread indices), so that sums give the generated code's bits. Transcendental
//! functions (`exp`, `log`, `sin`, ...) use Rust's, which may differ from CUDA's by an ulp or
//! two.

use super::state::{Block, Fail, RegData, R};
use super::task::{self, State, Step, Task};
use crate::error::Fault;
use crate::ir::{
    ArithInst, BinaryOp, DType, Loc, Program, RandomKind, ReduceOp, RegId, RegView, ScanOp,
    TileExpr, UnaryOp,
};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &ArithInst, loc: Loc) -> R<Step> {
    match i {
        ArithInst::Cast { src, out } => exec_cast(b, task, src, *out, loc),
        ArithInst::Map { expr, out } | ArithInst::Assign { expr, out } => {
            exec_map(b, task, expr, *out, loc)
        }
        ArithInst::Reduce {
            src,
            op,
            dim,
            out,
            scratch,
            ..
        } => {
            let across = crate::ir::reduce_crosses_warps(b.program(), *scratch);
            exec_reduce(b, task, src, *op, *dim, *out, across, loc)
        }
        ArithInst::Scan {
            src,
            op,
            dim,
            exclusive,
            out,
            ..
        } => {
            if i.scans_through_shared(b.program())
                && task.threads.len() < b.prep.block_threads as usize
            {
                // the whole block meets around the scratch
                return Ok(Step::Wait(State::Converge {
                    collective: true,
                    loc,
                }));
            }
            exec_scan(b, task, src, (*op, *dim, *exclusive), *out, loc)
        }
    }
}

/// The identity an exclusive scan gives a line's first element.
fn scan_identity(op: ScanOp, t: DType) -> V {
    match (op, t) {
        (ScanOp::Sum, t) if t.is_float() => V::F(0.0),
        (ScanOp::Prod, t) if t.is_float() => V::F(1.0),
        (ScanOp::Max, t) if t.is_float() => V::F(f32::NEG_INFINITY),
        (ScanOp::Min, t) if t.is_float() => V::F(f32::INFINITY),
        (ScanOp::Sum, _) => V::I(0),
        (ScanOp::Prod, _) => V::I(1),
        (ScanOp::Max, DType::U32) => V::I(0),
        (ScanOp::Min, DType::U32) => V::I(i64::from(u32::MAX)),
        (ScanOp::Max, _) => V::I(i64::from(i32::MIN)),
        (ScanOp::Min, _) => V::I(i64::from(i32::MAX)),
    }
}

/// A scan as the generated code runs it: each line along `dim` combined element after element
/// in the order of its coordinate (in f32 for floats), whichever threads hold it.
fn exec_scan(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    src: &RegView,
    (op, dim, exclusive): (ScanOp, usize, bool),
    out: RegId,
    loc: Loc,
) -> R<Step> {
    let p = b.program();
    let Some(sl) = p.register(src.tensor).layout.as_ref() else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "a scan of a tile without a layout",
        ));
    };
    let sl = src.layout_of(sl);
    let shape = p.view_shape(src);
    let t = p.register(src.tensor).dtype;
    let (n, inner) = (shape[dim], shape[dim + 1..].iter().product::<i64>());
    let flat = |c: &[i64]| c.iter().zip(&shape).fold(0i64, |a, (&x, &m)| a * m + x);
    let (ls, nt) = (b.prep.reg(src.tensor).ls, sl.num_threads().max(1));
    let base = task.base();
    b.reg_mut(src.tensor);
    let data = b.regs[src.tensor.0 as usize]
        .as_ref()
        .expect("created above");
    // every element the task's threads hold, by its row-major index
    let mut elems: std::collections::HashMap<i64, V> = std::collections::HashMap::new();
    for &th in &task.threads {
        let ti = i64::from(th.saturating_sub(base)) % nt;
        for l in 0..ls {
            let v = get(data, th as usize * ls + l);
            elems.entry(flat(&sl.coords(ti, l as i64))).or_insert(v);
        }
    }
    // the scanned value of every element of the lines present
    let mut scanned: std::collections::HashMap<i64, V> = std::collections::HashMap::new();
    let bop = op.binary();
    let starts: std::collections::BTreeSet<i64> =
        elems.keys().map(|&f| f - (f / inner % n) * inner).collect();
    for start in starts {
        let mut acc: Option<V> = None;
        for i in 0..n {
            let at = start + i * inner;
            let Some(&x) = elems.get(&at) else { continue };
            let next = match acc {
                None => x,
                Some(a) => binary(bop, a, x, t).unwrap_or(a),
            };
            scanned.insert(
                at,
                if exclusive {
                    acc.unwrap_or_else(|| scan_identity(op, t))
                } else {
                    next
                },
            );
            acc = Some(next);
        }
    }
    let ol = p
        .register(out)
        .layout
        .as_ref()
        .expect("a scan's result has its source's layout");
    let (ols, ont) = (b.prep.reg(out).ls, ol.num_threads().max(1));
    let mut vals = Vec::with_capacity(task.threads.len());
    for &th in &task.threads {
        let ti = i64::from(th.saturating_sub(base)) % ont;
        let row: Vec<V> = (0..ols)
            .map(|l| {
                scanned
                    .get(&flat(&ol.coords(ti, l as i64)))
                    .copied()
                    .unwrap_or(V::I(0))
            })
            .collect();
        vals.push(row);
    }
    write_out(
        b,
        task,
        out,
        if t.is_float() { DType::F32 } else { t },
        &vals,
    );
    Ok(Step::Next)
}

/// A value in its compute type: floats as f32, integers and booleans (0 or 1) as i64.
#[derive(Clone, Copy, Debug)]
enum V {
    F(f32),
    I(i64),
}

impl V {
    fn f(self) -> f32 {
        match self {
            V::F(x) => x,
            V::I(x) => x as f32,
        }
    }
    fn i(self) -> i64 {
        match self {
            V::I(x) => x,
            V::F(x) => x as i64,
        }
    }
}

/// Element `idx` of a tile's register file.
fn get(data: &RegData, idx: usize) -> V {
    match data {
        RegData::Float(x) => V::F(x[idx]),
        RegData::Int(x) => V::I(x[idx]),
    }
}

/// Converts a compute-type value of type `from` to type `to` as `cast_c` in the generated code
/// does: rounding to nearest even into 16-bit floats (kept as f32), truncation toward zero
/// from floats to integers, wrapping between integers.
fn convert(v: V, from: DType, to: DType) -> V {
    // values of 16-bit float types are computed in f32: converting to one always rounds
    if from == to && to.bits() > 16 {
        return v;
    }
    match to {
        DType::F16 => V::F(half::f16::from_f32(v.f()).to_f32()),
        DType::BF16 => V::F(half::bf16::from_f32(v.f()).to_f32()),
        DType::F32 => V::F(match v {
            V::I(x) if from == DType::U64 => x as u64 as f32,
            _ => v.f(),
        }),
        DType::Bool => V::I(match v {
            V::F(x) => (x != 0.0) as i64,
            V::I(x) => (x != 0) as i64,
        }),
        t @ DType::Float { .. } => {
            let f = t.float_format().expect("verified types are valid");
            V::F(f.decode(f.encode(v.f() as f64)) as f32)
        }
        // from floats: toward zero, as `__float2int_rz` (NaN gives 0), then the low bits
        t @ (DType::Int(_) | DType::UInt(_)) => V::I(crate::ir::wrap_to(
            match v {
                V::F(x) => x as i32 as i64,
                V::I(x) => x,
            },
            t,
        )),
        t => V::I(crate::ir::wrap_to(v.i(), t)),
    }
}

/// A value's bits (in type `from`) read as type `to` of the same width, as `view` in the
/// generated code.
fn bitcast(v: V, from: DType, to: DType) -> V {
    let bits: u32 = match from {
        DType::F32 => v.f().to_bits(),
        DType::F16 => u32::from(half::f16::from_f32(v.f()).to_bits()),
        DType::BF16 => u32::from(half::bf16::from_f32(v.f()).to_bits()),
        _ => v.i() as u32,
    };
    match to {
        DType::F32 => V::F(f32::from_bits(bits)),
        DType::F16 => V::F(half::f16::from_bits(bits as u16).to_f32()),
        DType::BF16 => V::F(half::bf16::from_bits(bits as u16).to_f32()),
        DType::I32 => V::I(i64::from(bits as i32)),
        _ => V::I(i64::from(bits)),
    }
}

/// The expression's scalars, evaluated once for the task (they are the same in every thread).
fn scalars(b: &Block<'_, '_>, task: &Task<'_>, x: &TileExpr, loc: Loc) -> R<Vec<V>> {
    let mut list = vec![];
    x.scalars(&mut list);
    list.into_iter()
        .map(|e| {
            if e.dtype().is_float() {
                task::float_value(b, task, e, loc).map(|v| V::F(v as f32))
            } else {
                task::value(b, task, e, loc).map(V::I)
            }
        })
        .collect()
}

/// What one thread's evaluation reads: the operand tiles' data and tables, the scalars.
struct Operands<'a> {
    p: &'a Program,
    tiles: Vec<(&'a RegData, usize)>,
    tables: Vec<Vec<usize>>,
    scalars: Vec<V>,
    thread: usize,
    local: usize,
    /// The output element's coordinates (for indices: [`TileExpr::Index`]).
    coords: Vec<i64>,
}

impl Operands<'_> {
    /// The value of `x` at this thread's local element; `next` counts the tiles and scalars
    /// met so far (the expression's order).
    fn eval(&self, x: &TileExpr, next: &mut (usize, usize), loc: Loc) -> R<V> {
        Ok(match x {
            TileExpr::Tile(_) => {
                let k = next.0;
                next.0 += 1;
                let (data, ls) = self.tiles[k];
                get(data, self.thread * ls + self.tables[k][self.local])
            }
            TileExpr::Scalar(_) => {
                next.1 += 1;
                self.scalars[next.1 - 1]
            }
            TileExpr::Unary(op, a) => {
                let t = a.dtype(self.p);
                let v = self.eval(a, next, loc)?;
                unary(*op, v, t)
            }
            TileExpr::Binary(op, a, c) => {
                let t = a.dtype(self.p);
                let (a, c) = (self.eval(a, next, loc)?, self.eval(c, next, loc)?);
                binary(*op, a, c, t).ok_or_else(|| {
                    Fail::new(Fault::Invalid, loc, "compute: integer division by zero")
                })?
            }
            TileExpr::Select(c, a, d) => {
                let c = self.eval(c, next, loc)?;
                let (a, d) = (self.eval(a, next, loc)?, self.eval(d, next, loc)?);
                if c.i() != 0 {
                    a
                } else {
                    d
                }
            }
            TileExpr::MulAdd(a, m, c) => {
                let t = a.dtype(self.p);
                let a = self.eval(a, next, loc)?;
                let (m, c) = (self.eval(m, next, loc)?, self.eval(c, next, loc)?);
                if t.is_float() {
                    // one rounding, as `fma.rn`
                    V::F(a.f().mul_add(m.f(), c.f()))
                } else {
                    let r = a.i().wrapping_mul(m.i()).wrapping_add(c.i());
                    V::I(crate::ir::wrap_to(r, t))
                }
            }
            TileExpr::Cast(to, a) => {
                let from = a.dtype(self.p);
                convert(self.eval(a, next, loc)?, from, *to)
            }
            TileExpr::Bitcast(to, a) => {
                let from = a.dtype(self.p);
                bitcast(self.eval(a, next, loc)?, from, *to)
            }
            TileExpr::Random { kind, counter, .. } => {
                let seed = self.scalars[next.1].i();
                next.1 += 1;
                let offset = self.eval(counter, next, loc)?.i();
                let w = crate::ir::philox::words(seed, offset);
                match kind {
                    RandomKind::Uniform => V::F(crate::ir::philox::uniform(w[0])),
                    RandomKind::Normal => V::F(crate::ir::philox::normal(w[0], w[1])),
                    RandomKind::Int => V::I(i64::from(w[0])),
                }
            }
            TileExpr::Index { shape, dim } => {
                let at = self.coords.len() - shape.len() + dim;
                V::I(if shape[*dim] == 1 { 0 } else { self.coords[at] })
            }
        })
    }
}

fn unary(op: UnaryOp, v: V, t: DType) -> V {
    if let V::F(x) = v {
        return V::F(match op {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp | UnaryOp::ExpApprox => x.exp(),
            UnaryOp::Exp2 | UnaryOp::Exp2Approx => x.exp2(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Square => x * x,
            // the hardware's approximation is not modelled: the accurate value, which the
            // GPU's differs from by its approximation error
            UnaryOp::Tanh | UnaryOp::TanhApprox => x.tanh(),
            UnaryOp::RecipApprox => 1.0 / x,
            UnaryOp::Not => (x == 0.0) as i64 as f32,
        });
    }
    let x = v.i();
    let r = match op {
        UnaryOp::Neg => x.wrapping_neg(),
        UnaryOp::Abs => x.wrapping_abs(),
        UnaryOp::Square => x.wrapping_mul(x),
        UnaryOp::Not => (x == 0) as i64,
        // floats only (checked)
        _ => x,
    };
    V::I(crate::ir::wrap_to(r, t))
}

/// `a op b` for operands of type `t`; `None` for an integer division by zero.
fn binary(op: BinaryOp, a: V, b: V, t: DType) -> Option<V> {
    if t.is_float() {
        let (a, b) = (a.f(), b.f());
        return Some(match op {
            BinaryOp::Add => V::F(a + b),
            BinaryOp::Sub => V::F(a - b),
            BinaryOp::Mul => V::F(a * b),
            BinaryOp::Div => V::F(a / b),
            BinaryOp::Max => V::F(a.max(b)),
            BinaryOp::Min => V::F(a.min(b)),
            BinaryOp::Lt => V::I((a < b) as i64),
            BinaryOp::Le => V::I((a <= b) as i64),
            BinaryOp::Gt => V::I((a > b) as i64),
            BinaryOp::Ge => V::I((a >= b) as i64),
            BinaryOp::Eq => V::I((a == b) as i64),
            BinaryOp::Ne => V::I((a != b) as i64),
            BinaryOp::And | BinaryOp::Or => V::I(0),
        });
    }
    let (a, b) = (a.i(), b.i());
    // unsigned 64-bit values are kept as their bits
    let ord = if t == DType::U64 {
        (a as u64).cmp(&(b as u64))
    } else {
        a.cmp(&b)
    };
    let r = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div if b == 0 => return None,
        BinaryOp::Div if t == DType::U64 => ((a as u64) / (b as u64)) as i64,
        BinaryOp::Div => a.wrapping_div(b),
        BinaryOp::Max => {
            if ord.is_ge() {
                a
            } else {
                b
            }
        }
        BinaryOp::Min => {
            if ord.is_le() {
                a
            } else {
                b
            }
        }
        BinaryOp::Lt => return Some(V::I(ord.is_lt() as i64)),
        BinaryOp::Le => return Some(V::I(ord.is_le() as i64)),
        BinaryOp::Gt => return Some(V::I(ord.is_gt() as i64)),
        BinaryOp::Ge => return Some(V::I(ord.is_ge() as i64)),
        BinaryOp::Eq => return Some(V::I((a == b) as i64)),
        BinaryOp::Ne => return Some(V::I((a != b) as i64)),
        BinaryOp::And => (a != 0 && b != 0) as i64,
        BinaryOp::Or => (a != 0 || b != 0) as i64,
    };
    Some(V::I(crate::ir::wrap_to(r, t)))
}

/// Writes `vals[t][j]` (compute-type values of type `from`) into `out`, rounded to its type.
fn write_out(b: &mut Block<'_, '_>, task: &Task<'_>, out: RegId, from: DType, vals: &[Vec<V>]) {
    let (ot, ls) = (b.program().register(out).dtype, b.prep.reg(out).ls);
    let data = b.reg_mut(out);
    for (&t, row) in task.threads.iter().zip(vals) {
        for (j, &v) in row.iter().enumerate() {
            let idx = t as usize * ls + j;
            match (convert(v, from, ot), &mut *data) {
                (V::F(x), RegData::Float(d)) => d[idx] = x,
                (V::I(x), RegData::Int(d)) => d[idx] = x,
                (v, RegData::Float(d)) => d[idx] = v.f(),
                (v, RegData::Int(d)) => d[idx] = v.i(),
            }
        }
    }
}

fn exec_map(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    x: &TileExpr,
    out: RegId,
    loc: Loc,
) -> R<Step> {
    let p = b.program();
    let Some(tables) = x.operand_locals(p, out) else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "compute: the operands' layouts do not fit the result's",
        ));
    };
    let scalars = scalars(b, task, x, loc)?;
    let mut views = vec![];
    x.tiles(&mut views);
    for v in &views {
        b.reg_mut(v.tensor);
    }
    let ls = b.prep.reg(out).ls;
    let from = x.dtype(p);
    let mut vals = Vec::with_capacity(task.threads.len());
    {
        let tiles = views
            .iter()
            .map(|v| {
                let data = b.regs[v.tensor.0 as usize].as_ref().expect("created above");
                (data, b.prep.reg(v.tensor).ls)
            })
            .collect();
        let mut ops = Operands {
            p,
            tiles,
            tables,
            scalars,
            thread: 0,
            local: 0,
            coords: vec![],
        };
        let (info, base) = (b.prep.reg(out), task.base());
        let indexed = x.has_index();
        for &t in &task.threads {
            ops.thread = t as usize;
            let ti = (t.saturating_sub(base) as usize) % info.nthreads.max(1);
            let mut row = Vec::with_capacity(ls);
            for l in 0..ls {
                ops.local = l;
                if indexed {
                    let r = info.rank;
                    ops.coords = (0..r)
                        .map(|d| info.tc[ti * r + d] + info.lc[l * r + d])
                        .collect();
                }
                row.push(ops.eval(x, &mut (0, 0), loc)?);
            }
            vals.push(row);
        }
    }
    write_out(b, task, out, from, &vals);
    Ok(Step::Next)
}

/// `a op b` as the reduction combines partial results of type `t`.
fn combine(op: ReduceOp, a: V, b: V, t: DType) -> V {
    let bop = match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
        ReduceOp::Any => BinaryOp::Or,
        ReduceOp::All => BinaryOp::And,
    };
    // float sums of 16-bit values stay in f32 until the result is written
    let ct = if t.is_float() { DType::F32 } else { t };
    binary(bop, a, b, ct).expect("reductions do not divide")
}

/// The value that leaves a reduction unchanged: what a masked-off register counts as.
fn reduce_identity(op: ReduceOp, t: DType) -> V {
    match (op, t) {
        (ReduceOp::Sum, _) => scan_identity(ScanOp::Sum, t),
        (ReduceOp::Max | ReduceOp::Min, t) if t.is_float() || t.bits() <= 32 => {
            let op = if op == ReduceOp::Max {
                ScanOp::Max
            } else {
                ScanOp::Min
            };
            scan_identity(op, t)
        }
        (ReduceOp::Max, DType::U64) => V::I(0),
        (ReduceOp::Min, DType::U64) => V::I(-1),
        (ReduceOp::Max, _) => V::I(i64::MIN),
        (ReduceOp::Min, _) => V::I(i64::MAX),
        (ReduceOp::Any, _) => V::I(0),
        (ReduceOp::All, _) => V::I(1),
    }
}

#[allow(clippy::too_many_arguments)]
fn exec_reduce(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    src: &RegView,
    op: ReduceOp,
    dim: usize,
    out: RegId,
    across_warps: bool,
    loc: Loc,
) -> R<Step> {
    let p = b.program();
    let bad = |m: &str| {
        Err(Fail::new(
            Fault::Invalid,
            loc,
            format!("{}: {m}", op.name()),
        ))
    };
    let Some(table) = crate::ir::reduce_locals(p, src, dim) else {
        return bad("the operand has no layout");
    };
    let layout = src.layout_of(p.register(src.tensor).layout.as_ref().expect("has tables"));
    let Some(bits) = layout.thread_bits(dim) else {
        return bad("the operand's layout cannot be combined across threads");
    };
    let t = p.register(src.tensor).dtype;
    let (n_out, ls) = (b.prep.reg(out).ls, b.prep.reg(src.tensor).ls);
    let base = task.base();
    let pos = |th: u32| task.threads.binary_search(&th).ok();
    // every partner of every thread must be here (whole warps, or the whole block)
    let local = |th: u32| th - base;
    let partner_of = |th: u32, m: u64| base + (local(th) as u64 ^ m) as u32;
    for &th in &task.threads {
        let mask = if across_warps { bits } else { bits & 31 };
        if crate::ir::subsets(mask)
            .iter()
            .any(|&m| pos(partner_of(th, m)).is_none())
        {
            return Ok(Step::Wait(State::Converge {
                collective: true,
                loc,
            }));
        }
    }
    b.reg_mut(src.tensor);
    let data = b.regs[src.tensor.0 as usize]
        .as_ref()
        .expect("created above");
    // 1. each thread's own elements, in local order (a masked-off register as the identity)
    let info = b.prep.reg(src.tensor);
    let identity = reduce_identity(op, t);
    let mut acc: Vec<Vec<V>> = task
        .threads
        .iter()
        .map(|&th| {
            let mut row: Vec<Option<V>> = vec![None; n_out];
            let ti = (th - base) as usize % info.nthreads;
            for (i, &j) in table.iter().enumerate().take(ls) {
                let v = if info.holds(ti, i) {
                    get(data, th as usize * ls + i)
                } else {
                    identity
                };
                row[j] = Some(match row[j] {
                    None => v,
                    Some(a) => combine(op, a, v, t),
                });
            }
            row.into_iter().map(|v| v.unwrap_or(V::I(0))).collect()
        })
        .collect();
    // 2. butterflies over the lane bits, lowest first
    for bit in 0..5 {
        let m = 1u64 << bit;
        if bits & m == 0 {
            continue;
        }
        let prev = acc.clone();
        for (k, &th) in task.threads.iter().enumerate() {
            let q = pos(partner_of(th, m)).expect("checked above");
            for j in 0..n_out {
                acc[k][j] = combine(op, prev[k][j], prev[q][j], t);
            }
        }
    }
    // 3. the warps' partials, in the order of their thread indices
    let warp_bits = bits & !31;
    if across_warps && warp_bits != 0 {
        let prev = acc.clone();
        let subs = crate::ir::subsets(warp_bits);
        for (k, &th) in task.threads.iter().enumerate() {
            for j in 0..n_out {
                let mut a = None;
                for &sub in &subs {
                    let who = base + ((local(th) as u64 & !warp_bits) | sub) as u32;
                    let v = prev[pos(who).expect("checked above")][j];
                    a = Some(match a {
                        None => v,
                        Some(a) => combine(op, a, v, t),
                    });
                }
                acc[k][j] = a.expect("the empty subset is always there");
            }
        }
    }
    let from = if t.is_float() { DType::F32 } else { t };
    write_out(b, task, out, from, &acc);
    Ok(Step::Next)
}

fn exec_cast(
    b: &mut Block<'_, '_>,
    task: &mut Task<'_>,
    src: &RegView,
    out: RegId,
    loc: Loc,
) -> R<Step> {
    let p = b.program();
    let (st, ot) = (p.register(src.tensor).dtype, p.register(out).dtype);
    let (ls_in, ls) = (b.prep.reg(src.tensor).ls, b.prep.reg(out).ls);
    if ls_in != ls {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "cast: the source and the result have different layouts",
        ));
    }
    b.reg_mut(src.tensor);
    let data = b.regs[src.tensor.0 as usize]
        .as_ref()
        .expect("created above");
    let vals: Vec<Vec<V>> = task
        .threads
        .iter()
        .map(|&th| (0..ls).map(|l| get(data, th as usize * ls + l)).collect())
        .collect();
    let _ = ot;
    write_out(b, task, out, st, &vals);
    Ok(Step::Next)
}
