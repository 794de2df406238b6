//! The interpreter's state: tables computed once per program (layouts as offsets, mma fragment
//! tables, every instruction's facts), and the state of one block (shared-memory bytes,
//! register files, barriers' side information, asynchronous operations in flight, the log of
//! global writes). Data only: the families' files give it behaviour.

use super::publication::{EventId, Ledger, Publication};
use super::races::Races;
use super::region::{Placed, Span};
use crate::error::Fault;
use crate::ir::facts::{Access, AsyncGroup, Memory, Proxy};
use crate::ir::{
    AtomicOp, BarrierArrayId, DType, Expr, Facts, GlobalId, Loc, Program, RegId, SharedId, Stmt,
    StmtId, StmtKind, VarId,
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
    /// The tile's extents where its layout is masked (registers beyond them hold no element);
    /// `None` otherwise.
    pub masked: Option<Vec<i64>>,
}

impl RegInfo {
    /// Whether local `l` of layout thread `ti` holds an element of the tile (always, unless
    /// the layout is masked).
    pub fn holds(&self, ti: usize, l: usize) -> bool {
        let Some(shape) = &self.masked else {
            return true;
        };
        let (t, c) = (
            &self.tc[ti * self.rank..(ti + 1) * self.rank],
            &self.lc[l * self.rank..(l + 1) * self.rank],
        );
        t.iter().zip(c).zip(shape).all(|((a, b), n)| a + b < *n)
    }
}

/// Iterations one `while` loop may run by default before the interpreter stops it: the
/// default of `Options::max_loop_iterations`, kept here so that the tables can start with it
/// without this file reaching up to the options.
pub(crate) const MAX_LOOP_ITERATIONS: u64 = 1 << 31;

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
    /// Iterations a `while` loop may run before the interpreter stops it (the run's
    /// `Options::max_loop_iterations`; [`MAX_LOOP_ITERATIONS`] until the run sets it).
    pub max_loop_iterations: u64,
    /// Per argument: whether the program reads the buffer through ordinary loads or atomics,
    /// so that a block's own writes to it must be visible to its later reads.
    pub reads_own_writes: Vec<bool>,
    /// Whether instructions return old values of atomics (which then depend on the order of
    /// blocks): blocks run one after another.
    pub sequential: bool,
    /// A `fence_gpu` statement to run as if it were not there
    /// (`Options::without_fence`).
    pub without_fence: Option<StmtId>,
}

fn declared_in(p: &Program, stmts: &[Stmt], out: &mut Vec<VarId>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Let { var, .. } => out.push(*var),
            StmtKind::For { var, body, .. } => {
                out.push(*var);
                declared_in(p, body, out);
            }
            StmtKind::ThreadGroup { body, .. } | StmtKind::While { body, .. } => {
                declared_in(p, body, out)
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                declared_in(p, then_body, out);
                declared_in(p, else_body, out);
            }
            StmtKind::Inst(i) => out.extend(i.facts(p).defines),
            StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
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
                masked: l.is_masked().then(|| l.shape().to_vec()),
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
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    declared_in(p, body, &mut declared[slot]);
                }
                StmtKind::ThreadGroup { body, copies, .. } => {
                    declared_in(p, body, &mut declared[slot]);
                    declared[slot].extend(copies.map(|c| c.index));
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    declared_in(p, then_body, &mut declared[slot]);
                    declared_in(p, else_body, &mut declared[slot]);
                }
                StmtKind::Inst(i) => facts[slot] = Some(i.facts(p)),
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
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
        // workspaces are buffers after the arguments, in the order of their variables
        let workspaces: Vec<crate::ir::VarId> = (0..p.vars.len() as u32)
            .map(crate::ir::VarId)
            .filter(|&v| matches!(p.var(v).kind, crate::ir::VarKind::Workspace(_)))
            .collect();
        let global_arg: Vec<Option<usize>> = p
            .globals
            .iter()
            .map(|g| {
                p.param_of(g.ptr).map(|(i, _)| i).or_else(|| {
                    let w = workspaces.iter().position(|&v| v == g.ptr)?;
                    Some(p.params.len() + w)
                })
            })
            .collect();
        let mut reads_own_writes = vec![false; p.params.len() + workspaces.len()];
        let mut sequential = false;
        for f in facts.iter().flatten() {
            for e in &f.effects {
                if let (Memory::Global(g), Proxy::Generic, true) =
                    (e.memory, e.proxy, e.access.reads())
                {
                    if let Some(a) = global_arg[g.0 as usize] {
                        reads_own_writes[a] = true;
                    }
                }
            }
            sequential |= !f.defines.is_empty();
        }
        p.walk(&mut |s| {
            if let StmtKind::Inst(crate::ir::Inst::Memory(crate::ir::MemoryInst::AtomicGlobal {
                out: Some(_),
                ..
            })) = &s.kind
            {
                sequential = true;
            }
        });
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
            max_loop_iterations: MAX_LOOP_ITERATIONS,
            reads_own_writes,
            sequential,
            without_fence: None,
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
    /// How the element is written: replaced, or combined with what the buffer holds when the
    /// write is applied (atomics).
    pub op: WriteOp,
    /// The block's event (instruction execution) that wrote it ([`Block::event`]).
    pub event: EventId,
}

