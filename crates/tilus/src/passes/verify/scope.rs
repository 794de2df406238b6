//! Values are used only where they exist: a loop index, a `let`/`var`, a register tile or a
//! shared tile declared inside a loop or thread group does not exist after it (the generated
//! CUDA declares it in that block). Using one outside is a diagnostic naming both lines.

use super::Checker;
use crate::ir::{
    ArithInst, Expr, Inst, Loc, MbarrierInst, MemoryInst, MmaInst, RegId, SharedId, Stmt, StmtKind,
    TmaInst, VarId, VarKind, WgmmaA, WgmmaInst,
};
use std::collections::HashSet;

#[derive(Default)]
struct Scopes {
    /// Everything declared so far in each open block (innermost last).
    open: Vec<(HashSet<VarId>, HashSet<RegId>, HashSet<SharedId>)>,
    /// Where each value was declared, to say so.
    var_at: Vec<Option<Loc>>,
    reg_at: Vec<Option<Loc>>,
    shared_at: Vec<Option<Loc>>,
}

impl Scopes {
    fn has_var(&self, v: VarId) -> bool {
        self.open.iter().any(|s| s.0.contains(&v))
    }
    fn has_reg(&self, r: RegId) -> bool {
        self.open.iter().any(|s| s.1.contains(&r))
    }
    fn has_shared(&self, t: SharedId) -> bool {
        self.open.iter().any(|s| s.2.contains(&t))
    }
}

fn vars_of(e: &Expr) -> Vec<VarId> {
    let mut v = vec![];
    e.vars(&mut v);
    v
}

fn report(c: &mut Checker, loc: Loc, what: String, at: Option<Loc>) {
    let message = match at {
        Some(at) => {
            format!("{what} is used outside the loop or thread group that declares it (at {at})")
        }
        None => format!("{what} is used before it is declared"),
    };
    let d = crate::Diagnostic { loc, message };
    if !c.diags.contains(&d) {
        c.diags.push(d);
    }
}

fn use_var(c: &mut Checker, sc: &Scopes, v: VarId, loc: Loc) {
    if !sc.has_var(v) {
        let what = format!("`{}`", c.p.var(v).name);
        report(c, loc, what, sc.var_at[v.0 as usize]);
    }
}

fn use_expr(c: &mut Checker, sc: &Scopes, e: &Expr, loc: Loc) {
    for v in vars_of(e) {
        use_var(c, sc, v, loc);
    }
}

fn use_reg(c: &mut Checker, sc: &Scopes, r: RegId, loc: Loc) {
    if !sc.has_reg(r) {
        let what = format!("register tensor `{}`", c.p.register(r).name);
        report(c, loc, what, sc.reg_at[r.0 as usize]);
    }
}

fn use_shared(c: &mut Checker, sc: &Scopes, t: SharedId, loc: Loc) {
    if !sc.has_shared(t) {
        let what = format!("shared tensor `{}`", c.p.shared(t).name);
        report(c, loc, what, sc.shared_at[t.0 as usize]);
    }
}

fn use_global(c: &mut Checker, sc: &Scopes, g: crate::ir::GlobalId, loc: Loc) {
    let d = c.p.global(g);
    let exprs: Vec<Expr> = d.shape.clone();
    use_var(c, sc, d.ptr, loc);
    for e in &exprs {
        use_expr(c, sc, e, loc);
    }
}

