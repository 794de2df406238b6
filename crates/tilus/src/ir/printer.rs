//! The IR printer. Its text is stable: golden tests compare it.

use super::{
    BarrierRef, Expr, ExprPrinter, Inst, ParamKind, Program, RegView, Stmt, StmtKind, VarId,
};
use std::fmt::Write;

/// Prints a program as text, one statement per line, with the user's file:line at the right.
pub fn print_program(p: &Program) -> String {
    let mut pr = Printer {
        p,
        out: String::new(),
    };
    pr.program();
    pr.out
}

/// The one-line text of a statement's head (as in [`print_program`], without the location):
/// used for comments in generated code.
pub fn describe_stmt(p: &Program, s: &Stmt) -> String {
    let pr = Printer {
        p,
        out: String::new(),
    };
    match &s.kind {
        StmtKind::Let { var, value } => format!("let {} = {}", pr.name(*var), pr.e(value)),
        StmtKind::Assign { var, value } => format!("{} = {}", pr.name(*var), pr.e(value)),
        StmtKind::For {
            var,
            start,
            end,
            step,
            unroll,
            ..
        } => {
            format!(
                "for {} in range({}, {}, {}){}",
                pr.name(*var),
                pr.e(start),
                pr.e(end),
                pr.e(step),
                unroll.map_or(String::new(), |u| format!(" unroll={u}"))
            )
        }
        StmtKind::If { cond, .. } => format!("if {}", pr.e(cond)),
        StmtKind::While { cond, .. } => format!("while {}", pr.e(cond)),
        StmtKind::ThreadGroup {
            begin,
            count,
            kind,
            copies,
            ..
        } => group_text(&Names { p }, *begin, *count, *kind, copies),
        StmtKind::Sync { scope, vote } => sync_text(&Names { p }, scope, vote),
        StmtKind::Inst(i) => pr.inst(i),
    }
}

/// A thread group's head: `thread_group(begin=.., threads=..)`, with copies
/// `thread_groups(begin=.., threads=.., groups=..) as g`.
fn group_text(
    pr: &Names<'_>,
    begin: u32,
    count: u32,
    kind: crate::ir::GroupKind,
    copies: &Option<crate::ir::GroupCopies>,
) -> String {
    let head = format!("{}(begin={begin}, threads={count}", kind.name());
    match copies {
        Some(c) => format!("{head}, groups={}) as {}", c.copies, pr.name(c.index)),
        None => format!("{head})"),
    }
}

struct Printer<'a> {
    p: &'a Program,
    out: String,
}

/// How the printer names things: each instruction family describes its instructions with it.
pub(crate) struct Names<'a> {
    pub p: &'a Program,
}

impl Names<'_> {
    /// A variable's name.
    pub fn name(&self, v: VarId) -> String {
        self.p.var(v).name.clone()
    }

    /// An expression with the program's names.
    pub fn e(&self, e: &Expr) -> String {
        ExprPrinter {
            expr: e,
            names: &|v| self.name(v),
        }
        .to_string()
    }

    /// Expressions separated by commas.
    pub fn list(&self, es: &[Expr]) -> String {
        es.iter().map(|e| self.e(e)).collect::<Vec<_>>().join(", ")
    }

    /// One barrier: `name[index]`.
    pub fn bar(&self, b: &BarrierRef) -> String {
        format!("{}[{}]", self.p.barrier(b.array).name, self.e(&b.index))
    }

    /// A shared view (`[stage]` for one stage, `.T` when transposed).
    pub fn sview(&self, v: &super::SharedView) -> String {
        let mut n = self.p.shared(v.tensor).name.clone();
        if let Some(stage) = &v.stage {
            n = format!("{n}[{}]", self.e(stage));
        }
        if let Some((start, len)) = v.rows {
            n = format!("{n}.rows({start}, {len})");
        }
        if v.transposed {
            n.push_str(".T");
        }
        n
    }

    /// A register view (`.T` when transposed).
    pub fn view(&self, v: &RegView) -> String {
        let n = &self.p.register(v.tensor).name;
        if v.transposed {
            format!("{n}.T")
        } else {
            n.clone()
        }
    }
}

