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
//! fragment, e.g. the threads that skipped a `single_thread`) runs last, TMA copies land only
//! when no task can make progress otherwise, oldest first, and a task whose arrival completes
//! a barrier phase that wakes other tasks lets them run before it goes on. So a read that does
//! not wait for its copy sees the copy still in flight, a wait that cannot complete is a
//! deadlock with nothing left to run, and threads that free a stage before their wgmma on it
//! completes (an arrival on the *empty* barrier before the `wait_group`) see the producer
//! refill it while the product is still in flight: whatever the consumers do next, the
//! producer's copy is issued before their `wait_group` runs.

use super::state::{eval, threads_text, Block, Fail, Remote, R};
use super::task::{Frame, FrameKind, State, Step, Task};
use super::{
    arithmetic, barrier, control, cp_async, debug, hazards, mbarrier, memory, mma, shape, tma,
    wgmma,
};
use crate::error::Fault;
use crate::ir::facts::ThreadScope;
use crate::ir::{Inst, Loc, Stmt, StmtKind, SyncScope};

/// Runs one block to completion.
pub(crate) fn run_block<'p>(b: &mut Block<'_, 'p>) -> R<()> {
    let mut tasks = first_tasks(b);
    loop {
        match advance(b, &mut tasks)? {
            Progress::Moved => {}
            Progress::Done => return hazards::unfinished(b),
            Progress::Stuck => return Err(stuck(b, &tasks)),
        }
    }
}

/// Runs the blocks of one cluster together: each takes a step in turn, and a cluster barrier
/// completes when every thread of every block waits at it. The error names the block (its
/// position in `blocks`) it happened in.
pub(crate) fn run_cluster<'p>(blocks: &mut [Block<'_, 'p>]) -> Result<(), (usize, Fail)> {
    let mut tasks: Vec<Vec<Task<'p>>> = blocks.iter().map(|b| first_tasks(b)).collect();
    let mut done = vec![false; blocks.len()];
    loop {
        let mut moved = false;
        for i in 0..blocks.len() {
            if done[i] {
                continue;
            }
            let step = advance(&mut blocks[i], &mut tasks[i]).map_err(|f| (i, f))?;
            moved |= deliver(blocks, i, &done).map_err(|f| (i, f))?;
            match step {
                Progress::Moved => moved = true,
                Progress::Done => {
                    hazards::unfinished(&mut blocks[i]).map_err(|f| (i, f))?;
                    done[i] = true;
                    moved = true;
                }
                Progress::Stuck => {}
            }
        }
        if done.iter().all(|&d| d) {
            return Ok(());
        }
        if moved || release_cluster_sync(blocks, &mut tasks) {
            continue;
        }
        let i = done.iter().position(|&d| !d).unwrap_or(0);
        return Err((i, stuck(&blocks[i], &tasks[i])));
    }
}

/// Delivers block `from`'s arrivals on other blocks' barriers; whether there were any. A
/// barrier the receiving block has not allocated yet is the sender's fault (the blocks must
/// meet at `cluster_sync()` between allocating barriers and arriving on each other's), and so
/// is one of a block that has finished (`finished[rank]`): its shared memory may belong to
/// another block by then.
fn deliver(blocks: &mut [Block<'_, '_>], from: usize, finished: &[bool]) -> R<bool> {
    let sent = std::mem::take(&mut blocks[from].outbox);
    let any = !sent.is_empty();
    for r in sent {
        match r {
            Remote::Arrival { rank, bar, loc } => {
                let what = "mbarrier.arrive_remote";
                still_running(finished, rank, what, loc)?;
                let to = &mut blocks[rank];
                allocated_there(to, bar.0, rank, what, loc)?;
                super::barrier::arrive(to, bar.0, bar.1, 0, loc)?;
            }
            Remote::Copy { rank, copy } => {
                let what = "tma.global_to_shared_multicast";
                let (bar, loc) = copy.bar_and_loc();
                still_running(finished, rank, what, loc)?;
                let to = &mut blocks[rank];
                allocated_there(to, bar.0, rank, what, loc)?;
                super::tma::receive(to, *copy);
            }
        }
    }
    Ok(any)
}

/// Whether the block of rank `rank`, which an operation from another block reaches, has not
/// finished yet.
fn still_running(finished: &[bool], rank: usize, what: &str, loc: Loc) -> R<()> {
    if !finished[rank] {
        return Ok(());
    }
    Err(Fail::new(
        Fault::NotWaited,
        loc,
        format!(
            "{what} reaches the block of rank {rank} after that block finished: on the GPU its \
             shared memory may belong to another block by then; the block must wait for what \
             the others still send it (their releases of its stages, their copies into it) or \
             meet them at cluster_sync() before it ends"
        ),
    ))
}

