//! The interpreter's state: tables computed once per program (layouts as offsets, mma fragment
//! tables, every instruction's facts), and the state of one block (shared-memory bytes,
//! register files, barriers' side information, asynchronous operations in flight, the log of
//! global writes). Data only: the families' files give it behaviour.

use crate::error::Fault;
use crate::ir::facts::{Access, AsyncGroup, Memory, Proxy};
use crate::ir::{
    BarrierArrayId, DType, Expr, Facts, GlobalId, Loc, Program, RegId, SharedId, Stmt, StmtId,
    StmtKind, VarId,
};
use crate::layout::mma::{mma_a_fragment, mma_b_fragment, mma_c_fragment};
use crate::Diagnostic;
use std::collections::{BTreeSet, HashMap};

/// A fault found while running a block: its kind and the diagnostics (the faulting
/// instruction first).
#[derive(Debug)]
pub(crate) struct Fail {
    pub fault: Fault,
    pub diags: Vec<Diagnostic>,
}

impl Fail {
    pub fn new(fault: Fault, loc: Loc, message: impl Into<String>) -> Fail {
        Fail {
            fault,
            diags: vec![Diagnostic {
                loc,
                message: message.into(),
            }],
        }
    }

    /// Adds a diagnostic about another instruction involved.
    pub fn note(mut self, loc: Loc, message: impl Into<String>) -> Fail {
        self.diags.push(Diagnostic {
            loc,
            message: message.into(),
        });
        self
    }
}

/// Result of interpreting one piece of a block.
pub(crate) type R<T> = std::result::Result<T, Fail>;

/// A register layout as offsets: coordinates per thread and per local index (the layout's
/// thread and local terms evaluated once), in the tensor's own dimension order.
pub(crate) struct RegInfo {
    pub dtype: DType,
    pub rank: usize,
    /// Elements each thread keeps.
    pub ls: usize,
    /// Threads the layout spreads over (thread indices wrap modulo this, as the terms do).
    pub nthreads: usize,
    /// `nthreads x rank` coordinates contributed by the thread index.
    pub tc: Vec<i64>,
    /// `ls x rank` coordinates contributed by the local index.
    pub lc: Vec<i64>,
    /// Row-major element offset within the tile of each thread's part.
    pub flat_t: Vec<i64>,
    /// Row-major element offset within the tile of each local's part.
    pub flat_l: Vec<i64>,
}

/// Tables for a whole program, shared by every block.
pub(crate) struct Prepared<'p> {
    pub p: &'p Program,
    pub regs: Vec<Option<RegInfo>>,
    /// mma.sync m16n8k16 fragments: lane * 8 + e -> row * 16 + col of the 16x16 A tile.
    pub frag_a: Vec<usize>,
    /// lane * 4 + e -> k * 8 + n of the 16x8 B tile.
    pub frag_b: Vec<usize>,
    /// lane * 4 + e -> row * 8 + col of the 16x8 C/D tile.
    pub frag_c: Vec<usize>,
    /// Variables declared inside each loop, branch or group body (by the statement's id),
    /// which go out of scope when the frame ends.
    pub declared: Vec<Vec<VarId>>,
    /// Every instruction's facts (by the statement's id).
    pub facts: Vec<Option<Facts<'p>>>,
    /// The argument position of each global view's pointer.
    pub global_arg: Vec<Option<usize>>,
    /// Threads per block.
    pub block_threads: u32,
    /// Iterations a `while` loop may run before the interpreter stops it
    /// ([`crate::interp::Options::max_loop_iterations`]).
    pub max_loop_iterations: u64,
}

fn declared_in(stmts: &[Stmt], out: &mut Vec<VarId>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Let { var, .. } => out.push(*var),
            StmtKind::For { var, body, .. } => {
                out.push(*var);
                declared_in(body, out);
            }
            StmtKind::ThreadGroup { body, .. } | StmtKind::While { body, .. } => {
                declared_in(body, out)
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                declared_in(then_body, out);
                declared_in(else_body, out);
            }
            StmtKind::Assign { .. } | StmtKind::Sync | StmtKind::Inst(_) => {}
        }
    }
}

