//! Layout inference: from the tensor-core instructions outward.
//!
//! `dot` fixes the layouts of its operands and accumulator (through transposed views);
//! elementwise instructions pass layouts through in both directions; tiles nobody constrains
//! get a default layout that spreads the innermost dimension over consecutive threads. Shared
//! tiles that TMA writes get the widest swizzle their rows fill. A user-pinned layout is kept,
//! and a conflict is a diagnostic naming both instructions.

use crate::ir::{
    ArithInst, Inst, Loc, MemoryInst, MmaInst, Program, RegId, RegView, Stmt, StmtKind, TmaInst,
};
use crate::layout::{MmaPlan, RegisterLayout, SharedLayout};
use crate::{Diagnostic, Error, Result};

/// The register tiles an instruction reads or writes.
pub fn registers_of(i: &Inst) -> Vec<RegId> {
    match i {
        Inst::Memory(MemoryInst::AllocRegister { out, .. }) => vec![*out],
        Inst::Memory(MemoryInst::LoadShared { out, .. }) => vec![*out],
        Inst::Memory(MemoryInst::StoreGlobal { src, .. }) => vec![src.tensor],
        Inst::Memory(MemoryInst::StoreShared { src, .. }) => vec![src.tensor],
        Inst::Mma(MmaInst::Dot { a, b, c, out, .. }) => vec![a.tensor, b.tensor, c.tensor, *out],
        Inst::Arith(ArithInst::Cast { src, out }) => vec![src.tensor, *out],
        Inst::Wgmma(crate::ir::WgmmaInst::Mma { a, d, .. }) => match a {
            crate::ir::WgmmaA::Register(v) => vec![v.tensor, *d],
            crate::ir::WgmmaA::Shared(_) => vec![*d],
        },
        _ => vec![],
    }
}

/// Calls `f` on every instruction, mutably, in program order.
pub(crate) fn for_each_inst_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Inst, Loc)) {
    for s in stmts {
        let loc = s.loc;
        match &mut s.kind {
            StmtKind::For { body, .. } | StmtKind::ThreadGroup { body, .. } => {
                for_each_inst_mut(body, f)
            }
            StmtKind::Inst(i) => f(i, loc),
            _ => {}
        }
    }
}

/// The layout of a view, given the layout of its tensor (and back: transposes are involutions).
fn through_view(l: &RegisterLayout, v: &RegView) -> RegisterLayout {
    l.permute(&v.perm(l.rank()))
}

/// A default layout: threads along the innermost dimensions first, so that consecutive
/// threads touch consecutive elements; threads beyond the element count replicate.
pub fn default_layout(shape: &[i64], threads: i64) -> RegisterLayout {
    let rank = shape.len();
    let mut spatial = vec![1i64; rank];
    let mut left = threads;
    for d in (0..rank).rev() {
        let mut take = 1;
        for cand in (1..=left).rev() {
            if left % cand == 0 && shape[d] % cand == 0 {
                take = cand;
                break;
            }
        }
        spatial[d] = take;
        left /= take;
    }
    let local: Vec<i64> = shape.iter().zip(&spatial).map(|(s, t)| s / t).collect();
    let base = RegisterLayout::local(&local).compose(&RegisterLayout::spatial(&spatial));
    if left > 1 {
        RegisterLayout::replicate(rank, left).compose(&base)
    } else {
        base
    }
}

struct Infer<'a> {
    layouts: Vec<Option<(RegisterLayout, Loc, &'static str)>>,
    diags: Vec<Diagnostic>,
    names: &'a [String],
    /// Bits of each register tile's element type.
    bits: Vec<u32>,
    changed: bool,
}

impl Infer<'_> {
    fn require(&mut self, t: RegId, l: RegisterLayout, loc: Loc, why: &'static str) {
        let slot = &mut self.layouts[t.0 as usize];
        match slot {
            None => {
                *slot = Some((l, loc, why));
                self.changed = true;
            }
            Some((have, at, what)) => {
                // A layout that needs more registers than a thread has fails the register
                // check after inference whatever else is asked of it; comparing it element by
                // element would take as long as the tile is large.
                let bits = (have.local_size().max(0) as u64)
                    .saturating_mul(u64::from(self.bits[t.0 as usize]));
                if bits > u64::from(crate::passes::MAX_REGISTERS) * 32 {
                    return;
                }
                if !have.same_mapping(&l) {
                    let msg = format!(
                        "register tensor `{}` needs layout {l} for {why} here, but {what} at {at} gave it {have}; \
                         use two tensors (layout conversion is not supported yet)",
                        self.names[t.0 as usize]
                    );
                    let d = Diagnostic { loc, message: msg };
                    if !self.diags.contains(&d) {
                        self.diags.push(d);
                    }
                }
            }
        }
    }

    fn get(&self, t: RegId) -> Option<RegisterLayout> {
        self.layouts[t.0 as usize]
            .as_ref()
            .map(|(l, _, _)| l.clone())
    }
}