/// Whether the receiving block allocated the barrier an operation from another block uses.
fn allocated_there(
    to: &Block<'_, '_>,
    a: crate::ir::BarrierArrayId,
    rank: usize,
    what: &str,
    loc: Loc,
) -> R<()> {
    if to.bars[a.0 as usize].is_some() {
        return Ok(());
    }
    Err(Fail::new(
        Fault::Invalid,
        loc,
        format!(
            "{what} on barrier `{}` of the block of rank {rank} before that block allocated it: \
             meet at cluster_sync() after allocating barriers that other blocks use",
            to.program().barrier(a).name
        ),
    ))
}

/// Completes a cluster barrier that every thread of every block of the cluster waits at;
/// whether it did.
fn release_cluster_sync(blocks: &mut [Block<'_, '_>], tasks: &mut [Vec<Task<'_>>]) -> bool {
    let at_cluster_sync = |t: &Task<'_>| {
        matches!(
            t.state,
            State::Sync {
                scope: SyncScope::Cluster | SyncScope::ClusterRelaxed,
                ..
            }
        )
    };
    // the relaxed form orders no memory: a thread's writes before it are not known to the
    // others after it unless every thread met at the ordered form
    let ordered = tasks
        .iter()
        .flatten()
        .filter(|t| at_cluster_sync(t))
        .all(|t| {
            matches!(
                t.state,
                State::Sync {
                    scope: SyncScope::Cluster,
                    ..
                }
            )
        });
    let all_there = blocks.iter().zip(tasks.iter()).all(|(b, ts)| {
        let waiting: usize = ts
            .iter()
            .filter(|t| at_cluster_sync(t))
            .map(|t| t.threads.len())
            .sum();
        waiting == b.prep.block_threads as usize
    });
    if !all_there {
        return false;
    }
    for (b, ts) in blocks.iter_mut().zip(tasks.iter_mut()) {
        // every thread of the block met there (another block's shared memory is not tracked)
        if ordered {
            let all: Vec<u32> = (0..b.prep.block_threads).collect();
            b.races.sync(&all);
        }
        for t in ts.iter_mut().filter(|t| at_cluster_sync(t)) {
            t.state = State::Run;
            advance_pc(t);
        }
    }
    true
}

/// What one scheduling step of a block did.
enum Progress {
    /// Something ran, woke, converged or landed.
    Moved,
    /// Every thread finished.
    Done,
    /// Nothing can move within the block.
    Stuck,
}

/// The block's first task: every thread at the top of the body, the parameters known.
fn first_tasks<'p>(b: &Block<'_, 'p>) -> Vec<Task<'p>> {
    let p = b.program();
    let bt = b.prep.block_threads;
    let mut env = vec![None; p.vars.len()];
    for (v, arg) in control::param_values(b) {
        env[v.0 as usize] = Some(arg);
    }
    vec![Task {
        threads: (0..bt).collect(),
        frames: vec![Frame {
            stmts: &p.body,
            pc: 0,
            kind: FrameKind::Root,
            owner: None,
        }],
        env,
        state: State::Run,
        skip_converge: false,
        yielded: false,
    }]
}

/// One scheduling step: a task runs (its group's threads first), or fragments that waited
/// for their group go on alone, or the copy engine lands the oldest copy.
fn advance<'p>(b: &mut Block<'_, 'p>, tasks: &mut Vec<Task<'p>>) -> R<Progress> {
    wake(b, tasks);
    merge(tasks);
    b.stats.max_tasks = b.stats.max_tasks.max(tasks.len());
    if let Some(i) = next_task(tasks) {
        tasks[i].yielded = false;
        let child = loop {
            let child = run_task(b, &mut tasks[i])?;
            // an arrival that woke nobody hands nothing over: the task goes on
            if !tasks[i].yielded || wake(b, tasks) {
                break child;
            }
            tasks[i].yielded = false;
        };
        // The group's threads run first: they usually issue the asynchronous work the
        // others will wait for.
        for (k, c) in child.into_iter().enumerate() {
            tasks.insert(i + k, c);
        }
        return Ok(Progress::Moved);
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
        return Ok(Progress::Moved);
    }
    // Then the copy engine: the oldest copy lands.
    if let Some(landed) = hazards::land_next(b) {
        landed?;
        return Ok(Progress::Moved);
    }
    if tasks.iter().all(|t| matches!(t.state, State::Done)) {
        return Ok(Progress::Done);
    }
    Ok(Progress::Stuck)
}

