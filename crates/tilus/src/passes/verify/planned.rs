//! Rules that need layouts and the shared-memory plan: the shared-memory limit and the
//! registers the tiles need, for every program; each family's own (the swizzle span of TMA
//! boxes, wgmma operand layouts) through its rules; races between warps on shared tiles
//! (`races.rs`), which need the layouts to know which thread touches which bytes.

use super::finish;
use crate::ir::{Loc, Program, Stmt, StmtKind};
use crate::passes::context::Checker;
use crate::passes::rules::Rules;
use crate::passes::MAX_SHARED_BYTES;
use crate::Result;

/// Checks a laid-out, planned program.
pub fn check_planned(p: &Program) -> Result<()> {
    let mut c = Checker::new(p);
    if p.smem_bytes > MAX_SHARED_BYTES {
        let loc = p
            .shareds
            .iter()
            .max_by_key(|s| s.footprint())
            .map(|s| s.loc)
            .unwrap_or(first_loc(p));
        let tiles: Vec<String> = p
            .shareds
            .iter()
            .map(|s| format!("`{}` {} B", s.name, s.footprint()))
            .collect();
        c.err(
            loc,
            format!(
                "the kernel needs {} bytes of shared memory, more than the {} a block can have ({})",
                p.smem_bytes,
                MAX_SHARED_BYTES,
                tiles.join(", ")
            ),
        );
    }
    // Registers first: the instructions' own rules build tables over each thread's elements,
    // which for tiles far beyond any register file would exhaust the host's memory.
    let before = c.diags.len();
    super::live_registers::check(&mut c);
    if c.diags.len() == before {
        p.walk(&mut |s| {
            if let StmtKind::Inst(i) = &s.kind {
                i.check_planned(&mut c, s.loc);
                check_masked_uses(&mut c, i, s.loc);
            }
        });
    }
    check_divergent_block_scope(&mut c);
    if c.diags.is_empty() {
        super::races::check(&mut c);
    }
    finish(c.diags)
}

/// Masked layouts (a width that does not divide among the threads) only reach the
/// instructions that take them (`infer_layout::takes_masked`); an annotated masked layout
/// given to another is refused here, before anything reads a masked-off register.
fn check_masked_uses(c: &mut Checker, i: &crate::ir::Inst, loc: Loc) {
    use crate::ir::facts::Memory;
    if crate::passes::infer_layout::takes_masked(i) {
        return;
    }
    let p = c.p;
    for e in i.facts(p).effects {
        let Memory::Register(t) = e.memory else {
            continue;
        };
        let d = p.register(t);
        if let Some(l) = d.layout.as_ref().filter(|l| l.is_masked()) {
            let msg = format!(
                "{}: `{}` has a masked layout ({l}: its width does not divide among the \
                 threads), which only global loads and stores, expressions, casts and \
                 reductions take; give it a width that divides (pad it to the threads times \
                 the vector)",
                i.name(),
                d.name
            );
            c.err(loc, msg);
        }
    }
}

/// Instructions whose scope the plan makes block-wide (a reduction whose warps meet in shared
/// memory) must not run under a condition that may differ between threads: the same rule
/// `placement` applies before planning to those that are block-wide from the start.
fn check_divergent_block_scope(c: &mut Checker) {
    use crate::ir::facts::ThreadScope;
    type Divergent = Option<(Loc, &'static str, crate::ir::VarId)>;
    fn visit(c: &mut Checker, stmts: &[Stmt], divergent: Divergent, uniform: &[bool]) {
        for s in stmts {
            let under = |cond: &crate::ir::Expr, what: &'static str| {
                super::control::nonuniform_var(cond, uniform)
                    .map(|v| (s.loc, what, v))
                    .or(divergent)
            };
            match &s.kind {
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let d = under(cond, "if");
                    visit(c, then_body, d, uniform);
                    visit(c, else_body, d, uniform);
                }
                StmtKind::While { cond, body } => {
                    let d = under(cond, "while");
                    visit(c, body, d, uniform);
                }
                StmtKind::For { body, .. } | StmtKind::ThreadGroup { body, .. } => {
                    visit(c, body, divergent, uniform)
                }
                StmtKind::Inst(i) => {
                    if let Some(d) = divergent {
                        if i.facts(c.p).scope == ThreadScope::Block {
                            let msg = super::placement::divergent_block_message(c.p, i.name(), d);
                            c.err(s.loc, msg);
                        }
                    }
                }
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
            }
        }
    }
    let uniform = super::control::uniform_vars(c.p);
    let p = c.p;
    visit(c, &p.body, None, &uniform);
}

fn first_loc(p: &Program) -> Loc {
    p.body.first().map(|s| s.loc).unwrap_or(Loc {
        file: "<script>",
        line: 0,
        col: 0,
    })
}