/// How a [`GlobalWrite`] changes its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteOp {
    /// The element becomes `bits`.
    Store,
    /// The bits under `mask` become those of `bits`, the others stay (a byte holding
    /// packed elements of which this write stores some).
    Bits { mask: u64 },
    /// The element becomes `combine(op, dtype, element, bits, compare)`.
    Atomic {
        op: AtomicOp,
        dtype: DType,
        compare: u64,
    },
}

impl GlobalWrite {
    /// The element's new bits, given its current ones.
    pub fn apply(&self, current: u64) -> u64 {
        match self.op {
            WriteOp::Store => self.bits,
            WriteOp::Bits { mask } => (current & !mask) | (self.bits & mask),
            WriteOp::Atomic { op, dtype, compare } => {
                combine(op, dtype, current, self.bits, compare)
            }
        }
    }
}

/// The result of an atomic on an element holding `old` with operand `v` (and `compare`), as
/// bits of `dtype`: what `atom.global`/`red.global` compute (f32 min and max as the generated
/// code computes them, through integer atomics on the bits).
pub(crate) fn combine(op: AtomicOp, dtype: DType, old: u64, v: u64, compare: u64) -> u64 {
    let mask = if dtype.bits() >= 64 {
        u64::MAX
    } else {
        (1u64 << dtype.bits()) - 1
    };
    let (old, v, compare) = (old & mask, v & mask, compare & mask);
    let s32 = |x: u64| x as u32 as i32;
    match (op, dtype) {
        (AtomicOp::Exchange, _) => v,
        (AtomicOp::Cas, _) => {
            if old == compare {
                v
            } else {
                old
            }
        }
        (AtomicOp::Add, DType::F32 | DType::F16 | DType::BF16) => {
            let x = bits_to_f32(old, dtype) as f64 + bits_to_f32(v, dtype) as f64;
            match dtype {
                DType::F16 => half::f16::from_f64(x).to_bits() as u64,
                DType::BF16 => half::bf16::from_f64(x).to_bits() as u64,
                _ => (x as f32).to_bits() as u64,
            }
        }
        (AtomicOp::Add, _) => old.wrapping_add(v) & mask,
        (AtomicOp::Min | AtomicOp::Max, DType::F32) => {
            let max = op == AtomicOp::Max;
            if v & 0x8000_0000 == 0 {
                let (a, b) = (s32(old), s32(v));
                (if max { a.max(b) } else { a.min(b) }) as u32 as u64
            } else if max {
                old.min(v)
            } else {
                old.max(v)
            }
        }
        (AtomicOp::Min | AtomicOp::Max, DType::I32) => {
            let (a, b) = (s32(old), s32(v));
            (if op == AtomicOp::Max {
                a.max(b)
            } else {
                a.min(b)
            }) as u32 as u64
        }
        (AtomicOp::Min, _) => old.min(v),
        (AtomicOp::Max, _) => old.max(v),
    }
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
    /// Phases a wait has seen complete (the count of completed phases when a wait last
    /// returned).
    pub observed: u64,
    /// The last TMA copy whose bytes completed on the barrier: the phase (its index) they
    /// counted toward, and where the copy was issued.
    pub last_copy: Option<(u64, Loc)>,
}