/// The task to run next: the first that can, passing over one that yielded while another can.
fn next_task(tasks: &[Task<'_>]) -> Option<usize> {
    let can_run = |t: &Task<'_>| matches!(t.state, State::Run);
    tasks
        .iter()
        .position(|t| can_run(t) && !t.yielded)
        .or_else(|| tasks.iter().position(can_run))
}

/// Wakes waiters whose barrier phase completed and releases a block barrier that every thread
/// reached; whether any task woke.
fn wake(b: &mut Block<'_, '_>, tasks: &mut [Task<'_>]) -> bool {
    let mut woke = false;
    for t in tasks.iter_mut() {
        if let State::Barrier {
            array,
            index,
            parity,
            ..
        } = t.state
        {
            if barrier::phase_completed(b, array, index, parity) {
                b.races.acquire((array, index), parity, &t.threads);
                b.observe(array, index);
                t.state = State::Run;
                advance_pc(t);
                woke = true;
            }
        }
    }
    // a hardware barrier completes when as many threads as it counts wait on it: the block's
    // (0) all of them, a group's its threads
    // (a cluster's barrier is the cluster scheduler's: `release_cluster_sync`)
    let block_threads = b.prep.block_threads;
    let barrier_of = |t: &Task<'_>| match t.state {
        State::Sync {
            scope: SyncScope::Block,
            ..
        } => Some((0, block_threads)),
        State::Sync {
            scope: SyncScope::Group(g),
            ..
        } => Some((g.barrier, g.threads)),
        _ => None,
    };
    let waiting: Vec<(u32, u32)> = tasks.iter().filter_map(barrier_of).collect();
    for (id, expected) in waiting {
        let at: usize = tasks
            .iter()
            .filter(|t| barrier_of(t).is_some_and(|(i, _)| i == id))
            .map(|t| t.threads.len())
            .sum();
        if at > 0 && at == expected as usize {
            // `sync_any`: whether any thread's condition held, in each voter's variable
            let any = tasks.iter().any(|t| {
                barrier_of(t).is_some_and(|(i, _)| i == id)
                    && matches!(
                        t.state,
                        State::Sync {
                            vote: Some((_, true)),
                            ..
                        }
                    )
            });
            let mut met = vec![];
            for t in tasks.iter_mut() {
                if let (
                    Some((i, _)),
                    State::Sync {
                        vote: Some((out, _)),
                        ..
                    },
                ) = (barrier_of(t), &t.state)
                {
                    if i == id {
                        t.env[out.0 as usize] = Some(any as i64);
                    }
                }
                if barrier_of(t).is_some_and(|(i, _)| i == id) {
                    met.extend_from_slice(&t.threads);
                    t.state = State::Run;
                    advance_pc(t);
                    woke = true;
                }
            }
            b.races.sync(&met);
        }
    }
    woke
}

fn advance_pc(t: &mut Task<'_>) {
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

/// Runs a task until it blocks, finishes or splits; a split returns the new tasks.
fn run_task<'p>(b: &mut Block<'_, 'p>, task: &mut Task<'p>) -> R<Vec<Task<'p>>> {
    let bt = b.prep.block_threads;
    loop {
        let Some(frame) = task.frames.last_mut() else {
            task.state = State::Done;
            return Ok(vec![]);
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
            return Ok(vec![]);
        }
        task.skip_converge = false;
        b.stats.statements += 1;
        let step = match &s.kind {
            StmtKind::Inst(i) => exec_inst(b, task, i, s)?,
            StmtKind::ThreadGroup { .. } => {
                let children = control::thread_group(task, s);
                if !children.is_empty() {
                    return Ok(children);
                }
                continue;
            }
            StmtKind::For { .. } => {
                control::for_loop(b, task, s)?;
                continue;
            }
            StmtKind::If { .. } => {
                control::if_stmt(b, task, s)?;
                continue;
            }
            StmtKind::While { .. } => {
                control::while_loop(b, task, s)?;
                continue;
            }
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {
                control::exec(b, task, s)?
            }
        };
        match step {
            Step::Next => advance_pc(task),
            Step::Wait(state) => {
                task.state = state;
                return Ok(vec![]);
            }
            Step::Yield => {
                advance_pc(task);
                task.yielded = true;
                return Ok(vec![]);
            }
        }
    }
}

