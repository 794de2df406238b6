//! Scalar variables, loops, conditionals, thread groups and `sync`, as `codegen/control.rs`
//! emits them.

use super::state::{Block, Fail, R};
use super::task::{value, Frame, FrameKind, State, Step, Task};
use crate::error::Fault;
use crate::ir::{Stmt, StmtKind, VarId, VarKind};

/// The values of the runtime-scalar parameters (pointers get 0: no expression reads them) and
/// of the parameters the host derives from them (fast divisors; `run_program` checked that
/// they evaluate to valid divisors).
pub(crate) fn param_values(b: &Block<'_, '_>) -> Vec<(VarId, i64)> {
    let p = b.program();
    let arg = |v: &crate::ir::VarDecl| match v.kind {
        VarKind::Param(arg) if v.pointee.is_none() => b.args.get(arg).copied(),
        _ => None,
    };
    let by_var = |id: VarId| arg(p.var(id));
    p.vars
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let value = match &v.kind {
                VarKind::Param(_) => arg(v).unwrap_or(0),
                VarKind::FastDivisor(d) => d
                    .eval(&by_var)
                    .and_then(|d| crate::ir::fast_divisor_bits(d).ok())
                    .unwrap_or(0) as i64,
                VarKind::LaunchedBlocks => b.grid[0],
                _ => return None,
            };
            Some((VarId(i as u32), value))
        })
        .collect()
}

/// `let`, `assign` and `sync`.
pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, s: &Stmt) -> R<Step> {
    match &s.kind {
        StmtKind::Let { var, value: e } | StmtKind::Assign { var, value: e } => {
            let t = b.program().var(*var).dtype;
            let v = if t.is_float() {
                // a float variable holds its value rounded to its type, as f64 bits
                let v = super::task::float_value(b, task, e, s.loc)?;
                super::state::round_float(v, t).to_bits() as i64
            } else {
                crate::ir::wrap_to(value(b, task, e, s.loc)?, t)
            };
            task.env[var.0 as usize] = Some(v);
            Ok(Step::Next)
        }
        StmtKind::Sync { scope, vote } => {
            let vote = match vote {
                Some(v) => Some((v.out, value(b, task, &v.cond, s.loc)? != 0)),
                None => None,
            };
            Ok(Step::Wait(State::Sync {
                loc: s.loc,
                scope: *scope,
                vote,
            }))
        }
        StmtKind::For { .. }
        | StmtKind::If { .. }
        | StmtKind::While { .. }
        | StmtKind::ThreadGroup { .. }
        | StmtKind::Inst(_) => {
            unreachable!("the scheduler runs loops, branches, groups and instructions itself")
        }
    }
}

/// `for var in (start..end).step_by(step)`: enters the body (or skips the loop).
pub(crate) fn for_loop<'p>(b: &Block<'_, 'p>, task: &mut Task<'p>, s: &'p Stmt) -> R<()> {
    let StmtKind::For {
        var,
        start,
        end,
        step,
        unroll: _,
        body,
    } = &s.kind
    else {
        return Ok(());
    };
    let first = value(b, task, start, s.loc)?;
    let last = value(b, task, end, s.loc)?;
    let st = value(b, task, step, s.loc)?;
    if st <= 0 {
        return Err(Fail::new(
            Fault::Invalid,
            s.loc,
            format!("for_range: the step is {st}; the loop would never end"),
        ));
    }
    if let Some(f) = task.frames.last_mut() {
        f.pc += 1;
    }
    if first < last && !body.is_empty() {
        task.env[var.0 as usize] = Some(first);
        task.frames.push(Frame {
            stmts: body,
            pc: 0,
            kind: FrameKind::Loop {
                var: *var,
                end,
                step,
                loc: s.loc,
            },
            owner: Some(s.id),
        });
    }
    Ok(())
}

/// `if cond { .. } else { .. }`: enters the branch the condition picks (the task's threads
/// share their variables, so they all take the same one).
pub(crate) fn if_stmt<'p>(b: &Block<'_, 'p>, task: &mut Task<'p>, s: &'p Stmt) -> R<()> {
    let StmtKind::If {
        cond,
        then_body,
        else_body,
    } = &s.kind
    else {
        return Ok(());
    };
    let taken = value(b, task, cond, s.loc)? != 0;
    if let Some(f) = task.frames.last_mut() {
        f.pc += 1;
    }
    let body = if taken { then_body } else { else_body };
    if !body.is_empty() {
        task.frames.push(Frame {
            stmts: body,
            pc: 0,
            kind: FrameKind::Branch { then: taken },
            owner: Some(s.id),
        });
    }
    Ok(())
}

