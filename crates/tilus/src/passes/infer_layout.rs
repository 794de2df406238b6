//! Layout inference: from the tensor-core instructions outward.
//!
//! Tensor-core instructions fix the layouts of their operands and accumulators (through
//! transposed views); elementwise instructions pass layouts through in both directions (each
//! family's rules in `passes/rules/`); a tile nobody constrains that an instruction reads from
//! or writes to global memory gets the layout that instruction prefers (16-byte vectors along
//! the innermost dimension: [`vectorized_layout`]), one at a time and propagated again; the
//! rest get a default layout that spreads the innermost dimension over consecutive threads.
//! Shared tiles the async proxy touches get the widest swizzle their rows fill; a tile some
//! instruction sees one stage at a time (`at`) is laid out stage by stage, each stage starting
//! at its swizzle's alignment. A user-pinned layout is kept, and a conflict is a diagnostic
//! naming both instructions.

use super::context::LayoutCx;
use super::rules::Rules;
use crate::ir::facts::Memory;
use crate::ir::{b_mn_major, Inst, Loc, Program, RegId, Stmt, StmtKind, WgmmaA, WgmmaInst};
use crate::layout::{RegisterLayout, SharedLayout};
use crate::{Error, Result};

/// Calls `f` on every instruction, mutably, in program order.
pub(crate) fn for_each_inst_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Inst, Loc)) {
    for s in stmts {
        let loc = s.loc;
        match &mut s.kind {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ThreadGroup { body, .. } => for_each_inst_mut(body, f),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                for_each_inst_mut(then_body, f);
                for_each_inst_mut(else_body, f);
            }
            StmtKind::Inst(i) => f(i, loc),
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Sync { .. } => {}
        }
    }
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

/// A layout for tiles read from or written to global memory: each thread holds `v`
/// consecutive elements along the innermost dimension (`v` the most that fit 16 bytes and
/// divide the innermost extent without leaving threads idle), and the vectors are spread over
/// the threads as [`default_layout`] spreads elements, so that consecutive threads touch
/// consecutive vectors. With `v = 1` it is the default layout.
pub fn vectorized_layout(shape: &[i64], threads: i64, elem_bytes: u32) -> RegisterLayout {
    vectorized_layout_bits(shape, threads, elem_bytes * 8)
}

fn prev_power_of_two(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        1 << (31 - x.leading_zeros())
    }
}

/// [`vectorized_layout`] for elements of `elem_bits` bits (a vector of 16 bytes holds
/// `128 / elem_bits` of them: 32 4-bit elements).
pub fn vectorized_layout_bits(shape: &[i64], threads: i64, elem_bits: u32) -> RegisterLayout {
    let rank = shape.len();
    let total = shape.iter().fold(1i64, |a, &d| a.saturating_mul(d));
    // the widest power of two that fits 16 bytes (16 six-bit elements, 12 bytes)
    let mut v = prev_power_of_two(128 / elem_bits.max(1)) as i64;
    while v > 1 && (rank == 0 || shape[rank - 1] % v != 0 || total / v < threads) {
        v /= 2;
    }
    if v <= 1 {
        return default_layout(shape, threads);
    }
    let mut outer = shape.to_vec();
    outer[rank - 1] /= v;
    let mut vector = vec![1i64; rank];
    vector[rank - 1] = v;
    default_layout(&outer, threads).compose(&RegisterLayout::local(&vector))
}

/// A masked layout ([`RegisterLayout::masked_to`]) for a tile whose innermost extent does not
/// divide among `threads` in vectors of up to 16 bytes of `elem_bytes` elements: the
/// extent padded to a whole number of vectors for every thread along it (1000 f16 columns
/// over 128 threads: 1024, one 8-element vector each), the vectors spread over the threads
/// as [`vectorized_layout`] spreads them. `None` where the extent divides already.
pub fn masked_layout(shape: &[i64], threads: i64, elem_bytes: u32) -> Option<RegisterLayout> {
    masked_layout_bits(shape, threads, elem_bytes * 8)
}

