//! The IR printer. Its text is stable: golden tests compare it.

use super::{
    ArithInst, BarrierRef, Expr, ExprPrinter, Inst, MbarrierInst, MemoryInst, MmaInst, ParamKind,
    Program, RegView, Stmt, StmtKind, TmaInst, VarId,
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
            ..
        } => {
            format!(
                "for {} in range({}, {}, {})",
                pr.name(*var),
                pr.e(start),
                pr.e(end),
                pr.e(step)
            )
        }
        StmtKind::ThreadGroup {
            begin, count, kind, ..
        } => format!("{}(begin={begin}, threads={count})", kind.name()),
        StmtKind::Sync => "sync()".into(),
        StmtKind::Inst(i) => pr.inst(i),
    }
}

struct Printer<'a> {
    p: &'a Program,
    out: String,
}

impl Printer<'_> {
    fn name(&self, v: VarId) -> String {
        self.p.var(v).name.clone()
    }

    fn e(&self, e: &Expr) -> String {
        ExprPrinter {
            expr: e,
            names: &|v| self.name(v),
        }
        .to_string()
    }

    fn list(&self, es: &[Expr]) -> String {
        es.iter().map(|e| self.e(e)).collect::<Vec<_>>().join(", ")
    }

    fn bar(&self, b: &BarrierRef) -> String {
        format!("{}[{}]", self.p.barrier(b.array).name, self.e(&b.index))
    }

    fn sview(&self, v: &super::SharedView) -> String {
        let n = &self.p.shared(v.tensor).name;
        if v.transposed {
            format!("{n}.T")
        } else {
            n.clone()
        }
    }

    fn view(&self, v: &RegView) -> String {
        let n = &self.p.register(v.tensor).name;
        if v.transposed {
            format!("{n}.T")
        } else {
            n.clone()
        }
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
                body,
            } => {
                let t = format!(
                    "for {} in range({}, {}, {}) {{",
                    self.name(*var),
                    self.e(start),
                    self.e(end),
                    self.e(step)
                );
                self.line(depth, t, s);
                self.block(body, depth + 1);
                let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
            }
            StmtKind::ThreadGroup {
                begin,
                count,
                kind,
                body,
            } => {
                let t = format!("{}(begin={begin}, threads={count}) {{", kind.name());
                self.line(depth, t, s);
                self.block(body, depth + 1);
                let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
            }
            StmtKind::Sync => self.line(depth, "sync()".into(), s),
            StmtKind::Inst(i) => {
                let t = self.inst(i);
                self.line(depth, t, s)
            }
        }
    }

    fn inst(&self, i: &Inst) -> String {
        let p = self.p;
        match i {
            Inst::Memory(m) => match m {
                MemoryInst::GlobalView(g) => {
                    let d = p.global(*g);
                    format!(
                        "{} = global_view<{}>({}, [{}])",
                        d.name,
                        d.dtype,
                        self.name(d.ptr),
                        self.list(&d.shape)
                    )
                }
                MemoryInst::AllocShared(id) => {
                    let d = p.shared(*id);
                    let mut t = format!("{} = shared_tensor<{}>{:?}", d.name, d.dtype, d.shape);
                    if let Some(l) = &d.layout {
                        let _ = write!(t, " layout={l}");
                    }
                    if let Some(o) = d.offset {
                        let _ = write!(t, " offset={o}");
                    }
                    t
                }
                MemoryInst::FreeShared(id) => format!("free_shared({})", p.shared(*id).name),
                MemoryInst::AllocRegister { out, init } => {
                    let d = p.register(*out);
                    let mut t = format!("{} = register_tensor<{}>{:?}", d.name, d.dtype, d.shape);
                    if let Some(v) = init {
                        let _ = write!(t, " init={}", self.e(v));
                    }
                    if let Some(l) = &d.layout {
                        let _ = write!(t, " {l}");
                    }
                    t
                }
                MemoryInst::LoadShared { src, out } => {
                    let d = p.register(*out);
                    let mut t = format!("{} = load_shared({})", d.name, p.shared(*src).name);
                    if let Some(l) = &d.layout {
                        let _ = write!(t, " {l}");
                    }
                    t
                }
                MemoryInst::StoreShared { dst, src } => {
                    format!("store_shared({}, {})", p.shared(*dst).name, self.view(src))
                }
                MemoryInst::FenceProxyAsync => "fence_proxy_async()".into(),
                MemoryInst::StoreGlobal { dst, src, offsets } => format!(
                    "store_global({}, {}, offsets=[{}])",
                    p.global(*dst).name,
                    self.view(src),
                    self.list(offsets)
                ),
            },
            Inst::Mbarrier(m) => match m {
                MbarrierInst::Alloc(id) => {
                    let d = p.barrier(*id);
                    let mut t = format!("{} = mbarrier.alloc(counts={:?})", d.name, d.counts);
                    if let Some(o) = d.offset {
                        let _ = write!(t, " offset={o}");
                    }
                    t
                }
                MbarrierInst::Arrive(b) => format!("mbarrier.arrive({})", self.bar(b)),
                MbarrierInst::ArriveExpectTx { bar, bytes } => {
                    format!(
                        "mbarrier.arrive_and_expect_tx({}, {})",
                        self.bar(bar),
                        self.e(bytes)
                    )
                }
                MbarrierInst::Wait { bar, phase } => {
                    format!("mbarrier.wait({}, phase={})", self.bar(bar), self.e(phase))
                }
            },
            Inst::Tma(TmaInst::GlobalToShared {
                src,
                dst,
                offsets,
                bar,
            }) => format!(
                "tma.global_to_shared({} -> {}, offsets=[{}], {})",
                p.global(*src).name,
                p.shared(*dst).name,
                self.list(offsets),
                self.bar(bar)
            ),
            Inst::Mma(MmaInst::Dot { a, b, c, out, plan }) => {
                let mut t = format!(
                    "{} = dot({}, {}, {})",
                    p.register(*out).name,
                    self.view(a),
                    self.view(b),
                    self.view(c)
                );
                if let Some(pl) = plan {
                    let _ = write!(
                        t,
                        " mma=m16n8k16 warps={}x{} repeat={}x{}x{}",
                        pl.warps_m, pl.warps_n, pl.rep_m, pl.rep_n, pl.rep_k
                    );
                }
                t
            }
            Inst::Arith(ArithInst::Cast { src, out }) => {
                let d = p.register(*out);
                format!("{} = cast<{}>({})", d.name, d.dtype, self.view(src))
            }
            Inst::Wgmma(w) => match w {
                super::WgmmaInst::Fence => "wgmma.fence()".into(),
                super::WgmmaInst::Commit => "wgmma.commit_group()".into(),
                super::WgmmaInst::Wait(n) => format!("wgmma.wait_group({n})"),
                super::WgmmaInst::Mma { a, b, d, plan } => {
                    let a = match a {
                        super::WgmmaA::Shared(v) => self.sview(v),
                        super::WgmmaA::Register(v) => self.view(v),
                    };
                    let dn = &p.register(*d).name;
                    let mut t = format!("{dn} = wgmma.mma({a}, {}, {dn})", self.sview(b));
                    if let Some(pl) = plan {
                        let _ = write!(
                            t,
                            " wgmma=m64n{}k16 repeat={}x{}x{}",
                            pl.n, pl.rep_m, pl.n_chunks, pl.k_steps
                        );
                    }
                    t
                }
            },
        }
    }
}