impl<'p> Prepared<'p> {
    /// Tables for a planned program; `Err` names the first thing left unplanned.
    pub fn new(p: &'p Program) -> Result<Prepared<'p>, (Loc, String)> {
        let mut regs = Vec::with_capacity(p.registers.len());
        for r in &p.registers {
            let Some(l) = &r.layout else {
                return Err((
                    r.loc,
                    format!(
                        "register tensor `{}` has no layout: the interpreter runs planned programs \
                         (the output of passes::compile_program)",
                        r.name
                    ),
                ));
            };
            let rank = l.rank();
            let ls = l.local_size().max(0) as usize;
            let nthreads = l.num_threads().max(1) as usize;
            let shape = l.shape().to_vec();
            let flat = |c: &[i64]| c.iter().zip(&shape).fold(0i64, |a, (x, s)| a * s + x);
            let mut tc = Vec::with_capacity(nthreads * rank);
            let mut flat_t = Vec::with_capacity(nthreads);
            for t in 0..nthreads {
                let c = l.thread_coords(t as i64);
                flat_t.push(flat(&c));
                tc.extend(c);
            }
            let mut lc = Vec::with_capacity(ls * rank);
            let mut flat_l = Vec::with_capacity(ls);
            for i in 0..ls {
                let c = l.local_coords(i as i64);
                flat_l.push(flat(&c));
                lc.extend(c);
            }
            regs.push(Some(RegInfo {
                dtype: r.dtype,
                rank,
                ls,
                nthreads,
                tc,
                lc,
                flat_t,
                flat_l,
            }));
        }
        for s in &p.shareds {
            if s.layout.is_none() || s.offset.is_none() {
                return Err((
                    s.loc,
                    format!(
                        "shared tensor `{}` is not planned (no layout or offset): the interpreter \
                         runs planned programs (the output of passes::compile_program)",
                        s.name
                    ),
                ));
            }
        }
        for b in &p.barriers {
            if b.offset.is_none() {
                return Err((
                    b.loc,
                    format!(
                        "mbarrier array `{}` is not planned (no offset): the interpreter runs \
                         planned programs (the output of passes::compile_program)",
                        b.name
                    ),
                ));
            }
        }
        let (fa, fb, fc) = (mma_a_fragment(), mma_b_fragment(), mma_c_fragment());
        let mut frag_a = vec![0; 256];
        let mut frag_b = vec![0; 128];
        let mut frag_c = vec![0; 128];
        for lane in 0..32i64 {
            for e in 0..8i64 {
                let c = fa.coords(lane, e);
                frag_a[(lane * 8 + e) as usize] = (c[0] * 16 + c[1]) as usize;
            }
            for e in 0..4i64 {
                let c = fb.coords(lane, e);
                frag_b[(lane * 4 + e) as usize] = (c[0] * 8 + c[1]) as usize;
                let c = fc.coords(lane, e);
                frag_c[(lane * 4 + e) as usize] = (c[0] * 8 + c[1]) as usize;
            }
        }
        let n = p.stmt_count as usize;
        let mut declared = vec![vec![]; n];
        let mut facts: Vec<Option<Facts<'p>>> = (0..n).map(|_| None).collect();
        let mut bad_id = None;
        p.walk(&mut |s: &'p Stmt| {
            let Some(slot) = (s.id.0 as usize).lt(&n).then_some(s.id.0 as usize) else {
                bad_id = Some(s.loc);
                return;
            };
            match &s.kind {
                StmtKind::For { body, .. }
                | StmtKind::While { body, .. }
                | StmtKind::ThreadGroup { body, .. } => {
                    declared_in(body, &mut declared[slot]);
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    declared_in(then_body, &mut declared[slot]);
                    declared_in(else_body, &mut declared[slot]);
                }
                StmtKind::Inst(i) => facts[slot] = Some(i.facts(p)),
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync => {}
            }
        });
        if let Some(loc) = bad_id {
            return Err((
                loc,
                "a statement's id is outside the program's statement count: build programs \
                 with the script builder"
                    .into(),
            ));
        }
        let global_arg = p
            .globals
            .iter()
            .map(|g| p.param_of(g.ptr).map(|(i, _)| i))
            .collect();
        Ok(Prepared {
            p,
            regs,
            frag_a,
            frag_b,
            frag_c,
            declared,
            facts,
            global_arg,
            block_threads: p.threads(),
            max_loop_iterations: crate::interp::Options::default().max_loop_iterations,
        })
    }

