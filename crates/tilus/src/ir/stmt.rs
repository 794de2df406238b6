//! Statements: control flow, scalar variables, thread groups and instructions.

use super::{Expr, Inst, Loc, VarId};

/// How a thread group was written, for printing and diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// `thread_group(begin, count)`.
    Threads,
    /// `single_thread()`.
    SingleThread,
    /// `single_warp(w)`.
    SingleWarp,
    /// `warp_group(w)`.
    WarpGroup,
    /// `thread_groups(begin, count, copies)`: consecutive groups running one copy of the code.
    Copies,
}

/// Consecutive thread groups that run one copy of a body, each knowing its index at run time
/// ([`StmtKind::ThreadGroup::copies`]): the generated code holds the body once instead of once
/// per group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupCopies {
    /// How many groups: threads `begin + i · count ..` run the body as group `i`.
    pub copies: u32,
    /// The variable holding the group's index (`0 .. copies`) inside the body.
    pub index: VarId,
}

impl GroupKind {
    /// The builder method's name.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Threads => "thread_group",
            GroupKind::SingleThread => "single_thread",
            GroupKind::SingleWarp => "single_warp",
            GroupKind::WarpGroup => "warp_group",
            GroupKind::Copies => "thread_groups",
        }
    }
}

/// A statement's identity within its program: statements are numbered in the order they were
/// traced, so tables about statements (the interpreter's, the diagnostics') are keyed by it and
/// never by memory addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtId(pub u32);

/// A statement and where the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stmt {
    /// What it does.
    pub kind: StmtKind,
    /// Where it was written.
    pub loc: Loc,
    /// Its identity (unique within the program).
    pub id: StmtId,
}

/// The statements.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StmtKind {
    /// Declares a variable (immutable or mutable) with an initial value.
    Let {
        /// The variable.
        var: VarId,
        /// Its initial value.
        value: Expr,
    },
    /// Assigns a mutable variable.
    Assign {
        /// The variable.
        var: VarId,
        /// The new value.
        value: Expr,
    },
    /// `for var in (start..end).step_by(step)`.
    For {
        /// Induction variable.
        var: VarId,
        /// First value.
        start: Expr,
        /// Exclusive bound.
        end: Expr,
        /// Increment (positive).
        step: Expr,
        /// How many iterations the generated code unrolls (`#pragma unroll n`; 1: not at all);
        /// `None`: the compiler decides. A hint: the loop computes the same either way.
        unroll: Option<u32>,
        /// Loop body.
        body: Vec<Stmt>,
    },
    /// `if cond { then_body } else { else_body }`: a scalar condition (boolean, or an integer
    /// that is true when nonzero), evaluated once.
    If {
        /// The condition.
        cond: Expr,
        /// Runs when the condition holds.
        then_body: Vec<Stmt>,
        /// Runs otherwise (empty for an `if` without `else`).
        else_body: Vec<Stmt>,
    },
    /// `while cond { body }`: the condition is evaluated before every iteration, so it sees
    /// what the body assigned.
    While {
        /// The condition (boolean, or an integer that is true when nonzero).
        cond: Expr,
        /// Loop body.
        body: Vec<Stmt>,
    },
    /// Runs `body` on threads `begin .. begin + count` of the enclosing group only (with
    /// `copies`, on each of the consecutive groups of `count` threads from `begin`).
    ThreadGroup {
        /// First thread, relative to the enclosing group.
        begin: u32,
        /// Number of threads (of each group, with `copies`).
        count: u32,
        /// How it was written.
        kind: GroupKind,
        /// Several groups running this body, each with its index in a variable.
        copies: Option<GroupCopies>,
        /// What those threads run.
        body: Vec<Stmt>,
    },
    /// A barrier: for all threads of the block (`__syncthreads`), the threads of one thread
    /// group (a named barrier, `bar.sync id, threads`), or every thread of the block's
    /// cluster (`barrier.cluster`).
    Sync {
        /// Who meets.
        scope: SyncScope,
        /// A block barrier that also votes (`sync_any`): whether the condition held in any
        /// thread, in every thread's `out` after it.
        vote: Option<Vote>,
    },
    /// A tile-level instruction.
    Inst(Inst),
}

impl StmtKind {
    /// The statement lists nested in this statement (loop bodies, both branches of an `if`,
    /// thread-group bodies), in program order; empty for the others.
    pub fn bodies(&self) -> Vec<&[Stmt]> {
        match self {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ThreadGroup { body, .. } => vec![body],
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => vec![then_body, else_body],
            StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Sync { .. }
            | StmtKind::Inst(_) => {
                vec![]
            }
        }
    }

    /// [`StmtKind::bodies`], to change them.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<Stmt>> {
        match self {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ThreadGroup { body, .. } => vec![body],
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => vec![then_body, else_body],
            StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Sync { .. }
            | StmtKind::Inst(_) => vec![],
        }
    }
}

/// The threads a group barrier waits for: whole warps of one thread group, on a hardware
/// barrier of their own (0 is `__syncthreads`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupSync {
    /// The group's first thread in the block.
    pub first: u32,
    /// Its number of threads (a multiple of 32).
    pub threads: u32,
    /// The hardware barrier, 1 to 15.
    pub barrier: u32,
}

/// The vote of a block barrier (`__syncthreads_or`): each thread's `cond`, and the variable
/// that receives, in every thread, whether any of them held.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Vote {
    /// Each thread's condition (a boolean expression).
    pub cond: Expr,
    /// The block-wide answer: the same in every thread.
    pub out: VarId,
}

/// Who a barrier waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncScope {
    /// Every thread of the block (`sync()`).
    Block,
    /// The threads of one thread group (`sync_group()`).
    Group(GroupSync),
    /// Every thread of every block of the cluster (`cluster_sync()`).
    Cluster,
    /// Every thread of every block of the cluster, with no memory ordering
    /// (`cluster_sync_relaxed()`): the threads meet, and mbarriers initialized before it
    /// (their initialization fenced at cluster scope) take the other blocks' arrivals and
    /// copies after it.
    ClusterRelaxed,
}