/// [`masked_layout`] for elements of `elem_bits` bits.
pub fn masked_layout_bits(shape: &[i64], threads: i64, elem_bits: u32) -> Option<RegisterLayout> {
    let rank = shape.len();
    let n = *shape.last()?;
    if n <= 1 || threads <= 1 || shape.iter().any(|&d| d <= 0) {
        return None;
    }
    // the widest power of two that fits 16 bytes (16 six-bit elements, 12 bytes)
    let mut v = prev_power_of_two(128 / elem_bits.max(1)) as i64;
    while v > 1 && n % v != 0 {
        v /= 2;
    }
    let vectors = n / v;
    let step = threads.min((vectors as u64).next_power_of_two() as i64);
    let padded = (vectors + step - 1) / step * step;
    if padded == vectors {
        return None;
    }
    // `v`-element vectors over the padded row: the padding is a whole number of vectors, so
    // no vector holds elements and masked-off registers both
    let mut outer = shape.to_vec();
    outer[rank - 1] = padded;
    let mut vector = vec![1i64; rank];
    vector[rank - 1] = v;
    let whole = default_layout(&outer, threads).compose(&RegisterLayout::local(&vector));
    Some(whole.masked_to(shape))
}

/// The layout a tile nothing constrains gets: [`vectorized_layout`], or where the tile may
/// be masked (`maskable`: only instructions that take masked tiles touch it) its
/// [`masked_layout`] if that needs at most half the registers per thread (a width that
/// does not divide among the threads otherwise leaves most of them idle and the rest
/// holding long rows).
pub fn fitted_layout(
    shape: &[i64],
    threads: i64,
    elem_bytes: u32,
    maskable: bool,
) -> RegisterLayout {
    fitted_layout_bits(shape, threads, elem_bytes * 8, maskable)
}

/// [`fitted_layout`] for elements of `elem_bits` bits.
pub fn fitted_layout_bits(
    shape: &[i64],
    threads: i64,
    elem_bits: u32,
    maskable: bool,
) -> RegisterLayout {
    let plain = vectorized_layout_bits(shape, threads, elem_bits);
    if !maskable {
        return plain;
    }
    match masked_layout_bits(shape, threads, elem_bits) {
        Some(m) if m.local_size().saturating_mul(2) <= plain.local_size() => m,
        _ => plain,
    }
}

/// Whether an instruction takes register tiles in masked layouts: global loads and stores
/// (masked-off registers are filled and not stored), elementwise expressions and casts (they
/// compute on them, and nothing reads the result there), reductions (they count them as the
/// identity), register declarations and layout annotations. Any other use of a tile keeps
/// it unmasked.
pub(crate) fn takes_masked(i: &Inst) -> bool {
    use crate::ir::{ArithInst, MemoryInst, RegistersInst};
    matches!(
        i,
        Inst::Registers(RegistersInst::Layout { .. })
            | Inst::Memory(
                MemoryInst::LoadGlobal { .. }
                    | MemoryInst::StoreGlobal { .. }
                    | MemoryInst::AllocRegister { .. }
            )
            | Inst::Arith(
                ArithInst::Map { .. }
                    | ArithInst::Assign { .. }
                    | ArithInst::Cast { .. }
                    | ArithInst::Reduce { .. }
            )
    )
}

/// Which register tiles may get a masked layout: a tile may when every instruction that
/// touches it takes masked tiles ([`takes_masked`]), and so may every tile it meets in those
/// instructions (a layout passes between them).
fn maskable_tiles(p: &Program) -> Vec<bool> {
    let n = p.registers.len();
    let mut ok = vec![true; n];
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    p.walk(&mut |s| {
        let StmtKind::Inst(i) = &s.kind else {
            return;
        };
        let tiles: Vec<usize> = i
            .facts(p)
            .effects
            .iter()
            .filter_map(|e| match e.memory {
                Memory::Register(t) => Some(t.0 as usize),
                _ => None,
            })
            .collect();
        if !takes_masked(i) {
            for &t in &tiles {
                ok[t] = false;
            }
        }
        for w in tiles.windows(2) {
            let (a, b) = (root(&mut parent, w[0]), root(&mut parent, w[1]));
            parent[a] = b;
        }
    });
    let mut group_ok = vec![true; n];
    for (t, &fine) in ok.iter().enumerate() {
        let r = root(&mut parent, t);
        group_ok[r] &= fine;
    }
    (0..n).map(|t| group_ok[root(&mut parent, t)]).collect()
}