    /// The facts of an instruction statement.
    pub fn facts(&self, id: StmtId) -> Option<&Facts<'p>> {
        self.facts.get(id.0 as usize).and_then(|f| f.as_ref())
    }

    /// The tables of a register tensor (always present once `new` succeeded).
    pub fn reg(&self, r: RegId) -> &RegInfo {
        self.regs[r.0 as usize]
            .as_ref()
            .expect("every register has tables once Prepared::new succeeded")
    }
}

/// A global buffer as a block sees it: read-only bytes (writes go to the block's log).
#[derive(Clone, Copy)]
pub(crate) struct GlobalBuf<'a> {
    pub bytes: &'a [u8],
}

/// One element written to global memory, applied after the block (in block order).
pub(crate) struct GlobalWrite {
    pub arg: u32,
    pub byte: usize,
    pub bits: u64,
    pub nbytes: u8,
}

/// Values of one register tile for every thread of the block (`thread * ls + local`).
pub(crate) enum RegData {
    /// Floating-point tiles; 16-bit values are kept exactly as f32.
    Float(Vec<f32>),
    /// Integer tiles.
    Int(Vec<i64>),
}

/// What the interpreter knows about one mbarrier beside its 8 bytes of state in shared memory:
/// for diagnostics only.
#[derive(Clone, Debug, Default)]
pub(crate) struct BarMeta {
    /// Phases completed so far.
    pub phases: u64,
    /// `arrive_and_expect_tx` calls of the current phase (where, bytes).
    pub expects: Vec<(Loc, i64)>,
    /// Transaction bytes delivered in the current phase.
    pub delivered: i64,
    /// Where arrivals of the current phase came from.
    pub arrivals: Vec<Loc>,
    /// `expects` of the phase that completed last.
    pub prev_expects: Vec<(Loc, i64)>,
}

/// What an asynchronous operation touches, resolved when it was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Touch {
    /// The memory (shared tiles and registers; global memory is not tracked).
    pub memory: Memory,
    /// For a shared tile: the bytes touched in the region (the tile's, or one stage's) and
    /// the stage, for messages.
    pub bytes: Option<super::views::Span>,
    /// How.
    pub access: Access,
    /// Through which proxy.
    pub proxy: Proxy,
    /// The operand's role, for messages.
    pub role: &'static str,
}

/// How an asynchronous operation completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retire {
    /// The copy engine lands it when nothing else can run; a wait on the barrier's phase
    /// observes it.
    Barrier {
        /// The barrier (array and index).
        bar: (BarrierArrayId, usize),
        /// The barrier's completed phases when the operation was issued.
        issue_phase: u64,
    },
    /// A `wait_group` of its kind by its owner completes it.
    Group {
        /// Which kind of group.
        kind: AsyncGroup,
        /// Whose groups: the warp group (block thread / 128) for wgmma, the thread for bulk
        /// copies.
        owner: u32,
        /// The committed group it belongs to (`None`: not committed yet).
        group: Option<u64>,
    },
}

/// Where an operation in flight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Issued, not complete.
    Issued,
    /// Landed in a barrier phase that had not completed yet: its bytes are there, but no wait
    /// has observed them until more than `phase` phases have completed.
    Landed {
        /// The barrier's completed phases when it landed.
        phase: u64,
    },
}

/// What completing an operation does (the family's semantics): land a copy, run a product,
/// write a store.
pub(crate) trait Work {
    /// Completes the operation on the block.
    fn complete(self: Box<Self>, b: &mut Block<'_, '_>) -> R<()>;
}

/// An asynchronous operation in flight.
pub(crate) struct InFlight {
    /// The instruction's name.
    pub inst: &'static str,
    /// How messages call it (`a TMA copy`, `a wgmma`).
    pub label: &'static str,
    /// Where it was issued.
    pub loc: Loc,
    /// What it touches until it completes.
    pub touches: Vec<Touch>,
    /// The threads whose registers it touches.
    pub threads: Vec<u32>,
    /// How it completes.
    pub retire: Retire,
    /// Whether it has landed.
    pub status: Status,
    /// What completing it does (taken when it completes).
    pub work: Option<Box<dyn Work>>,
}

