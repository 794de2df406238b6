//! Tasks: sets of threads running the same code at the same place, with their scalar
//! variables, as the scheduler (`sched.rs`) runs them and the families' rules see them.

use super::state::{eval, Block, Fail, R};
use crate::error::Fault;
use crate::ir::{BarrierArrayId, Expr, Loc, Stmt, StmtId, VarId};

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
    /// A branch of an `if` (`then`: the first one).
    Branch { then: bool },
    /// A `while` body, in its `iterations`-th iteration (from 1): the condition is evaluated
    /// again at its end.
    While {
        cond: &'p Expr,
        loc: Loc,
        iterations: u64,
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
    /// The statement whose body this is (`None`: the kernel body).
    pub owner: Option<StmtId>,
}

impl Frame<'_> {
    pub fn same_place(&self, o: &Frame<'_>) -> bool {
        let kind = match (self.kind, o.kind) {
            (FrameKind::Root, FrameKind::Root) => true,
            (FrameKind::Loop { var: a, .. }, FrameKind::Loop { var: b, .. }) => a == b,
            (FrameKind::Branch { then: a }, FrameKind::Branch { then: b }) => a == b,
            // the iteration counts are bookkeeping: tasks with the same variables at the same
            // place run the same code
            (FrameKind::While { .. }, FrameKind::While { .. }) => true,
            (FrameKind::Group { base: a, count: c }, FrameKind::Group { base: b, count: d }) => {
                a == b && c == d
            }
            _ => false,
        };
        kind && self.pc == o.pc && self.owner == o.owner
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
    /// In `sync` (or the block barrier after `mbarrier.alloc`); with `group`, in a thread
    /// group's barrier, which those threads alone complete.
    Sync {
        loc: Loc,
        scope: crate::ir::SyncScope,
        /// `sync_any`: the variable that receives the block's answer, and this task's own
        /// condition (the same in each of its threads).
        vote: Option<(crate::ir::VarId, bool)>,
    },
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
    /// It completed a barrier phase that woke other tasks and lets them run first (`sched.rs`).
    pub yielded: bool,
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

    pub fn is_fragment(&self, block_threads: u32) -> bool {
        let (_, count) = self.group();
        (self.threads.len() as u32) < count.min(block_threads)
    }

    pub fn same_place(&self, o: &Task<'_>) -> bool {
        self.frames.len() == o.frames.len()
            && self
                .frames
                .iter()
                .zip(&o.frames)
                .all(|(a, b)| a.same_place(b))
            && self.env == o.env
    }

    /// The statement the task is at (for diagnostics).
    pub fn stmt(&self) -> Option<&'p Stmt> {
        self.frames.last().and_then(|f| f.stmts.get(f.pc))
    }
}

/// What an instruction did.
pub(crate) enum Step {
    /// Go on with the next statement.
    Next,
    /// Block (the statement is retried or completed by the scheduler).
    Wait(State),
    /// Go on with the next statement, after the tasks this one woke (an arrival that completed
    /// a barrier phase) have run.
    Yield,
}

/// Evaluates a scalar expression in a task, or fails at `loc`.
pub(crate) fn value(b: &Block<'_, '_>, task: &Task<'_>, e: &Expr, loc: Loc) -> R<i64> {
    eval(e, &task.env, b.bidx).ok_or_else(|| {
        let p = b.program();
        let names = |v: VarId| p.var(v).name.clone();
        Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "cannot evaluate `{}`: division by zero, a shift out of range, or a variable \
                 without a value",
                crate::ir::ExprPrinter {
                    expr: e,
                    names: &names
                }
            ),
        )
    })
}

/// Evaluates a float scalar expression in a task, or fails at `loc`.
pub(crate) fn float_value(b: &Block<'_, '_>, task: &Task<'_>, e: &Expr, loc: Loc) -> R<f64> {
    super::state::eval_float(e, &task.env, b.bidx).ok_or_else(|| {
        let p = b.program();
        let names = |v: VarId| p.var(v).name.clone();
        Fail::new(
            Fault::Invalid,
            loc,
            format!(
                "cannot evaluate `{}` as a float: a variable without a value",
                crate::ir::ExprPrinter {
                    expr: e,
                    names: &names
                }
            ),
        )
    })
}

/// The values of a list of expressions in a task.
pub(crate) fn values(b: &Block<'_, '_>, task: &Task<'_>, es: &[Expr], loc: Loc) -> R<Vec<i64>> {
    es.iter().map(|e| value(b, task, e, loc)).collect()
}
