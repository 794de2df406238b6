//! The verifier: every rule reports the user's file:line and says what to do instead.
//!
//! Rules live with their instruction family; this file walks the program and keeps the
//! context they need (the thread group, loops, live tensors).

mod arithmetic;
mod control;
mod mbarrier;
mod memory;
mod mma;
mod planned;
mod scope;
mod tma;
mod wgmma;

pub use planned::check_planned;

use crate::ir::{Inst, Loc, Program, SharedId, Stmt, StmtKind};
use crate::{Diagnostic, Error, Result};
use std::collections::HashMap;

/// Where an instruction runs.
pub(crate) struct Scope {
    /// Threads of the innermost group.
    pub threads: u32,
    /// Whether the innermost group is the whole block.
    pub is_block: bool,
    /// Nesting depth of loops.
    pub loop_depth: usize,
    /// Identity of the innermost loop (0: none), so sibling loops are told apart.
    pub loop_id: usize,
    /// `single_thread` or a `thread_group` of one thread.
    pub single_thread: bool,
    /// The group's first thread in the block.
    pub base: u32,
}

/// What the walk knows so far.
pub(crate) struct Checker<'p> {
    pub p: &'p Program,
    pub diags: Vec<Diagnostic>,
    /// Shared tiles allocated and not yet freed, with the loop of their allocation.
    pub live_shared: HashMap<SharedId, usize>,
    /// Loops seen so far (for loop identities).
    pub loops: usize,
    /// Shared tiles freed, with where.
    pub freed_shared: HashMap<SharedId, Loc>,
}

impl Checker<'_> {
    pub fn err(&mut self, loc: Loc, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            loc,
            message: message.into(),
        });
    }

    /// Reports use of a shared tile that was freed or never allocated.
    pub fn use_shared(&mut self, id: SharedId, what: &str, loc: Loc) {
        if let Some(at) = self.freed_shared.get(&id) {
            let name = &self.p.shared(id).name;
            let msg = format!("{what} uses shared tensor `{name}` after free_shared at {at}");
            self.err(loc, msg);
        }
    }
}

/// Checks the rules that need no layouts.
pub fn check(p: &Program) -> Result<()> {
    let mut c = Checker {
        p,
        diags: vec![],
        live_shared: HashMap::new(),
        loops: 0,
        freed_shared: HashMap::new(),
    };
    control::check_program(&mut c);
    let scope = Scope {
        threads: p.threads(),
        is_block: true,
        loop_depth: 0,
        loop_id: 0,
        single_thread: p.threads() == 1,
        base: 0,
    };
    walk(&mut c, &p.body, &scope);
    wgmma::check_async(&mut c);
    memory::check_proxy_fences(&mut c);
    scope::check_scopes(&mut c);
    finish(c.diags)
}

pub(crate) fn finish(diags: Vec<Diagnostic>) -> Result<()> {
    if diags.is_empty() {
        Ok(())
    } else {
        Err(Error::Script(diags))
    }
}

fn walk(c: &mut Checker, stmts: &[Stmt], scope: &Scope) {
    mbarrier::check_transactions(c, stmts);
    for s in stmts {
        match &s.kind {
            StmtKind::For { body, .. } => {
                control::check_stmt(c, s, scope);
                c.loops += 1;
                let inner = Scope {
                    loop_depth: scope.loop_depth + 1,
                    loop_id: c.loops,
                    ..*scope
                };
                walk(c, body, &inner);
            }
            StmtKind::ThreadGroup {
                begin, count, body, ..
            } => {
                control::check_stmt(c, s, scope);
                let inner = Scope {
                    threads: *count,
                    is_block: false,
                    loop_depth: scope.loop_depth,
                    loop_id: scope.loop_id,
                    single_thread: *count == 1,
                    base: scope.base.saturating_add(*begin),
                };
                walk(c, body, &inner);
            }
            StmtKind::Inst(inst) => match inst {
                Inst::Memory(i) => memory::check(c, i, s.loc, scope),
                Inst::Mbarrier(i) => mbarrier::check(c, i, s.loc, scope),
                Inst::Tma(i) => tma::check(c, i, s.loc, scope),
                Inst::Mma(i) => mma::check(c, i, s.loc, scope),
                Inst::Arith(i) => arithmetic::check(c, i, s.loc, scope),
                Inst::Wgmma(i) => wgmma::check(c, i, s.loc, scope),
            },
            _ => control::check_stmt(c, s, scope),
        }
    }
}