/// What an asynchronous operation touches, resolved when it was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Touch {
    /// The memory (shared tiles and registers; global memory is not tracked).
    pub memory: Memory,
    /// For a shared tile: the bytes touched in the region (the tile's, or one stage's) and
    /// the stage, for messages.
    pub bytes: Option<Span>,
    /// How.
    pub access: Access,
    /// Through which proxy.
    pub proxy: Proxy,
    /// For a register tile: the columns touched (`None`: all).
    pub columns: Option<(i64, i64)>,
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
    /// Arrivals its threads made while it was unfinished (where, on which barrier): one of them
    /// may be what let other threads reuse its operands, so a hazard on them notes each.
    pub arrivals: Vec<(Loc, String)>,
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
    /// The grid: blocks along x, y, z.
    pub grid: [i64; 3],
    /// The planned shared-memory region: one byte array, as on the chip.
    pub smem: Vec<u8>,
    pub regs: Vec<Option<RegData>>,
    pub writes: Vec<GlobalWrite>,
    /// The current bits of the elements this block wrote, by (argument, byte), for buffers it
    /// also reads (`Prepared::reads_own_writes`).
    pub own: HashMap<(u32, usize), u64>,
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
    /// What `printf` and `print_tensor` printed, in order.
    pub printed: String,
    /// What this block did to other blocks of its cluster, for the cluster scheduler to
    /// deliver.
    pub outbox: Vec<Remote>,
    /// The run's record of global writes across blocks (runs whose blocks go one after
    /// another), for the fence rule of `publication.rs`.
    pub ledger: Option<&'a Ledger>,
    /// This block's side of that record.
    pub publication: Publication,
    /// The warps' clocks and the shadow of shared memory that find races between warps
    /// (`races.rs`).
    pub races: Races,
}

/// An operation on another block of the cluster.
pub(crate) enum Remote {
    /// One thread's arrival on the barrier at the same place in the block of rank `rank`.
    Arrival {
        rank: usize,
        bar: (crate::ir::BarrierArrayId, usize),
        loc: crate::ir::Loc,
    },
    /// A multicast TMA copy's share for the block of rank `rank`.
    Copy { rank: usize, copy: Box<RemoteCopy> },
}

/// A TMA load in flight: the box to copy and the barrier its bytes complete on. Here rather
/// than in `tma.rs`, which gives it its behaviour, because a block carries multicast shares of
/// it to other blocks ([`RemoteCopy`]).
#[derive(Clone)]
pub(crate) struct CopyIn {
    /// The global view copied from.
    pub src: GlobalId,
    /// The tile, or the stage of it the copy was issued for.
    pub dst: Placed,
    /// Coordinates of the box's first element in the view.
    pub coords: Vec<i64>,
    /// The view's extents when the copy was issued.
    pub shape: Vec<i64>,
    /// The view's strides when the copy was issued.
    pub strides: Vec<i64>,
    /// The barrier (array, index) the copy's bytes complete on.
    pub bar: (BarrierArrayId, usize),
    /// Where the copy was issued.
    pub loc: Loc,
    /// The barrier's completed phases when the copy was issued.
    pub issue_phase: u64,
}

/// A multicast copy's share for another block of the cluster: the same box into the same
/// place of its tile, its bytes on its barrier at the same place.
pub(crate) struct RemoteCopy {
    /// The copy, as the issuing block resolved it.
    pub copy: CopyIn,
    /// What the copy touches (the same bytes of the receiving block's region).
    pub touches: Vec<Touch>,
}