/// Infers every layout the program leaves open.
pub fn run(mut p: Program) -> Result<Program> {
    // Shared tiles: TMA destinations get the swizzle their rows fill; the rest are row-major.
    let mut tma_dst = vec![false; p.shareds.len()];
    // (wgmma operands are read through descriptors, which need the same K-major swizzled rows)
    p.walk(&mut |s| match &s.kind {
        StmtKind::Inst(Inst::Tma(TmaInst::GlobalToShared { dst, .. })) => {
            tma_dst[dst.0 as usize] = true
        }
        StmtKind::Inst(Inst::Wgmma(crate::ir::WgmmaInst::Mma { a, b, .. })) => {
            if let crate::ir::WgmmaA::Shared(v) = a {
                tma_dst[v.tensor.0 as usize] = true;
            }
            tma_dst[b.tensor.0 as usize] = true;
        }
        _ => {}
    });
    for (i, s) in p.shareds.iter_mut().enumerate() {
        if s.layout.is_none() {
            let eb = s.dtype.nbytes();
            s.layout = Some(if tma_dst[i] {
                SharedLayout::swizzled_for_tma(&s.shape, eb)
            } else {
                SharedLayout::row_major(&s.shape, eb)
            });
        }
    }

    let names: Vec<String> = p.registers.iter().map(|r| r.name.clone()).collect();
    let mut inf = Infer {
        layouts: vec![None; p.registers.len()],
        diags: vec![],
        names: &names,
        bits: p.registers.iter().map(|r| r.dtype.bits()).collect(),
        changed: false,
    };
    for (i, r) in p.registers.iter().enumerate() {
        if let Some(l) = &r.layout {
            inf.layouts[i] = Some((l.clone(), r.loc, "its declaration"));
        }
    }

    // Anchors: dot and wgmma.
    let registers = p.registers.clone();
    let shareds = p.shareds.clone();
    let mut plan_diags = vec![];
    for_each_inst_mut(&mut p.body, &mut |inst, loc| {
        if let Inst::Wgmma(crate::ir::WgmmaInst::Mma { a, b, d, plan }) = inst {
            let dshape = &registers[d.0 as usize].shape;
            let bshape = &shareds[b.tensor.0 as usize].shape;
            if dshape.len() != 2 || bshape.len() != 2 {
                return;
            }
            // b is an [N, K] tile seen as [K, N]
            let k = if b.transposed { bshape[1] } else { bshape[0] };
            match crate::layout::WgmmaPlan::choose(dshape[0], dshape[1], k) {
                Ok(pl) => {
                    *plan = Some(pl);
                    inf.require(*d, pl.d_layout(), loc, "wgmma accumulator");
                    if let crate::ir::WgmmaA::Register(v) = a {
                        inf.require(
                            v.tensor,
                            through_view(&pl.a_layout(), v),
                            loc,
                            "wgmma operand a",
                        );
                    }
                }
                Err(why) => plan_diags.push(Diagnostic {
                    loc,
                    message: format!("wgmma.mma: {why}"),
                }),
            }
            return;
        }
        if let Inst::Mma(MmaInst::Dot { a, b, c, out, plan }) = inst {
            let shape = |v: &RegView| {
                let s = &registers[v.tensor.0 as usize].shape;
                v.perm(s.len()).iter().map(|&d| s[d]).collect::<Vec<_>>()
            };
            let (sa, sc) = (shape(a), shape(c));
            if sa.len() != 2 || sc.len() != 2 {
                return;
            }
            let warps = registers[out.0 as usize].group_threads as i64 / 32;
            let Some(pl) = MmaPlan::choose(sa[0], sc[1], sa[1], warps) else {
                plan_diags.push(Diagnostic {
                    loc,
                    message: format!(
                        "dot: [{}, {}] x [{}, {}] cannot be cut into m16n8k16 tiles over {warps} warps \
                         (M must split into multiples of 16 per warp, N into multiples of 8, K into multiples of 16)",
                        sa[0], sa[1], sa[1], sc[1]
                    ),
                });
                return;
            };
            *plan = Some(pl);
            inf.require(
                a.tensor,
                through_view(&pl.a_layout(), a),
                loc,
                "dot operand a",
            );
            inf.require(
                b.tensor,
                through_view(&pl.b_layout(), b),
                loc,
                "dot operand b",
            );
            inf.require(
                c.tensor,
                through_view(&pl.c_layout(), c),
                loc,
                "dot accumulator c",
            );
            inf.require(*out, pl.c_layout(), loc, "dot output");
        }
    });
    inf.diags.extend(plan_diags);

    // Propagate through elementwise instructions until nothing changes.
    let mut casts = vec![];
    p.walk(&mut |s| {
        if let StmtKind::Inst(Inst::Arith(ArithInst::Cast { src, out })) = &s.kind {
            casts.push((*src, *out, s.loc));
        }
    });
    loop {
        inf.changed = false;
        for (src, out, loc) in &casts {
            if let Some(l) = inf.get(src.tensor) {
                inf.require(*out, through_view(&l, src), *loc, "cast");
            } else if let Some(l) = inf.get(*out) {
                inf.require(src.tensor, through_view(&l, src), *loc, "cast");
            }
        }
        if !inf.changed {
            break;
        }
    }

    if !inf.diags.is_empty() {
        return Err(Error::Script(inf.diags));
    }
    for (i, r) in p.registers.iter_mut().enumerate() {
        r.layout = Some(match inf.layouts[i].take() {
            Some((l, _, _)) => l,
            None => default_layout(&r.shape, r.group_threads.max(1) as i64),
        });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::default_layout;

    #[test]
    fn default_layouts_are_valid_and_coalesced() {
        for (shape, threads) in [
            (vec![64, 128], 128),
            (vec![32], 128),
            (vec![16, 8], 32),
            (vec![1000], 32),
        ] {
            let l = default_layout(&shape, threads);
            assert_eq!(l.num_threads(), threads, "{l}");
            assert_eq!(l.shape(), &shape[..]);
            // consecutive threads hold consecutive innermost elements
            let c0 = l.coords(0, 0);
            let c1 = l.coords(1, 0);
            if shape.iter().product::<i64>() >= threads {
                assert_eq!(c1[shape.len() - 1] - c0[shape.len() - 1], 1, "{l}");
            }
        }
    }
}
