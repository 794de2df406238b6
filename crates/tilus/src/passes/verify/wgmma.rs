//! Rules for warp-group MMA: where it may run, its operands, and the asynchronous accumulator
//! (no other instruction may touch it until a `wait_group` covers the wgmma that writes it).

use super::memory::{check_group, view_shape};
use super::{Checker, Scope};
use crate::ir::{DType, Inst, Loc, RegId, RegView, SharedView, Stmt, StmtKind, WgmmaA, WgmmaInst};
use std::collections::HashMap;

fn shared_shape(c: &Checker, v: &SharedView) -> Vec<i64> {
    let s = &c.p.shared(v.tensor).shape;
    if v.transposed && s.len() == 2 {
        vec![s[1], s[0]]
    } else {
        s.clone()
    }
}

pub(super) fn check(c: &mut Checker, i: &WgmmaInst, loc: Loc, scope: &Scope) {
    if scope.threads != 128 || !scope.base.is_multiple_of(128) {
        let msg = format!(
            "{} runs on a warp group: 4 consecutive warps starting at a warp index divisible by 4 \
             (a block of 4 warps, or inside warp_group(..)); here the group has {} threads starting at thread {}",
            i.name(),
            scope.threads,
            scope.base
        );
        c.err(loc, msg);
    }
    let WgmmaInst::Mma { a, b, d, .. } = i else {
        return;
    };
    let p = c.p;
    let dv = RegView::plain(*d);
    check_group(c, &dv, "wgmma.mma accumulator", loc, scope);
    let (sa, ta) = match a {
        WgmmaA::Shared(v) => {
            c.use_shared(v.tensor, "wgmma.mma", loc);
            if v.transposed {
                c.err(
                    loc,
                    "wgmma.mma: operand a must be a K-major [M, K] tile (not a transposed view)",
                );
            }
            (shared_shape(c, v), p.shared(v.tensor).dtype)
        }
        WgmmaA::Register(v) => {
            check_group(c, v, "wgmma.mma operand a", loc, scope);
            (view_shape(p, v), p.register(v.tensor).dtype)
        }
    };
    c.use_shared(b.tensor, "wgmma.mma", loc);
    if !b.transposed {
        let name = p.shared(b.tensor).name.clone();
        c.err(
            loc,
            format!("wgmma.mma: operand b must be K-major: store B as an [N, K] tile and pass `{name}.transpose()`"),
        );
    }
    let sb = shared_shape(c, b);
    let sd = view_shape(p, &dv);
    let tb = p.shared(b.tensor).dtype;
    let td = p.register(*d).dtype;
    if sa.len() != 2 || sb.len() != 2 || sd.len() != 2 {
        c.err(loc, "wgmma.mma takes 2-D tiles");
        return;
    }
    if sa[1] != sb[0] || sa[0] != sd[0] || sb[1] != sd[1] {
        c.err(loc, format!("wgmma.mma: shapes do not agree: a {sa:?} @ b {sb:?} + d {sd:?} (need [M, K] @ [K, N] + [M, N])"));
    }
    if ta != tb || !matches!(ta, DType::F16 | DType::BF16) {
        c.err(
            loc,
            format!("wgmma.mma: operands must both be f16 or both bf16, got {ta} and {tb}"),
        );
    }
    // f32 accumulation always; f16 accumulation as an explicit choice (an f16 accumulator), for
    // f16 inputs only.
    if !(td == DType::F32 || (td == DType::F16 && ta == DType::F16)) {
        c.err(
            loc,
            format!("wgmma.mma: the accumulator must be f32 (or f16 with f16 inputs), got {td} with {ta} inputs"),
        );
    }
}

/// Accumulators written by wgmmas that no wait has covered yet.
#[derive(Clone, Default)]
struct InFlight {
    /// Issued, not yet committed: accumulator → the wgmma's location.
    uncommitted: HashMap<RegId, Loc>,
    /// Committed groups, oldest first.
    groups: Vec<HashMap<RegId, Loc>>,
}

impl InFlight {
    fn pending(&self, r: RegId) -> Option<Loc> {
        self.uncommitted
            .get(&r)
            .copied()
            .or_else(|| self.groups.iter().rev().find_map(|g| g.get(&r).copied()))
    }
}

fn walk(c: &mut Checker, stmts: &[Stmt], st: &mut InFlight) {
    for s in stmts {
        match &s.kind {
            StmtKind::For { body, .. } => {
                // Twice: what the end of one iteration leaves in flight meets the next one's start.
                walk(c, body, st);
                walk(c, body, st);
            }
            StmtKind::ThreadGroup { body, .. } => walk(c, body, st),
            StmtKind::Inst(Inst::Wgmma(WgmmaInst::Mma { a, d, .. })) => {
                if let WgmmaA::Register(v) = a {
                    if let Some(at) = st.pending(v.tensor) {
                        report(c, s.loc, v.tensor, at);
                    }
                }
                st.uncommitted.insert(*d, s.loc);
            }
            StmtKind::Inst(Inst::Wgmma(WgmmaInst::Commit)) => {
                let g = std::mem::take(&mut st.uncommitted);
                if !g.is_empty() {
                    st.groups.push(g);
                }
            }
            StmtKind::Inst(Inst::Wgmma(WgmmaInst::Wait(n))) => {
                let keep = (*n as usize).min(st.groups.len());
                st.groups.drain(..st.groups.len() - keep);
            }
            StmtKind::Inst(i) => {
                for r in crate::passes::infer_layout::registers_of(i) {
                    if let Some(at) = st.pending(r) {
                        report(c, s.loc, r, at);
                    }
                }
            }
            _ => {}
        }
    }
}

fn report(c: &mut Checker, loc: Loc, r: RegId, at: Loc) {
    let name = &c.p.register(r).name;
    let d = crate::Diagnostic {
        loc,
        message: format!(
            "`{name}` is used while the wgmma at {at} may still be writing it; \
             commit the group and wgmma.wait_group(..) until it is covered first"
        ),
    };
    if !c.diags.contains(&d) {
        c.diags.push(d);
    }
}

/// The asynchronous-accumulator rule over the whole program.
pub(super) fn check_async(c: &mut Checker) {
    let mut st = InFlight::default();
    let body = &c.p.body;
    walk(c, body, &mut st);
}