/// Infers every layout the program leaves open.
pub fn run(mut p: Program) -> Result<Program> {
    // Shared tiles the async proxy reads or writes (TMA boxes, wgmma operands read through
    // descriptors) get the swizzle their rows fill; the rest are row-major. Staged tiles (seen
    // one stage at a time somewhere) keep each stage at the alignment the hardware swizzles
    // from, padding stages that would not be.
    let mut asynchronous = vec![false; p.shareds.len()];
    let mut staged = vec![false; p.shareds.len()];
    // MN-major wgmma operands: stored in column blocks of one swizzle span
    let mut mn_major = vec![false; p.shareds.len()];
    p.walk(&mut |s| {
        if let StmtKind::Inst(i) = &s.kind {
            if let Inst::Wgmma(WgmmaInst::Mma { a, b, .. }) = i {
                if let (WgmmaA::Shared(v), true) = (a, a.mn_major()) {
                    mn_major[v.tensor.0 as usize] = true;
                }
                if b_mn_major(b) {
                    mn_major[b.tensor.0 as usize] = true;
                }
            }
            let facts = i.facts(&p);
            for t in facts.async_shared() {
                asynchronous[t.0 as usize] = true;
            }
            for e in &facts.effects {
                if let (Memory::Shared(t), Some(_)) = (e.memory, e.stage) {
                    staged[t.0 as usize] = true;
                }
            }
        }
    });
    for (i, s) in p.shareds.iter_mut().enumerate() {
        if s.layout.is_none() {
            let eb = s.dtype.nbytes();
            let plain = if mn_major[i] {
                SharedLayout::column_blocked(&s.shape, eb)
            } else if asynchronous[i] {
                SharedLayout::swizzled_for_tma(&s.shape, eb)
            } else {
                SharedLayout::row_major(&s.shape, eb)
            };
            s.layout = Some(if staged[i] && s.shape.len() >= 2 && asynchronous[i] {
                SharedLayout {
                    col_block: plain.col_block,
                    ..SharedLayout::staged(&s.shape, eb, plain.swizzle, plain.swizzle.alignment())
                }
            } else {
                plain
            });
        }
    }

    // Register tiles: the tensor-core instructions fix their operands' layouts, elementwise
    // instructions pass layouts on until nothing changes, the rest get a default.
    // before the body is taken out to be walked
    let maskable = maskable_tiles(&p);
    let mut body = std::mem::take(&mut p.body);
    let mut cx = LayoutCx {
        p: &p,
        layouts: p
            .registers
            .iter()
            .map(|r| r.layout.clone().map(|l| (l, r.loc, "its declaration")))
            .collect(),
        diags: vec![],
        changed: false,
        preferred: false,
        prefer_target: None,
        operand_wishes: vec![],
        maskable,
    };
    for_each_inst_mut(&mut body, &mut |inst, loc| {
        inst.anchor_layouts(&mut cx, loc)
    });
    // tensor-core operands once every result is fixed: one laid out otherwise is converted
    cx.settle_operands();
    // Until every tile has a layout: propagate to a fixpoint, then settle the first open tile
    // (its preference, else its default), and propagate that too, so that the tiles computed
    // from it agree with it.
    loop {
        loop {
            cx.changed = false;
            for_each_inst_mut(&mut body, &mut |inst, loc| {
                inst.propagate_layouts(&mut cx, loc)
            });
            if !cx.changed {
                break;
            }
        }
        if !cx.diags.is_empty() {
            break;
        }
        // the first tile left open, in declaration order (so that sources settle before the
        // tiles computed from them): a wish for it (a vectorized global access), else its
        // default; then propagate that
        let Some(i) = cx.layouts.iter().position(Option::is_none) else {
            break;
        };
        cx.preferred = false;
        cx.prefer_target = Some(RegId(i as u32));
        for_each_inst_mut(&mut body, &mut |inst, loc| {
            inst.prefer_layouts(&mut cx, loc)
        });
        if cx.preferred {
            continue;
        }
        let r = &cx.p.registers[i];
        let threads = r.group_threads.max(1) as i64;
        let l = if r.shape.iter().all(|&d| d > 0) {
            // one element per vector: the default layout, or its masked form
            fitted_layout(&r.shape, threads, 16, cx.maskable[i])
        } else {
            default_layout(&r.shape, threads)
        };
        cx.layouts[i] = Some((l, r.loc, "its default"));
    }
    let LayoutCx { layouts, diags, .. } = cx;
    if !diags.is_empty() {
        return Err(Error::Script(diags));
    }
    p.body = body;
    for (r, l) in p.registers.iter_mut().zip(layouts) {
        r.layout = l.map(|(l, _, _)| l);
    }
    // operands the layouts leave apart (of elementwise expressions, casts, tensor-core
    // instructions) meet through conversions
    super::convert_operands::insert(&mut p);
    // the shared tiles instructions use internally, now that layouts say what they need
    let mut sizes = vec![];
    p.walk(&mut |s| {
        if let StmtKind::Inst(i) = &s.kind {
            sizes.extend(i.internal_shared(&p));
        }
    });
    for (id, shape) in sizes {
        let s = &mut p.shareds[id.0 as usize];
        s.layout = Some(SharedLayout::row_major(&shape, s.dtype.nbytes()));
        s.shape = shape;
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
