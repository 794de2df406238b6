//! Rules that need layouts and the shared-memory plan: the shared-memory limit and the
//! registers the tiles need, for every program; each family's own (the swizzle span of TMA
//! boxes, wgmma operand layouts) through its rules.

use super::finish;
use crate::ir::{Loc, Program, Stmt, StmtKind};
use crate::passes::context::Checker;
use crate::passes::rules::Rules;
use crate::passes::{MAX_REGISTERS, MAX_SHARED_BYTES};
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
    check_registers(&mut c);
    if c.diags.len() == before {
        p.walk(&mut |s| {
            if let StmtKind::Inst(i) = &s.kind {
                i.check_planned(&mut c, s.loc);
            }
        });
    }
    check_divergent_block_scope(&mut c);
    finish(c.diags)
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

/// A lower bound of the registers a thread needs: the largest sum, over program points, of the
/// register tiles alive there (a tile lives from its definition to its last use, where the
/// instruction's results may take its registers; a use inside a loop keeps it alive for the
/// whole loop; the branches of an `if` are laid out one after the other).
fn check_registers(c: &mut Checker) {
    let p = c.p;
    let n = p.registers.len();
    let (mut first, mut last) = (vec![usize::MAX; n], vec![0usize; n]);
    let mut pos = 0usize;
    fn visit(
        p: &Program,
        stmts: &[Stmt],
        pos: &mut usize,
        first: &mut [usize],
        last: &mut [usize],
    ) {
        for s in stmts {
            *pos += 1;
            match &s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    let start = *pos;
                    visit(p, body, pos, first, last);
                    let end = *pos;
                    // tiles used in the loop but defined before it live across all of it
                    for t in 0..first.len() {
                        if first[t] < start && last[t] > start && last[t] <= end {
                            last[t] = end;
                        }
                    }
                }
                // Only one branch runs: laid out one after the other, a tile lives across
                // both only when it is used in both (or after the `if`), as on either path.
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    visit(p, then_body, pos, first, last);
                    visit(p, else_body, pos, first, last);
                }
                StmtKind::ThreadGroup { body, .. } => visit(p, body, pos, first, last),
                StmtKind::Inst(i) => {
                    for t in i.facts(p).registers() {
                        let t = t.0 as usize;
                        first[t] = first[t].min(*pos);
                        last[t] = last[t].max(*pos);
                    }
                }
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
            }
        }
    }
    visit(p, &p.body, &mut pos, &mut first, &mut last);
    let regs: Vec<u32> = p
        .registers
        .iter()
        .map(|r| {
            r.layout.as_ref().map_or(0, |l| {
                let bits = (l.local_size() as u64).saturating_mul(r.dtype.bits() as u64);
                u32::try_from(bits.div_ceil(32)).unwrap_or(u32::MAX)
            })
        })
        .collect();
    // Around statement `at`: the tiles it reads (alive into it) and the tiles it leaves
    // alive (defined there or earlier and read later, or defined there and never read). A
    // tile read for the last time and one defined by the same instruction need not be
    // alive together: the compiler writes the new one over the old one (a cast, a sum, a
    // reshape), so the bound takes the larger side, not both.
    let alive_into = |t: usize, at: usize| first[t] < at && at <= last[t];
    let alive_out = |t: usize, at: usize| first[t] <= at && (at < last[t] || first[t] == last[t]);
    let mut worst = (0u32, 0usize, true);
    for at in 0..=pos {
        for into in [true, false] {
            let sum: u32 = (0..n)
                .filter(|&t| {
                    if into {
                        alive_into(t, at)
                    } else {
                        alive_out(t, at)
                    }
                })
                .fold(0u32, |a, t| a.saturating_add(regs[t]));
            // the last of equal points: the newest of equal tiles is blamed
            if sum >= worst.0 {
                worst = (sum, at, into);
            }
        }
    }
    if worst.0 > MAX_REGISTERS {
        let (at, into) = (worst.1, worst.2);
        let live: Vec<usize> = (0..n)
            .filter(|&t| {
                if into {
                    alive_into(t, at)
                } else {
                    alive_out(t, at)
                }
            })
            .collect();
        // Blame the largest tile: it is the one worth shrinking.
        let loc = live
            .iter()
            .max_by_key(|&&t| regs[t])
            .map(|&t| p.registers[t].loc)
            .unwrap_or(first_loc(p));
        let parts: Vec<String> = live
            .iter()
            .map(|&t| format!("`{}` {}", p.registers[t].name, regs[t]))
            .collect();
        c.err(
            loc,
            format!(
                "the register tiles alive together need {} registers per thread ({}), more than the {} a thread \
                 can have; use a smaller tile or more warps",
                worst.0,
                parts.join(" + "),
                MAX_REGISTERS
            ),
        );
    }
}