/// `while cond { .. }`: enters the body when the condition holds (the scheduler evaluates it
/// again at the end of every iteration).
pub(crate) fn while_loop<'p>(b: &Block<'_, 'p>, task: &mut Task<'p>, s: &'p Stmt) -> R<()> {
    let StmtKind::While { cond, body } = &s.kind else {
        return Ok(());
    };
    if value(b, task, cond, s.loc)? == 0 {
        if let Some(f) = task.frames.last_mut() {
            f.pc += 1;
        }
        return Ok(());
    }
    if body.is_empty() {
        // nothing can change what the condition reads
        return Err(runaway(b, s.loc, cond, None));
    }
    if let Some(f) = task.frames.last_mut() {
        f.pc += 1;
    }
    task.frames.push(Frame {
        stmts: body,
        pc: 0,
        kind: FrameKind::While {
            cond,
            loc: s.loc,
            iterations: 1,
        },
        owner: Some(s.id),
    });
    Ok(())
}

/// The fault of a `while` loop whose condition stays true: after `iterations`, or at once for
/// an empty body.
pub(crate) fn runaway(
    b: &Block<'_, '_>,
    loc: crate::ir::Loc,
    cond: &crate::ir::Expr,
    iterations: Option<u64>,
) -> Fail {
    let p = b.program();
    let names = |v: VarId| p.var(v).name.clone();
    let cond = crate::ir::ExprPrinter {
        expr: cond,
        names: &names,
    };
    let msg = match iterations {
        None => format!(
            "while_: the condition `{cond}` holds and the body is empty, so nothing can make it \
             false: the loop never ends"
        ),
        Some(n) => format!(
            "while_: the condition `{cond}` still holds after {n} iterations (the interpreter's \
             limit, interp::Options::max_loop_iterations): does the body assign what the \
             condition reads?"
        ),
    };
    Fail::new(Fault::RunawayLoop, loc, msg)
}

/// Enters a thread group: the task's threads inside `begin .. begin + count` (relative to the
/// enclosing group) run the body. When only part of the task is inside, that part becomes a
/// new task (returned) and the rest goes on past the statement. With copies, the threads of
/// each group `i` (`begin + i · count ..`) run the body apart, with the group's index set: a
/// new task each, or the task itself when all of it is in one group.
pub(crate) fn thread_group<'p>(task: &mut Task<'p>, s: &'p Stmt) -> Vec<Task<'p>> {
    let StmtKind::ThreadGroup {
        begin,
        count,
        copies,
        body,
        ..
    } = &s.kind
    else {
        return vec![];
    };
    let (begin, count) = (*begin, *count);
    let n = copies.map_or(1, |c| c.copies);
    let lo = task.base().saturating_add(begin);
    let hi = lo.saturating_add(count.saturating_mul(n));
    if let Some(f) = task.frames.last_mut() {
        f.pc += 1;
    }
    // the threads of each group inside, by the group's index
    let mut groups: Vec<(u32, Vec<u32>)> = vec![];
    let mut outs = vec![];
    for &t in &task.threads {
        if !(lo..hi).contains(&t) {
            outs.push(t);
            continue;
        }
        let i = (t - lo) / count.max(1);
        match groups.iter_mut().find(|(g, _)| *g == i) {
            Some((_, ts)) => ts.push(t),
            None => groups.push((i, vec![t])),
        }
    }
    if groups.is_empty() {
        return vec![];
    }
    let frame = |i: u32| Frame {
        stmts: body,
        pc: 0,
        kind: FrameKind::Group {
            base: lo.saturating_add(i.saturating_mul(count)),
            count: count.max(1),
        },
        owner: Some(s.id),
    };
    let set_index = |env: &mut Vec<Option<i64>>, i: u32| {
        if let Some(c) = copies {
            env[c.index.0 as usize] = Some(i64::from(i));
        }
    };
    let outer = task.frames.clone();
    let mut children = vec![];
    for (k, (i, threads)) in groups.into_iter().enumerate() {
        if k == 0 && outs.is_empty() {
            // the task itself enters its (only or first) group
            task.threads = threads;
            task.frames.push(frame(i));
            set_index(&mut task.env, i);
            continue;
        }
        let mut frames = outer.clone();
        frames.push(frame(i));
        let mut env = task.env.clone();
        set_index(&mut env, i);
        children.push(Task {
            threads,
            frames,
            env,
            state: State::Run,
            skip_converge: false,
            yielded: false,
        });
    }
    if !outs.is_empty() {
        task.threads = outs;
    }
    children
}
