//! The cooperative scheduler of one block.
//!
//! A *task* is a set of threads running the same code at the same place, with its own scalar
//! variables (registers of a GPU thread, uniform over the task). The block starts as one task;
//! a `ThreadGroup` statement that covers part of a task splits it: the threads inside run the
//! body as a new task, the others go on past the statement. Tasks run one at a time until they
//! block (`mbarrier.wait` on an incomplete phase, `sync`, or a warp-collective instruction that
//! needs threads which are elsewhere) and merge again when they meet at the same statement with
//! the same variables.
//!
//! The order is chosen to expose asynchronous bugs: a task that is only part of its group (a
//! fragment, e.g. the threads that skipped a `single_thread`) runs last, and TMA copies land
//! only when no task can make progress otherwise, oldest first. So a read that does not wait
//! for its copy sees the copy still in flight, and a wait that cannot complete is a deadlock
//! with nothing left to run.

use super::state::{body_key, eval, threads_text, Block, Fail, R};
use super::{control, Fault};
use crate::ir::{BarrierArrayId, Expr, Inst, Loc, Stmt, StmtKind, VarId};

/// What a frame of a task's stack runs.
#[derive(Clone, Copy)]
pub(crate) enum FrameKind<'p> {
    /// The kernel body.
    Root,
    /// A loop body; the variable steps by `step` until it reaches `end`.
    Loop {
        var: VarId,
        end: &'p Expr,
        step: &'p Expr,
        loc: Loc,
    },
    /// A thread group's body: threads `base .. base + count` of the block.
    Group { base: u32, count: u32 },
}

/// One level of a task's position.
#[derive(Clone, Copy)]
pub(crate) struct Frame<'p> {
    pub stmts: &'p [Stmt],
    pub pc: usize,
    pub kind: FrameKind<'p>,
}

impl Frame<'_> {
    fn same_place(&self, o: &Frame<'_>) -> bool {
        let kind = match (self.kind, o.kind) {
            (FrameKind::Root, FrameKind::Root) => true,
            (FrameKind::Loop { var: a, .. }, FrameKind::Loop { var: b, .. }) => a == b,
            (FrameKind::Group { base: a, count: c }, FrameKind::Group { base: b, count: d }) => {
                a == b && c == d
            }
            _ => false,
        };
        kind && self.pc == o.pc
            && std::ptr::eq(self.stmts.as_ptr(), o.stmts.as_ptr())
            && self.stmts.len() == o.stmts.len()
    }
}

/// Why a task is not running.
#[derive(Clone, Copy, Debug)]
pub(crate) enum State {
    /// Ready to run.
    Run,
    /// In `mbarrier.wait` for the phase with this parity to complete.
    Barrier {
        array: BarrierArrayId,
        index: usize,
        parity: u32,
        loc: Loc,
    },
    /// In `sync` (or the block barrier after `mbarrier.alloc`).
    Sync { loc: Loc },
    /// Waiting to meet the rest of its group before the statement at `loc`; `collective`: the
    /// statement needs whole warps and cannot run before they meet.
    Converge { collective: bool, loc: Loc },
    /// Finished the kernel.
    Done,
}

/// A set of threads running the same code.
pub(crate) struct Task<'p> {
    /// Block thread indices, sorted.
    pub threads: Vec<u32>,
    pub frames: Vec<Frame<'p>>,
    /// Scalar variables by [`VarId`].
    pub env: Vec<Option<i64>>,
    pub state: State,
    /// Run the next statement even if the task is only part of its group (it already waited
    /// for the rest there).
    pub skip_converge: bool,
}

impl<'p> Task<'p> {
    /// The first block thread of the innermost group.
    pub fn base(&self) -> u32 {
        self.group().0
    }

    /// The innermost group: first block thread and number of threads.
    pub fn group(&self) -> (u32, u32) {
        self.frames
            .iter()
            .rev()
            .find_map(|f| match f.kind {
                FrameKind::Group { base, count } => Some((base, count)),
                _ => None,
            })
            .unwrap_or((0, u32::MAX))
    }

    fn is_fragment(&self, block_threads: u32) -> bool {
        let (_, count) = self.group();
        (self.threads.len() as u32) < count.min(block_threads)
    }

    fn same_place(&self, o: &Task<'_>) -> bool {
        self.frames.len() == o.frames.len()
            && self
                .frames
                .iter()
                .zip(&o.frames)
                .all(|(a, b)| a.same_place(b))
            && self.env == o.env
    }

    /// The statement the task is at (for diagnostics).
    fn stmt(&self) -> Option<&'p Stmt> {
        self.frames.last().and_then(|f| f.stmts.get(f.pc))
    }
}