/// Bytes of a shared tile (the tile's, or one stage's) written by ordinary stores that the
/// async proxy must not read yet: where, by which instruction, and which threads have not
/// fenced since.
#[derive(Clone, Debug)]
pub(crate) struct Dirty {
    /// The bytes written, in the region.
    pub bytes: (u64, u64),
    pub loc: Loc,
    pub writer: &'static str,
    pub threads: BTreeSet<u32>,
}

/// Counters for the run's report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    pub statements: u64,
    pub tma_copies: u64,
    pub mma: u64,
    pub max_tasks: usize,
}

/// The state of one block.
pub(crate) struct Block<'a, 'p> {
    pub prep: &'a Prepared<'p>,
    /// Buffers by argument position.
    pub bufs: &'a [Option<GlobalBuf<'a>>],
    /// Integer values by argument position (0 for buffers).
    pub args: &'a [i64],
    pub bidx: [i64; 3],
    /// The planned shared-memory region: one byte array, as on the chip.
    pub smem: Vec<u8>,
    pub regs: Vec<Option<RegData>>,
    pub writes: Vec<GlobalWrite>,
    /// Shared tiles allocated and not freed.
    pub live: Vec<bool>,
    /// Barrier arrays: `Some` once allocated.
    pub bars: Vec<Option<Vec<BarMeta>>>,
    /// Asynchronous operations in flight (TMA copies, wgmma products, bulk stores), in issue
    /// order.
    pub inflight: Vec<InFlight>,
    /// Groups committed so far, per (kind, owner).
    pub commits: HashMap<(AsyncGroup, u32), u64>,
    /// Per shared tile: the bytes written by ordinary stores whose threads have not run
    /// `fence_proxy_async` since; the async proxy must not read them yet.
    pub proxy_dirty: Vec<Vec<Dirty>>,
    pub stats: Stats,
}

/// Byte used for shared memory nobody wrote: all-ones is NaN in f16, bf16 and f32, so reading
/// it shows in the results.
pub(crate) const POISON: u8 = 0xFF;

impl<'a, 'p> Block<'a, 'p> {
    pub fn new(
        prep: &'a Prepared<'p>,
        bufs: &'a [Option<GlobalBuf<'a>>],
        args: &'a [i64],
        bidx: [i64; 3],
    ) -> Self {
        let p = prep.p;
        Block {
            prep,
            bufs,
            args,
            bidx,
            smem: vec![POISON; p.smem_bytes as usize],
            regs: (0..p.registers.len()).map(|_| None).collect(),
            writes: vec![],
            live: vec![false; p.shareds.len()],
            bars: vec![None; p.barriers.len()],
            inflight: vec![],
            commits: HashMap::new(),
            proxy_dirty: vec![vec![]; p.shareds.len()],
            stats: Stats::default(),
        }
    }

    pub fn program(&self) -> &'p Program {
        self.prep.p
    }

    /// The argument position and buffer of a global view's pointer.
    pub fn view_buffer(&self, view: GlobalId, loc: Loc) -> R<(usize, GlobalBuf<'a>)> {
        let name = &self.program().global(view).name;
        let Some(arg) = self.prep.global_arg[view.0 as usize] else {
            return Err(Fail::new(
                Fault::Invalid,
                loc,
                format!("view `{name}` is not over a pointer argument"),
            ));
        };
        let Some(buf) = self.bufs.get(arg).copied().flatten() else {
            return Err(Fail::new(
                Fault::Invalid,
                loc,
                format!("no buffer was passed for the pointer of view `{name}`"),
            ));
        };
        Ok((arg, buf))
    }

    /// Byte range of a shared tile in the region (padding between its stages included).
    pub fn tile_range(&self, s: SharedId) -> (u64, u64) {
        let d = self.program().shared(s);
        let off = d.offset.unwrap_or(0) as u64;
        (off, off.saturating_add(d.footprint()))
    }

    /// Byte offset of a barrier in the region.
    pub fn bar_offset(&self, a: BarrierArrayId, i: usize) -> usize {
        self.program().barrier(a).offset.unwrap_or(0) as usize + 8 * i
    }

    /// The register storage of a tile, created (with `fill`) on first use.
    pub fn reg_mut(&mut self, r: RegId) -> &mut RegData {
        let info = self.prep.reg(r);
        let n = info.ls * self.prep.block_threads as usize;
        let float = info.dtype.is_float();
        self.regs[r.0 as usize].get_or_insert_with(|| {
            if float {
                RegData::Float(vec![f32::NAN; n])
            } else {
                RegData::Int(vec![0; n])
            }
        })
    }

    /// The name of barrier `i` of an array, as diagnostics print it.
    pub fn bar_name(&self, a: BarrierArrayId, i: usize) -> String {
        format!("{}[{i}]", self.program().barrier(a).name)
    }

    /// The completed phases of a barrier.
    pub fn bar_phases(&self, a: BarrierArrayId, i: usize) -> u64 {
        self.bars[a.0 as usize]
            .as_ref()
            .and_then(|m| m.get(i))
            .map_or(0, |m| m.phases)
    }

    pub fn bar_meta(&mut self, a: BarrierArrayId, i: usize) -> Option<&mut BarMeta> {
        self.bars[a.0 as usize].as_mut().and_then(|m| m.get_mut(i))
    }
}

