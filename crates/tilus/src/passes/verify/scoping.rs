//! Values are used only where they exist: a loop index, a `let`/`var`, a register tile or a
//! shared tile declared inside a loop, a branch of an `if` or a thread group does not exist
//! after it (the generated CUDA declares it in that block). Using one outside is a diagnostic
//! naming both lines.
//! What an instruction uses and declares comes from its facts.

use crate::ir::facts::{Access, Memory};
use crate::ir::{Expr, GlobalId, Loc, RegId, SharedId, Stmt, StmtKind, VarId};
use crate::passes::context::Checker;
use std::collections::HashSet;

/// Everything declared so far in one open block, and what the block is (for messages).
#[derive(Default)]
struct Open {
    vars: HashSet<VarId>,
    regs: HashSet<RegId>,
    shareds: HashSet<SharedId>,
    what: &'static str,
}

/// Where a value was declared and the construct around it.
type At = Option<(Loc, &'static str)>;

const LOOP_OR_GROUP: &str = "the loop or thread group";
const BRANCH: &str = "the branch of the if";

#[derive(Default)]
struct Scopes {
    /// The open blocks (innermost last).
    open: Vec<Open>,
    /// Where each value was declared, to say so.
    var_at: Vec<At>,
    reg_at: Vec<At>,
    shared_at: Vec<At>,
}

impl Scopes {
    fn has_var(&self, v: VarId) -> bool {
        self.open.iter().any(|s| s.vars.contains(&v))
    }
    fn has_reg(&self, r: RegId) -> bool {
        self.open.iter().any(|s| s.regs.contains(&r))
    }
    fn has_shared(&self, t: SharedId) -> bool {
        self.open.iter().any(|s| s.shareds.contains(&t))
    }
    /// Where a declaration at `loc` is, for later messages.
    fn here(&self, loc: Loc) -> At {
        Some((loc, self.open.last().map_or(LOOP_OR_GROUP, |o| o.what)))
    }
    fn block(&mut self, what: &'static str) {
        self.open.push(Open {
            what,
            ..Default::default()
        });
    }
}

fn report(c: &mut Checker, loc: Loc, what: String, at: At) {
    let message = match at {
        Some((at, construct)) => {
            format!("{what} is used outside {construct} that declares it (at {at})")
        }
        None => format!("{what} is used before it is declared"),
    };
    c.err_once(loc, message);
}

fn use_var(c: &mut Checker, sc: &Scopes, v: VarId, loc: Loc) {
    if !sc.has_var(v) {
        let what = format!("`{}`", c.p.var(v).name);
        report(c, loc, what, sc.var_at[v.0 as usize]);
    }
}

fn use_expr(c: &mut Checker, sc: &Scopes, e: &Expr, loc: Loc) {
    let mut vars = vec![];
    e.vars(&mut vars);
    for v in vars {
        use_var(c, sc, v, loc);
    }
}

fn use_global(c: &mut Checker, sc: &Scopes, g: GlobalId, loc: Loc) {
    let d = c.p.global(g);
    use_var(c, sc, d.ptr, loc);
    for e in d.shape.iter().chain(&d.strides) {
        use_expr(c, sc, e, loc);
    }
}

fn inst(c: &mut Checker, sc: &mut Scopes, i: &crate::ir::Inst, loc: Loc) {
    let facts = i.facts(c.p);
    for e in &facts.scalars {
        use_expr(c, sc, e, loc);
    }
    for &v in &facts.defines {
        sc.var_at[v.0 as usize] = sc.here(loc);
        if let Some(o) = sc.open.last_mut() {
            o.vars.insert(v);
        }
    }
    for e in &facts.effects {
        match (e.memory, e.access) {
            (Memory::Register(r), Access::Declare) => {
                sc.reg_at[r.0 as usize] = sc.here(loc);
                if let Some(s) = sc.open.last_mut() {
                    s.regs.insert(r);
                }
            }
            (Memory::Register(r), _) => {
                if !sc.has_reg(r) {
                    let what = format!("register tensor `{}`", c.p.register(r).name);
                    report(c, loc, what, sc.reg_at[r.0 as usize]);
                }
            }
            (Memory::Shared(t), Access::Declare) => {
                sc.shared_at[t.0 as usize] = sc.here(loc);
                if let Some(s) = sc.open.last_mut() {
                    s.shareds.insert(t);
                }
            }
            (Memory::Shared(t), _) => {
                if !sc.has_shared(t) {
                    let what = format!("shared tensor `{}`", c.p.shared(t).name);
                    report(c, loc, what, sc.shared_at[t.0 as usize]);
                }
            }
            (Memory::Global(g), _) => use_global(c, sc, g, loc),
        }
    }
}

fn walk(c: &mut Checker, sc: &mut Scopes, stmts: &[Stmt]) {
    for s in stmts {
        match &s.kind {
            StmtKind::Let { var, value } => {
                use_expr(c, sc, value, s.loc);
                sc.var_at[var.0 as usize] = sc.here(s.loc);
                if let Some(o) = sc.open.last_mut() {
                    o.vars.insert(*var);
                }
            }
            StmtKind::Assign { var, value } => {
                use_var(c, sc, *var, s.loc);
                use_expr(c, sc, value, s.loc);
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll: _,
                body,
            } => {
                for e in [start, end, step] {
                    use_expr(c, sc, e, s.loc);
                }
                sc.var_at[var.0 as usize] = Some((s.loc, LOOP_OR_GROUP));
                sc.block(LOOP_OR_GROUP);
                if let Some(o) = sc.open.last_mut() {
                    o.vars.insert(*var);
                }
                walk(c, sc, body);
                sc.open.pop();
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                use_expr(c, sc, cond, s.loc);
                for body in [then_body, else_body] {
                    sc.block(BRANCH);
                    walk(c, sc, body);
                    sc.open.pop();
                }
            }
            StmtKind::While { cond, body } => {
                use_expr(c, sc, cond, s.loc);
                sc.block(LOOP_OR_GROUP);
                walk(c, sc, body);
                sc.open.pop();
            }
            StmtKind::ThreadGroup { body, copies, .. } => {
                sc.block(LOOP_OR_GROUP);
                if let Some(cp) = copies {
                    sc.var_at[cp.index.0 as usize] = Some((s.loc, LOOP_OR_GROUP));
                    if let Some(o) = sc.open.last_mut() {
                        o.vars.insert(cp.index);
                    }
                }
                walk(c, sc, body);
                sc.open.pop();
            }
            StmtKind::Sync { vote, .. } => {
                if let Some(v) = vote {
                    use_expr(c, sc, &v.cond, s.loc);
                    sc.var_at[v.out.0 as usize] = sc.here(s.loc);
                    if let Some(o) = sc.open.last_mut() {
                        o.vars.insert(v.out);
                    }
                }
            }
            StmtKind::Inst(i) => inst(c, sc, i, s.loc),
        }
    }
}

/// The scoping rule over the whole program.
pub(super) fn check(c: &mut Checker) {
    let p = c.p;
    let mut sc = Scopes {
        open: vec![Default::default()],
        var_at: vec![None; p.vars.len()],
        reg_at: vec![None; p.registers.len()],
        shared_at: vec![None; p.shareds.len()],
    };
    for (i, v) in p.vars.iter().enumerate() {
        if v.kind.is_parameter() {
            sc.open[0].vars.insert(VarId(i as u32));
        }
    }
    walk(c, &mut sc, &p.body);
}