/// What an instruction did.
pub(crate) enum Step {
    /// Go on with the next statement.
    Next,
    /// Block (the statement is retried or completed by the scheduler).
    Wait(State),
}

/// Runs one block to completion.
pub(crate) fn run_block<'p>(b: &mut Block<'_, 'p>) -> R<()> {
    let p = b.program();
    let bt = b.prep.block_threads;
    let mut env = vec![None; p.vars.len()];
    for (v, arg) in control::param_values(b) {
        env[v.0 as usize] = Some(arg);
    }
    let mut tasks = vec![Task {
        threads: (0..bt).collect(),
        frames: vec![Frame {
            stmts: &p.body,
            pc: 0,
            kind: FrameKind::Root,
        }],
        env,
        state: State::Run,
        skip_converge: false,
    }];
    loop {
        wake(b, &mut tasks);
        merge(&mut tasks);
        b.stats.max_tasks = b.stats.max_tasks.max(tasks.len());
        if let Some(i) = tasks.iter().position(|t| matches!(t.state, State::Run)) {
            if let Some(child) = run_task(b, &mut tasks[i])? {
                // The group's threads run first: they usually issue the asynchronous work the
                // others will wait for.
                tasks.insert(i, child);
            }
            continue;
        }
        // Nobody can run: let fragments go on alone (they waited for the rest of their group
        // as long as anything else could move).
        let mut released = false;
        for t in tasks.iter_mut() {
            if let State::Converge {
                collective: false, ..
            } = t.state
            {
                t.state = State::Run;
                t.skip_converge = true;
                released = true;
            }
        }
        if released {
            continue;
        }
        // Then the copy engine: the oldest copy lands.
        if let Some(c) = b.pending.pop_front() {
            super::tma::land(b, c)?;
            continue;
        }
        if tasks.iter().all(|t| matches!(t.state, State::Done)) {
            return Ok(());
        }
        return Err(stuck(b, &tasks));
    }
}

/// Wakes waiters whose barrier phase completed and releases a block barrier that every thread
/// reached.
fn wake(b: &Block<'_, '_>, tasks: &mut [Task<'_>]) {
    for t in tasks.iter_mut() {
        if let State::Barrier {
            array,
            index,
            parity,
            ..
        } = t.state
        {
            if super::mbarrier::phase_completed(b, array, index, parity) {
                t.state = State::Run;
                advance(t);
            }
        }
    }
    let at_sync: usize = tasks
        .iter()
        .filter(|t| matches!(t.state, State::Sync { .. }))
        .map(|t| t.threads.len())
        .sum();
    if at_sync > 0 && at_sync == b.prep.block_threads as usize {
        for t in tasks.iter_mut() {
            if let State::Sync { .. } = t.state {
                t.state = State::Run;
                advance(t);
            }
        }
    }
}

fn advance(t: &mut Task<'_>) {
    if let Some(f) = t.frames.last_mut() {
        f.pc += 1;
    }
}

/// Merges tasks at the same statement with the same variables (running or waiting to converge).
fn merge(tasks: &mut Vec<Task<'_>>) {
    let mergeable = |t: &Task<'_>| matches!(t.state, State::Run | State::Converge { .. });
    let mut i = 0;
    while i < tasks.len() {
        if mergeable(&tasks[i]) {
            let mut j = i + 1;
            while j < tasks.len() {
                if mergeable(&tasks[j]) && tasks[i].same_place(&tasks[j]) {
                    let other = tasks.remove(j);
                    let t = &mut tasks[i];
                    t.threads.extend(other.threads);
                    t.threads.sort_unstable();
                    // They met: the statement runs without waiting again.
                    t.state = State::Run;
                    t.skip_converge = true;
                } else {
                    j += 1;
                }
            }
        }
        i += 1;
    }
    tasks.retain(|t| !(matches!(t.state, State::Done) && t.threads.is_empty()));
}

/// Runs a task until it blocks, finishes or splits; a split returns the new task.
fn run_task<'p>(b: &mut Block<'_, 'p>, task: &mut Task<'p>) -> R<Option<Task<'p>>> {
    let bt = b.prep.block_threads;
    loop {
        let Some(frame) = task.frames.last_mut() else {
            task.state = State::Done;
            return Ok(None);
        };
        if frame.pc >= frame.stmts.len() {
            end_of_frame(b, task)?;
            continue;
        }
        let s: &'p Stmt = &frame.stmts[frame.pc];
        if !task.skip_converge && task.is_fragment(bt) {
            task.state = State::Converge {
                collective: false,
                loc: s.loc,
            };
            return Ok(None);
        }
        task.skip_converge = false;
        b.stats.statements += 1;
        let step = match &s.kind {
            StmtKind::Inst(i) => exec_inst(b, task, i, s.loc)?,
            StmtKind::ThreadGroup {
                begin, count, body, ..
            } => {
                if let Some(child) = control::thread_group(task, *begin, *count, body) {
                    return Ok(Some(child));
                }
                continue;
            }
            StmtKind::For { .. } => {
                control::for_loop(b, task, s)?;
                continue;
            }
            _ => control::exec(b, task, s)?,
        };
        match step {
            Step::Next => advance(task),
            Step::Wait(state) => {
                task.state = state;
                return Ok(None);
            }
        }
    }
}