fn inst(c: &mut Checker, sc: &mut Scopes, i: &Inst, loc: Loc) {
    let def_reg = |sc: &mut Scopes, r: RegId| {
        if let Some(s) = sc.open.last_mut() {
            s.1.insert(r);
        }
        sc.reg_at[r.0 as usize] = Some(loc);
    };
    match i {
        Inst::Memory(m) => match m {
            MemoryInst::GlobalView(g) => use_global(c, sc, *g, loc),
            MemoryInst::AllocShared(t) => {
                if let Some(s) = sc.open.last_mut() {
                    s.2.insert(*t);
                }
                sc.shared_at[t.0 as usize] = Some(loc);
            }
            MemoryInst::FreeShared(t) => use_shared(c, sc, *t, loc),
            MemoryInst::AllocRegister { out, init } => {
                if let Some(e) = init {
                    use_expr(c, sc, e, loc);
                }
                def_reg(sc, *out);
            }
            MemoryInst::LoadShared { src, out } => {
                use_shared(c, sc, *src, loc);
                def_reg(sc, *out);
            }
            MemoryInst::StoreShared { dst, src } => {
                use_shared(c, sc, *dst, loc);
                use_reg(c, sc, src.tensor, loc);
            }
            MemoryInst::FenceProxyAsync => {}
            MemoryInst::StoreGlobal { dst, src, offsets } => {
                use_global(c, sc, *dst, loc);
                use_reg(c, sc, src.tensor, loc);
                for e in offsets {
                    use_expr(c, sc, e, loc);
                }
            }
        },
        Inst::Mbarrier(m) => {
            if let Some(b) = m.barrier() {
                use_expr(c, sc, &b.index, loc);
            }
            match m {
                MbarrierInst::ArriveExpectTx { bytes: e, .. }
                | MbarrierInst::Wait { phase: e, .. } => use_expr(c, sc, e, loc),
                _ => {}
            }
        }
        Inst::Tma(TmaInst::GlobalToShared {
            src,
            dst,
            offsets,
            bar,
        }) => {
            use_global(c, sc, *src, loc);
            use_shared(c, sc, *dst, loc);
            use_expr(c, sc, &bar.index, loc);
            for e in offsets {
                use_expr(c, sc, e, loc);
            }
        }
        Inst::Mma(MmaInst::Dot {
            a, b, c: acc, out, ..
        }) => {
            for r in [a.tensor, b.tensor, acc.tensor, *out] {
                use_reg(c, sc, r, loc);
            }
        }
        Inst::Arith(ArithInst::Cast { src, out }) => {
            use_reg(c, sc, src.tensor, loc);
            def_reg(sc, *out);
        }
        Inst::Wgmma(WgmmaInst::Mma { a, b, d, .. }) => {
            match a {
                WgmmaA::Shared(v) => use_shared(c, sc, v.tensor, loc),
                WgmmaA::Register(v) => use_reg(c, sc, v.tensor, loc),
            }
            use_shared(c, sc, b.tensor, loc);
            use_reg(c, sc, *d, loc);
        }
        Inst::Wgmma(_) => {}
    }
}

fn walk(c: &mut Checker, sc: &mut Scopes, stmts: &[Stmt]) {
    for s in stmts {
        match &s.kind {
            StmtKind::Let { var, value } => {
                use_expr(c, sc, value, s.loc);
                if let Some(o) = sc.open.last_mut() {
                    o.0.insert(*var);
                }
                sc.var_at[var.0 as usize] = Some(s.loc);
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
                body,
            } => {
                for e in [start, end, step] {
                    use_expr(c, sc, e, s.loc);
                }
                sc.var_at[var.0 as usize] = Some(s.loc);
                let mut inner = (HashSet::new(), HashSet::new(), HashSet::new());
                inner.0.insert(*var);
                sc.open.push(inner);
                walk(c, sc, body);
                sc.open.pop();
            }
            StmtKind::ThreadGroup { body, .. } => {
                sc.open.push(Default::default());
                walk(c, sc, body);
                sc.open.pop();
            }
            StmtKind::Sync => {}
            StmtKind::Inst(i) => inst(c, sc, i, s.loc),
        }
    }
}

/// The scoping rule over the whole program.
pub(super) fn check_scopes(c: &mut Checker) {
    let p = c.p;
    let mut sc = Scopes {
        open: vec![Default::default()],
        var_at: vec![None; p.vars.len()],
        reg_at: vec![None; p.registers.len()],
        shared_at: vec![None; p.shareds.len()],
    };
    for (i, v) in p.vars.iter().enumerate() {
        if let VarKind::Param(_) = v.kind {
            sc.open[0].0.insert(VarId(i as u32));
        }
    }
    walk(c, &mut sc, &p.body);
}