impl RemoteCopy {
    /// The barrier the share's bytes complete on, and where the copy was issued.
    pub(crate) fn bar_and_loc(&self) -> ((BarrierArrayId, usize), Loc) {
        (self.copy.bar, self.copy.loc)
    }
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
        grid: [i64; 3],
        ledger: Option<&'a Ledger>,
    ) -> Self {
        let p = prep.p;
        Block {
            prep,
            bufs,
            args,
            bidx,
            grid,
            smem: vec![POISON; p.smem_bytes as usize],
            regs: (0..p.registers.len()).map(|_| None).collect(),
            writes: vec![],
            own: HashMap::new(),
            live: vec![false; p.shareds.len()],
            bars: vec![None; p.barriers.len()],
            inflight: vec![],
            commits: HashMap::new(),
            proxy_dirty: vec![vec![]; p.shareds.len()],
            stats: Stats::default(),
            printed: String::new(),
            outbox: vec![],
            ledger,
            publication: Publication::default(),
            races: Races::new(prep.block_threads, p.smem_bytes as usize),
        }
    }

    /// The block's rank in its cluster (x fastest) and the cluster's number of blocks.
    pub fn cluster_rank(&self) -> (usize, usize) {
        let c = self.program().cluster.map(|d| d.max(1) as i64);
        let [x, y, z] = [0, 1, 2].map(|a| (self.bidx[a] % c[a]) as usize);
        let (cx, cy) = (c[0] as usize, c[1] as usize);
        (x + y * cx + z * cx * cy, (c[0] * c[1] * c[2]) as usize)
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

    /// Logs a write to global memory (applied after the block, in block order); a later read
    /// of the element by this block sees it.
    pub fn write_global(&mut self, w: GlobalWrite) {
        if self.prep.reads_own_writes.get(w.arg as usize) == Some(&true) {
            let cur = self.read_global(w.arg as usize, w.byte, w.nbytes as usize);
            self.own.insert((w.arg, w.byte), w.apply(cur));
        }
        self.writes.push(w);
    }

    /// The bits of the element at `byte` of buffer `arg` (`nbytes` wide) as this block sees
    /// it: its own latest write, else the buffer as it was when the block's batch started. The
    /// caller has checked that the element is inside the buffer.
    pub fn read_global(&self, arg: usize, byte: usize, nbytes: usize) -> u64 {
        if let Some(&bits) = self.own.get(&(arg as u32, byte)) {
            return bits;
        }
        match self.bufs.get(arg).copied().flatten() {
            Some(buf) if byte + nbytes <= buf.bytes.len() => read_n(buf.bytes, byte, nbytes),
            _ => 0,
        }
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

    /// A wait on barrier `i` of `a` returned: the phases completed so far are seen.
    pub fn observe(&mut self, a: BarrierArrayId, i: usize) {
        if let Some(m) = self.bar_meta(a, i) {
            m.observed = m.phases;
        }
    }
}

/// Bits of an element stored in `bytes` at `off` (native byte order).
pub(crate) fn read_bits(bytes: &[u8], off: usize, dtype: DType) -> u64 {
    read_n(bytes, off, dtype.nbytes() as usize)
}

/// The `n` bytes at `off` as bits (native byte order).
pub(crate) fn read_n(bytes: &[u8], off: usize, n: usize) -> u64 {
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
        t => match t.float_format() {
            // exact: every low-precision float is an f32
            Some(f) => f.decode(bits as u32) as f32,
            None => f32::from_bits(bits as u32),
        },
    }
}

/// The bits of a floating-point value in `dtype` (round to nearest even for 16-bit types).
pub(crate) fn f32_to_bits(v: f32, dtype: DType) -> u64 {
    match dtype {
        DType::F16 => half::f16::from_f32(v).to_bits() as u64,
        DType::BF16 => half::bf16::from_f32(v).to_bits() as u64,
        t => match t.float_format() {
            Some(f) => f.encode(v as f64) as u64,
            None => v.to_bits() as u64,
        },
    }
}

/// The value of an integer element from its bits (sign-extended for signed types).
pub(crate) fn bits_to_int(bits: u64, dtype: DType) -> i64 {
    match dtype {
        DType::I32 => bits as u32 as i32 as i64,
        DType::U32 => bits as u32 as i64,
        DType::Bool => (bits & 0xFF != 0) as i64,
        t @ (DType::Int(_) | DType::UInt(_)) => crate::ir::wrap_to(bits as i64, t),
        _ => bits as i64,
    }
}

/// Evaluates an integer (or boolean) scalar expression as the generated code would, with the
/// block index known. `None`: division by zero, a shift out of range, a float result, or a
/// variable without a value.
pub(crate) fn eval(e: &Expr, env: &[Option<i64>], bidx: [i64; 3]) -> Option<i64> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Float(..) => None,
        Expr::Var(_, t) if t.is_float() => None,
        Expr::Var(id, t) => env
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|v| crate::ir::wrap_to(v, *t)),
        Expr::BlockIdx(a) => bidx.get(*a as usize).copied(),
        // comparisons of floats
        Expr::Binary(op, a, b) if a.dtype().is_float() => {
            let (x, y) = (eval_float(a, env, bidx)?, eval_float(b, env, bidx)?);
            use crate::ir::BinOp as B;
            Some(match op {
                B::Lt => (x < y) as i64,
                B::Le => (x <= y) as i64,
                B::Eq => (x == y) as i64,
                B::Ne => (x != y) as i64,
                _ => return None,
            })
        }
        Expr::Binary(op, a, b) => op.apply(eval(a, env, bidx)?, eval(b, env, bidx)?, a.dtype()),
        // C truncates toward zero (Rust's `as` saturates where C leaves it undefined)
        Expr::Cast(t, x) if x.dtype().is_float() && !t.is_float() => {
            let v = eval_float(x, env, bidx)?;
            Some(if *t == DType::Bool {
                (v != 0.0) as i64
            } else {
                crate::ir::wrap_to(v as i64, *t)
            })
        }
        Expr::Cast(t, _) if t.is_float() => None,
        Expr::Cast(t, x) => eval(x, env, bidx).map(|v| crate::ir::wrap_to(v, *t)),
    }
}