/// The end of a frame: the next loop iteration, or back to the enclosing statement list.
fn end_of_frame(b: &Block<'_, '_>, task: &mut Task<'_>) -> R<()> {
    let Some(frame) = task.frames.last_mut() else {
        return Ok(());
    };
    if let FrameKind::Loop {
        var,
        end,
        step,
        loc,
    } = frame.kind
    {
        let cur = task.env[var.0 as usize];
        let next = cur.and_then(|c| {
            let st = eval(step, &task.env, b.bidx)?;
            crate::ir::BinOp::Add.apply(c, st, crate::ir::DType::I32)
        });
        let (Some(next), Some(end)) = (next, eval(end, &task.env, b.bidx)) else {
            return Err(Fail::new(
                Fault::Invalid,
                loc,
                "for_range: the bound or the step cannot be evaluated (division by zero or a \
                 variable without a value)",
            ));
        };
        if next < end {
            task.env[var.0 as usize] = Some(next);
            frame.pc = 0;
            return Ok(());
        }
    }
    let done = task.frames.pop();
    if let Some(f) = done {
        // Variables declared in the body go out of scope, so tasks that ran it can merge with
        // tasks that did not.
        if let Some(vars) = b.prep.declared.get(&body_key(f.stmts)) {
            for v in vars {
                task.env[v.0 as usize] = None;
            }
        }
    }
    if task.frames.is_empty() {
        task.state = State::Done;
    }
    Ok(())
}

/// Runs one instruction for every thread of the task.
fn exec_inst<'p>(b: &mut Block<'_, 'p>, task: &mut Task<'p>, i: &'p Inst, loc: Loc) -> R<Step> {
    if !b.wgmma.is_empty() && !matches!(i, Inst::Wgmma(_)) {
        let regs = crate::passes::infer_layout::registers_of(i);
        super::wgmma::check_accumulators(b, task, &regs, i.name(), loc)?;
    }
    #[allow(unreachable_patterns)]
    match i {
        Inst::Wgmma(w) => super::wgmma::exec(b, task, w, loc),
        Inst::Memory(m) => super::memory::exec(b, task, m, loc),
        Inst::Mbarrier(m) => super::mbarrier::exec(b, task, m, loc),
        Inst::Tma(t) => super::tma::exec(b, task, t, loc),
        Inst::Mma(m) => super::mma::exec(b, task, m, loc),
        Inst::Arith(a) => super::arithmetic::exec(b, task, a, loc),
        other => Err(Fail::new(
            Fault::Unsupported,
            loc,
            format!("`{}` is not supported by the interpreter yet", other.name()),
        )),
    }
}