impl Printer<'_> {
    fn names(&self) -> Names<'_> {
        Names { p: self.p }
    }

    fn name(&self, v: VarId) -> String {
        self.names().name(v)
    }

    fn e(&self, e: &Expr) -> String {
        self.names().e(e)
    }

    fn list(&self, es: &[Expr]) -> String {
        self.names().list(es)
    }

    fn program(&mut self) {
        let p = self.p;
        let params: Vec<String> = p
            .params
            .iter()
            .map(|q| match &q.kind {
                ParamKind::Scalar(t) => format!("{}: {}", q.name, t),
                ParamKind::Const(t, v) => format!("{}: const {} = {}", q.name, t, v),
                ParamKind::Pointer { dtype, mutable } => {
                    format!(
                        "{}: *{}{}",
                        q.name,
                        if *mutable { "mut " } else { "" },
                        dtype
                    )
                }
            })
            .collect();
        let _ = writeln!(self.out, "kernel {}({}) {{", p.name, params.join(", "));
        let _ = writeln!(
            self.out,
            "  blocks = [{}], warps = {}",
            self.list(&p.grid),
            p.warps
        );
        if p.smem_bytes > 0 {
            let _ = writeln!(self.out, "  shared_memory = {} bytes", p.smem_bytes);
        }
        self.block(&p.body, 1);
        self.out.push_str("}\n");
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) {
        for s in stmts {
            self.stmt(s, depth);
        }
    }

    fn line(&mut self, depth: usize, text: String, s: &Stmt) {
        let pad = "  ".repeat(depth);
        let _ = writeln!(
            self.out,
            "{pad}{text}  # {}:{}",
            s.loc.short_file(),
            s.loc.line
        );
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        match &s.kind {
            StmtKind::Let { var, value } => {
                let d = self.p.var(*var);
                let kw = if d.kind == super::VarKind::Mutable {
                    "var"
                } else {
                    "let"
                };
                let t = format!("{kw} {}: {} = {}", d.name, d.dtype, self.e(value));
                self.line(depth, t, s)
            }
            StmtKind::Assign { var, value } => {
                let t = format!("{} = {}", self.name(*var), self.e(value));
                self.line(depth, t, s)
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body,
            } => {
                let t = format!(
                    "for {} in range({}, {}, {}){} {{",
                    self.name(*var),
                    self.e(start),
                    self.e(end),
                    self.e(step),
                    unroll.map_or(String::new(), |u| format!(" unroll={u}"))
                );
                self.line(depth, t, s);
                self.block(body, depth + 1);
                let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let t = format!("if {} {{", self.e(cond));
                self.line(depth, t, s);
                self.block(then_body, depth + 1);
                let pad = "  ".repeat(depth);
                if !else_body.is_empty() {
                    let _ = writeln!(self.out, "{pad}}} else {{");
                    self.block(else_body, depth + 1);
                }
                let _ = writeln!(self.out, "{pad}}}");
            }
            StmtKind::While { cond, body } => {
                let t = format!("while {} {{", self.e(cond));
                self.line(depth, t, s);
                self.block(body, depth + 1);
                let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
            }
            StmtKind::ThreadGroup {
                begin,
                count,
                kind,
                copies,
                body,
            } => {
                let names = Names { p: self.p };
                let t = format!("{} {{", group_text(&names, *begin, *count, *kind, copies));
                self.line(depth, t, s);
                self.block(body, depth + 1);
                let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
            }
            StmtKind::Sync { scope, vote } => {
                let t = sync_text(&Names { p: self.p }, scope, vote);
                self.line(depth, t, s)
            }
            StmtKind::Inst(i) => {
                let t = self.inst(i);
                self.line(depth, t, s)
            }
        }
    }

    fn inst(&self, i: &Inst) -> String {
        i.describe(&self.names())
    }
}

/// `sync()`, or a group barrier with its threads and hardware barrier.
fn sync_text(pr: &Names<'_>, scope: &super::SyncScope, vote: &Option<super::Vote>) -> String {
    if let Some(v) = vote {
        return format!("let {} = sync_any({})", pr.name(v.out), pr.e(&v.cond));
    }
    match scope {
        super::SyncScope::Block => "sync()".into(),
        super::SyncScope::Cluster => "cluster_sync()".into(),
        super::SyncScope::ClusterRelaxed => "cluster_sync_relaxed()".into(),
        super::SyncScope::Group(g) => format!(
            "sync_group(threads={}..{}, barrier={})",
            g.first,
            g.first + g.threads,
            g.barrier
        ),
    }
}