/// `v` rounded to float type `t` (to nearest even), as an exact `f64`.
pub(crate) fn round_float(v: f64, t: DType) -> f64 {
    match t {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
        t => match t.float_format() {
            // from the f32 the generated code computes in
            Some(f) => f.decode(f.encode(v as f32 as f64)),
            None => v as f32 as f64,
        },
    }
}

/// Evaluates a float scalar expression as the generated code does: every float type computes
/// in f32 (constants are f32 literals, each operation rounds to f32), a conversion to a 16-bit
/// float rounds to it, integers convert to the nearest f32. Float variables hold the bits of
/// their `f64` value in the environment. `None` as for [`eval`].
pub(crate) fn eval_float(e: &Expr, env: &[Option<i64>], bidx: [i64; 3]) -> Option<f64> {
    let f32_ = |v: f64| v as f32 as f64;
    match e {
        Expr::Float(bits, _) => Some(f32_(f64::from_bits(*bits))),
        Expr::Var(id, t) if t.is_float() => env
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|v| f64::from_bits(v as u64)),
        Expr::Binary(op, a, b) if a.dtype().is_float() && !op.is_comparison() => {
            let (x, y) = (
                eval_float(a, env, bidx)? as f32,
                eval_float(b, env, bidx)? as f32,
            );
            use crate::ir::BinOp as B;
            Some(match op {
                B::Add => x + y,
                B::Sub => x - y,
                B::Mul => x * y,
                B::Div => x / y,
                _ => return None,
            } as f64)
        }
        Expr::Cast(t, x) if t.is_float() => {
            let v = if x.dtype().is_float() {
                eval_float(x, env, bidx)?
            } else if x.dtype() == DType::U64 {
                eval(x, env, bidx)? as u64 as f32 as f64
            } else {
                eval(x, env, bidx)? as f32 as f64
            };
            Some(match t {
                DType::F16 | DType::BF16 => round_float(v, *t),
                _ => f32_(v),
            })
        }
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 min and max through integer orders agree with the numbers' order (and put -0.0
    /// below +0.0).
    #[test]
    fn f32_min_and_max_order_the_numbers() {
        let xs = [
            -f32::INFINITY,
            -1e30,
            -2.5,
            -1.0,
            -0.0,
            0.0,
            1e-40,
            1.0,
            3.5,
            f32::INFINITY,
        ];
        let b = |x: f32| x.to_bits() as u64;
        for &x in &xs {
            for &y in &xs {
                let hi = f32::from_bits(combine(AtomicOp::Max, DType::F32, b(x), b(y), 0) as u32);
                let lo = f32::from_bits(combine(AtomicOp::Min, DType::F32, b(x), b(y), 0) as u32);
                let zero_order = |p: f32, q: f32| {
                    if p == 0.0 && q == 0.0 {
                        p.is_sign_negative()
                    } else {
                        p < q
                    }
                };
                let (want_hi, want_lo) = if zero_order(x, y) { (y, x) } else { (x, y) };
                assert_eq!(hi.to_bits(), want_hi.to_bits(), "max({x}, {y})");
                assert_eq!(lo.to_bits(), want_lo.to_bits(), "min({x}, {y})");
            }
        }
    }

    #[test]
    fn integer_atomics_wrap_and_compare_in_their_type() {
        let i = |x: i32| x as u32 as u64;
        assert_eq!(
            combine(AtomicOp::Add, DType::I32, i(i32::MAX), 1, 0),
            i(i32::MIN)
        );
        assert_eq!(combine(AtomicOp::Max, DType::I32, i(-5), i(3), 0), 3);
        assert_eq!(combine(AtomicOp::Max, DType::U32, i(-5), 3, 0), i(-5));
        assert_eq!(combine(AtomicOp::Cas, DType::U32, 7, 9, 7), 9);
        assert_eq!(combine(AtomicOp::Cas, DType::U32, 7, 9, 8), 7);
        assert_eq!(combine(AtomicOp::Exchange, DType::I32, 7, 9, 0), 9);
        let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
        assert_eq!(
            combine(AtomicOp::Add, DType::F16, h(1.5), h(2.25), 0),
            h(3.75)
        );
    }
}