/// Every task is blocked and no copy is in flight: explain who waits for what. The first
/// diagnostic is the most telling: a transaction count that can never be met, else a barrier
/// wait, else a `sync`, else a warp that can never reassemble.
fn stuck(b: &Block<'_, '_>, tasks: &[Task<'_>]) -> Fail {
    let p = b.program();
    // (rank, where, what): lower ranks explain more
    let mut lines: Vec<(u8, Loc, String)> = vec![];
    let s_ = |t: &Task<'_>| if t.threads.len() == 1 { "s" } else { "" };
    let finished: Vec<u32> = {
        let mut v: Vec<u32> = tasks
            .iter()
            .filter(|t| matches!(t.state, State::Done))
            .flat_map(|t| t.threads.iter().copied())
            .collect();
        v.sort_unstable();
        v
    };
    for t in tasks {
        let who = threads_text(&t.threads);
        match t.state {
            State::Barrier {
                array,
                index,
                parity,
                loc,
            } => {
                let name = b.bar_name(array, index);
                let st = super::mbarrier::state(b, array, index);
                let meta = b.bars[array.0 as usize]
                    .as_ref()
                    .and_then(|m| m.get(index))
                    .cloned()
                    .unwrap_or_default();
                if st.pending == 0 && st.tx > 0 {
                    let declared: i64 = meta.expects.iter().map(|(_, n)| n).sum();
                    let at: Vec<String> = meta.expects.iter().map(|(l, _)| l.to_string()).collect();
                    lines.push((
                        0,
                        loc,
                        format!(
                            "transaction count never met: {who} wait{} here for the phase with \
                             parity {parity} of barrier `{name}`, whose arrivals are all in, but \
                             arrive_and_expect_tx declared {declared} byte(s) ({}) and the TMA \
                             copies on it delivered {}; the remaining {} byte(s) will never arrive",
                            s_(t),
                            if at.is_empty() {
                                "in an earlier phase".to_string()
                            } else {
                                format!("at {}", at.join(", "))
                            },
                            meta.delivered,
                            st.tx
                        ),
                    ));
                } else {
                    lines.push((
                        1,
                        loc,
                        format!(
                            "deadlock: {who} wait{} here for the phase with parity {parity} of \
                             barrier `{name}` (allocated at {}), which can never complete: {} \
                             phase(s) completed so far, the current one (parity {}) still expects \
                             {} arrival(s) and {} transaction byte(s), and no thread or copy is \
                             left to deliver them",
                            s_(t),
                            p.barrier(array).loc,
                            meta.phases,
                            st.phase,
                            st.pending,
                            st.tx,
                        ),
                    ));
                }
            }
            State::Sync { loc } => {
                let mut missing: Vec<u32> = tasks
                    .iter()
                    .filter(|o| !matches!(o.state, State::Sync { .. }))
                    .flat_map(|o| o.threads.iter().copied())
                    .collect();
                missing.sort_unstable();
                let why = if !finished.is_empty() && missing == finished {
                    " (they finished the kernel)"
                } else {
                    ""
                };
                lines.push((
                    2,
                    loc,
                    format!(
                        "deadlock: {who} wait{} here in sync() for {}{why}",
                        s_(t),
                        threads_text(&missing)
                    ),
                ));
            }
            State::Converge {
                collective: true,
                loc,
            } => {
                let what = t.stmt().map_or("this instruction".to_string(), |s| {
                    format!("`{}`", crate::ir::describe_stmt(p, s))
                });
                // tasks at the same statement that could not merge: their variables differ
                let mut differ: Vec<String> = vec![];
                for o in tasks {
                    let same_frames = o.frames.len() == t.frames.len()
                        && o.frames.iter().zip(&t.frames).all(|(a, b)| a.same_place(b));
                    if std::ptr::eq(o, t) || !same_frames {
                        continue;
                    }
                    for (v, (x, y)) in o.env.iter().zip(&t.env).enumerate() {
                        let name = &p.vars[v].name;
                        if x != y && !differ.contains(name) {
                            differ.push(name.clone());
                        }
                    }
                }
                let why = if differ.is_empty() {
                    "the rest of their warps are blocked elsewhere or finished".to_string()
                } else {
                    format!(
                        "other threads of their warps reached it with different values of `{}` \
                         (assigned by only some of the threads, e.g. inside a thread group)",
                        differ.join("`, `")
                    )
                };
                lines.push((
                    3,
                    loc,
                    format!("diverged: {what} needs whole warps, but only {who} reached it together; {why}"),
                ));
            }
            State::Converge { loc, .. } => {
                lines.push((4, loc, format!("{who} cannot proceed here")))
            }
            State::Run => {
                if let Some(loc) = loc_of(t) {
                    lines.push((4, loc, format!("{who} cannot proceed here")))
                }
            }
            State::Done => {}
        }
    }
    // the most telling first, otherwise in task order
    lines.sort_by_key(|(rank, _, _)| *rank);
    let fault = match lines.first().map(|l| l.0) {
        Some(0) => Fault::TxNeverMet,
        Some(3) => Fault::Diverged,
        _ => Fault::Deadlock,
    };
    let mut lines = lines.into_iter().map(|(_, l, m)| (l, m));
    let (loc, msg) = lines.next().unwrap_or((
        p.body.first().map_or(
            Loc {
                file: "<script>",
                line: 0,
                col: 0,
            },
            |s| s.loc,
        ),
        "deadlock: no thread can proceed".to_string(),
    ));
    let mut f = Fail::new(fault, loc, msg);
    for (l, m) in lines {
        f = f.note(l, m);
    }
    f
}

fn loc_of(t: &Task<'_>) -> Option<Loc> {
    t.stmt().map(|s| s.loc)
}