/// The end of a frame: the next loop iteration (a `for` loop's counter steps, a `while`
/// loop's condition is evaluated again), or back to the enclosing statement list.
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
    if let FrameKind::While {
        cond,
        loc,
        iterations,
    } = frame.kind
    {
        let Some(holds) = eval(cond, &task.env, b.bidx) else {
            return Err(Fail::new(
                Fault::Invalid,
                loc,
                "while_: the condition cannot be evaluated (division by zero or a variable \
                 without a value)",
            ));
        };
        if holds != 0 {
            if iterations >= b.prep.max_loop_iterations {
                return Err(control::runaway(b, loc, cond, Some(iterations)));
            }
            frame.kind = FrameKind::While {
                cond,
                loc,
                iterations: iterations + 1,
            };
            frame.pc = 0;
            return Ok(());
        }
    }
    let done = task.frames.pop();
    if let Some(f) = done {
        // Variables declared in the body go out of scope, so tasks that ran it can merge with
        // tasks that did not.
        if let Some(vars) = f.owner.and_then(|id| b.prep.declared.get(id.0 as usize)) {
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

/// Whether the task holds every thread a collective instruction needs: whole warps (relative
/// to its group) or whole warp groups.
fn holds_whole(task: &Task<'_>, scope: ThreadScope) -> bool {
    let unit = match scope {
        // one thread issues alone; a warp elects a lane once it has converged
        ThreadScope::OneOrWarp if task.group().1 == 1 => return true,
        ThreadScope::Warps | ThreadScope::OneOrWarp => 32,
        ThreadScope::WarpGroup | ThreadScope::WarpGroups => 128,
        ThreadScope::Any | ThreadScope::OneThread | ThreadScope::Block | ThreadScope::BlockOnce => {
            return true
        }
    };
    let base = if unit == 32 { task.base() } else { 0 };
    let mut units: Vec<u32> = task
        .threads
        .iter()
        .map(|t| t.saturating_sub(base) / unit)
        .collect();
    units.dedup();
    units.len() * unit as usize == task.threads.len()
}

/// Runs one instruction for every thread of the task: the hazards its facts reveal first, then
/// its family's rule, then what its ordinary writes leave for the proxy-fence rule.
fn exec_inst<'p>(b: &mut Block<'_, 'p>, task: &mut Task<'p>, i: &'p Inst, s: &'p Stmt) -> R<Step> {
    let loc = s.loc;
    let Some(facts) = b.prep.facts(s.id) else {
        return Err(Fail::new(
            Fault::Invalid,
            loc,
            "an instruction without a statement id: build programs with the script builder",
        ));
    };
    if !holds_whole(task, facts.scope) {
        return Ok(Step::Wait(State::Converge {
            collective: true,
            loc,
        }));
    }
    hazards::check(b, task, facts, i.name(), loc)?;
    if b.prep.without_fence == Some(s.id) {
        // a test of the kernel's fences runs as if this one were not there
        return Ok(Step::Next);
    }
    let step = match i {
        Inst::Memory(m) => memory::exec(b, task, m, loc)?,
        Inst::Mbarrier(m) => mbarrier::exec(b, task, m, loc)?,
        Inst::Tma(t) => tma::exec(b, task, t, facts, loc)?,
        Inst::Mma(m) => mma::exec(b, task, m, loc)?,
        Inst::Arith(a) => arithmetic::exec(b, task, a, loc)?,
        Inst::Wgmma(w) => wgmma::exec(b, task, w, facts, loc)?,
        Inst::Shape(v) => shape::exec(b, task, v, loc)?,
        Inst::Debug(d) => debug::exec(b, task, d, loc)?,
        // registers hold values in the interpreter whatever their number: nothing to run
        Inst::Registers(_) => Step::Next,
        Inst::CpAsync(c) => cp_async::exec(b, task, c, facts, loc)?,
    };
    if let Step::Next | Step::Yield = step {
        hazards::after(b, task, facts, i.name(), loc)?;
    }
    Ok(step)
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
                let st = barrier::state(b, array, index);
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
            State::Sync { loc, scope, .. } => {
                let (range, what) = match scope {
                    SyncScope::Group(g) => (g.first..g.first + g.threads, "sync_group()"),
                    SyncScope::Block => (0..u32::MAX, "sync()"),
                    SyncScope::Cluster => (0..u32::MAX, "cluster_sync()"),
                    SyncScope::ClusterRelaxed => (0..u32::MAX, "cluster_sync_relaxed()"),
                };
                let same =
                    |o: &Task<'_>| matches!(o.state, State::Sync { scope: os, .. } if os == scope);
                let mut missing: Vec<u32> = tasks
                    .iter()
                    .filter(|o| !same(o))
                    .flat_map(|o| o.threads.iter().copied())
                    .filter(|th| range.contains(th))
                    .collect();
                missing.sort_unstable();
                let why = if !finished.is_empty() && missing == finished {
                    " (they finished the kernel)"
                } else {
                    ""
                };
                let cluster = matches!(scope, SyncScope::Cluster | SyncScope::ClusterRelaxed);
                let waits_for = if missing.is_empty() && cluster {
                    "the other blocks of the cluster, which never reach it (they finished the \
                     kernel or wait elsewhere)"
                        .to_string()
                } else {
                    format!("{}{why}", threads_text(&missing))
                };
                lines.push((
                    2,
                    loc,
                    format!(
                        "deadlock: {who} wait{} here in {what} for {waits_for}",
                        s_(t)
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