/// Bits of an element stored in `bytes` at `off` (native byte order).
pub(crate) fn read_bits(bytes: &[u8], off: usize, dtype: DType) -> u64 {
    let n = dtype.nbytes() as usize;
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&bytes[off..off + n]);
    if cfg!(target_endian = "big") {
        // keep the value in the low bits
        u64::from_be_bytes(b) >> (64 - 8 * n)
    } else {
        u64::from_le_bytes(b)
    }
}

/// Stores the low `nbytes` bits of `bits` into `bytes` at `off` (native byte order).
pub(crate) fn write_bits(bytes: &mut [u8], off: usize, bits: u64, n: usize) {
    if cfg!(target_endian = "big") {
        let b = (bits << (64 - 8 * n)).to_be_bytes();
        bytes[off..off + n].copy_from_slice(&b[..n]);
    } else {
        bytes[off..off + n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }
}

/// The value of a floating-point element from its bits.
pub(crate) fn bits_to_f32(bits: u64, dtype: DType) -> f32 {
    match dtype {
        DType::F16 => half::f16::from_bits(bits as u16).to_f32(),
        DType::BF16 => half::bf16::from_bits(bits as u16).to_f32(),
        _ => f32::from_bits(bits as u32),
    }
}

/// The bits of a floating-point value in `dtype` (round to nearest even for 16-bit types).
pub(crate) fn f32_to_bits(v: f32, dtype: DType) -> u64 {
    match dtype {
        DType::F16 => half::f16::from_f32(v).to_bits() as u64,
        DType::BF16 => half::bf16::from_f32(v).to_bits() as u64,
        _ => v.to_bits() as u64,
    }
}

/// The value of an integer element from its bits (sign-extended for signed types).
pub(crate) fn bits_to_int(bits: u64, dtype: DType) -> i64 {
    match dtype {
        DType::I32 => bits as u32 as i32 as i64,
        DType::U32 => bits as u32 as i64,
        DType::Bool => (bits & 0xFF != 0) as i64,
        _ => bits as i64,
    }
}

/// Evaluates a scalar expression as the generated code would, with the block index known.
/// `None`: division by zero, a shift out of range, a float, or a variable without a value.
pub(crate) fn eval(e: &Expr, env: &[Option<i64>], bidx: [i64; 3]) -> Option<i64> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Float(..) => None,
        Expr::Var(id, t) => env
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|v| crate::ir::wrap_to(v, *t)),
        Expr::BlockIdx(a) => bidx.get(*a as usize).copied(),
        Expr::Binary(op, a, b) => op.apply(eval(a, env, bidx)?, eval(b, env, bidx)?, a.dtype()),
        Expr::Cast(t, x) => eval(x, env, bidx).map(|v| crate::ir::wrap_to(v, *t)),
    }
}

/// Row-major strides (elements) of a view's extents.
pub(crate) fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1].saturating_mul(shape[d + 1]);
    }
    s
}

/// Formats a sorted list of thread indices compactly: `thread 0`, `threads 1-127`, or a list
/// of ranges.
pub(crate) fn threads_text(threads: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = vec![];
    for &t in threads {
        match ranges.last_mut() {
            Some((_, e)) if *e + 1 == t => *e = t,
            _ => ranges.push((t, t)),
        }
    }
    let parts: Vec<String> = ranges
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if threads.len() == 1 {
        format!("thread {}", parts.join(", "))
    } else {
        format!("threads {}", parts.join(", "))
    }
}
