//! Emitters for warp-group MMA: descriptors built once per tile, one `wgmma.mma_async` per
//! 64-row block, N chunk and 16-deep K step, and operand fences that keep the compiler from
//! moving accumulator accesses across the asynchronous work.

use super::memory::{view_base, view_layout, CExpr};
use super::{Emitter, Helper};
use crate::ir::facts::{AsyncGroup, Completion, Memory};
use crate::ir::{b_mn_major, DType, Inst, RegId, SharedView, Stmt, StmtKind, WgmmaA, WgmmaInst};
use crate::layout::wgmma::{DESC_ADDR_MASK, DESC_ADDR_SHIFT};

/// The register tiles asynchronous wgmma work writes (the accumulators), from the facts, and
/// the tiles that sum them: a tile an instruction both reads and writes while it reads an
/// accumulator (`acc = acc + partial`, a promoted product added on the CUDA cores). Fencing
/// those too keeps the compiler from sinking such a sum below the next wgmma into the
/// partial it reads: ptxas then serializes every wgmma of the kernel (C7514), the sum
/// reading registers that a product in flight writes.
fn accumulators(e: &Emitter) -> Vec<RegId> {
    let mut out = vec![];
    e.p.walk(&mut |s| {
        if let StmtKind::Inst(i) = &s.kind {
            for eff in i.facts(e.p).effects {
                let async_write =
                    eff.access.writes() && eff.completes == Completion::Group(AsyncGroup::Wgmma);
                if let (Memory::Register(r), true) = (eff.memory, async_write) {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
            }
        }
    });
    let mut sums = vec![];
    e.p.walk(&mut |s| {
        if let StmtKind::Inst(i) = &s.kind {
            let (mut read, mut written) = (vec![], vec![]);
            for eff in i.facts(e.p).effects {
                if let Memory::Register(r) = eff.memory {
                    if eff.access.reads() {
                        read.push(r);
                    }
                    if eff.access.writes() {
                        written.push(r);
                    }
                }
            }
            if !read.iter().any(|r| out.contains(r)) {
                return;
            }
            for r in written {
                if read.contains(&r) && !out.contains(&r) && !sums.contains(&r) {
                    sums.push(r);
                }
            }
        }
    });
    out.extend(sums);
    out
}

/// Fences every wgmma accumulator declared in an open scope.
fn fence_accumulators(e: &mut Emitter) {
    let accs = accumulators(e);
    let visible: Vec<RegId> = e
        .declared
        .iter()
        .flatten()
        .copied()
        .filter(|r| accs.contains(r))
        .collect();
    for r in visible {
        e.use_helper(Helper::Wgmma(WgmmaHelper::FenceOperand));
        let n = super::memory::layout(e, r).local_size();
        let name = e.reg_name(r);
        e.line("#pragma unroll");
        e.line(format!(
            "for (int l = 0; l < {n}; ++l) tilus_fence_operand({name}[l]);"
        ));
    }
}

/// Whether `s` is a wgmma fence.
pub(super) fn is_fence(s: &Stmt) -> bool {
    matches!(&s.kind, StmtKind::Inst(Inst::Wgmma(WgmmaInst::Fence)))
}

/// The register A operands of the wgmmas among `stmts` up to the first commit or fence.
pub(super) fn register_operands_after(stmts: &[Stmt]) -> Vec<RegId> {
    let mut out = vec![];
    for s in stmts {
        match &s.kind {
            StmtKind::Inst(Inst::Wgmma(WgmmaInst::Commit | WgmmaInst::Fence)) => break,
            StmtKind::Inst(Inst::Wgmma(WgmmaInst::Mma {
                a: WgmmaA::Register(v),
                ..
            })) if !out.contains(&v.tensor) => out.push(v.tensor),
            _ => {}
        }
    }
    out
}

/// Fences the register A operands of the wgmmas the fence being emitted precedes, so that
/// every instruction defining them stays before it: one the compiler moved between the fence
/// and its wgmma would make ptxas serialize every wgmma of the kernel (C7513), as where a
/// step's operand is converted while the step before's product is in flight.
fn fence_register_operands(e: &mut Emitter) {
    let operands = std::mem::take(&mut e.fence_operands);
    // (an operand the program writes after the fence is not declared yet: nothing to pin)
    let declared = |e: &Emitter, r: &RegId| e.declared.iter().flatten().any(|d| d == r);
    let visible: Vec<RegId> = operands.into_iter().filter(|r| declared(e, r)).collect();
    for r in visible {
        e.use_helper(Helper::Wgmma(WgmmaHelper::FenceOperand));
        // (16-bit operands are held in pairs, a `u32` each)
        let n = super::memory::words(e, r);
        let name = e.reg_name(r);
        e.line("#pragma unroll");
        e.line(format!(
            "for (int l = 0; l < {n}; ++l) tilus_fence_operand({name}[l]);"
        ));
    }
}

/// The descriptor base expression of a shared operand (a tile, or one stage of it, whose
/// first byte is aligned for its swizzle): the layout module encodes every field but the
/// address.
fn descriptor(e: &mut Emitter, v: &SharedView, mn_major: bool) -> String {
    e.use_helper(Helper::Wgmma(WgmmaHelper::Desc));
    let fields = crate::layout::wgmma::descriptor_fields(&view_layout(e, v), mn_major);
    format!("tilus_wgmma_desc({}, 0x{fields:016x}ull)", view_base(e, v))
}

/// The descriptor's start-address increment (16-byte units) of the sub-tile whose first row
/// of M or N is `row` (a C expression) at K step `ki` of `deep` elements: the layout's address
/// of that element before the swizzle, `(row, deep ki)` of a K-major tile as stored,
/// `(deep ki, row)` of an MN-major one.
fn start(e: &Emitter, v: &SharedView, row: String, mn_major: bool, deep: i64) -> String {
    let l = view_layout(e, v);
    let (row, k) = (CExpr(row), CExpr(format!("ki * {deep}")));
    let coords = if mn_major { vec![k, row] } else { vec![row, k] };
    let at = l.unswizzled_address(coords);
    format!("(u64)(({}) >> 4)", at.0)
}

pub(super) fn emit(e: &mut Emitter, i: &WgmmaInst) {
    match i {
        WgmmaInst::Fence => {
            e.use_helper(Helper::Wgmma(WgmmaHelper::Sync));
            fence_accumulators(e);
            fence_register_operands(e);
            e.line("tilus_wgmma_fence();");
        }
        WgmmaInst::Commit => {
            e.use_helper(Helper::Wgmma(WgmmaHelper::Sync));
            e.line("tilus_wgmma_commit_group();");
        }
        WgmmaInst::Wait(n) => {
            e.use_helper(Helper::Wgmma(WgmmaHelper::Sync));
            e.line(format!("tilus_wgmma_wait_group<{n}>();"));
            fence_accumulators(e);
        }
        WgmmaInst::Mma {
            a,
            b,
            d,
            target,
            plan,
        } => {
            let p = plan.expect("wgmma plans are chosen by layout inference");
            let ta = match a {
                WgmmaA::Shared(v) => e.p.shared(v.tensor).dtype,
                WgmmaA::Register(v) => e.p.register(v.tensor).dtype,
            };
            let rs = matches!(a, WgmmaA::Register(_));
            let f16acc = e.p.register(*d).dtype == DType::F16;
            let (mn_a, mn_b) = (a.mn_major(), b_mn_major(b));
            let form = MmaForm {
                n: p.n as u16,
                k: p.k_inst as u8,
                ta: InputType::of(ta),
                tb: InputType::of(e.p.shared(b.tensor).dtype),
                rs,
                f16acc,
                mn_a,
                mn_b,
            };
            e.use_helper(Helper::Wgmma(WgmmaHelper::Mma(form)));
            let f = wgmma_name(form);
            let dn = e.reg_name(*d);
            e.open("");
            let db = descriptor(e, b, mn_b);
            e.line(format!("const u64 tilus_db = {db};"));
            // Address fields advance in 16-byte units: 16 rows of K per K step, a row block of
            // 64 rows of M or an N chunk of `n` apart in the tile.
            let b_off = start(e, b, format!("chunk * {}", p.n), mn_b, p.k_inst);
            let a_arg = match a {
                WgmmaA::Shared(v) => {
                    let da = descriptor(e, v, mn_a);
                    e.line(format!("const u64 tilus_da = {da};"));
                    let a_off = start(e, v, "mi * 64".into(), mn_a, p.k_inst);
                    format!("tilus_da + {a_off}")
                }
                WgmmaA::Register(v) => {
                    let an = e.reg_name(v.tensor);
                    format!("&{an}[(mi * {} + ki) * 4]", p.k_steps)
                }
            };
            e.line("#pragma unroll");
            e.open(format!("for (int ki = 0; ki < {}; ++ki)", p.k_steps));
            e.line("#pragma unroll");
            e.open(format!("for (int mi = 0; mi < {}; ++mi)", p.rep_m));
            e.line("#pragma unroll");
            e.open(format!(
                "for (int chunk = 0; chunk < {}; ++chunk)",
                p.n_chunks
            ));
            // f16 accumulators are packed two elements to a word
            let per = if f16acc { 4 } else { 2 };
            // a window's instructions write their columns of the whole accumulator's rows
            let d_cols = e.p.register(*d).shape[1];
            let start = target.window.unwrap_or(0);
            let d_off = format!(
                "mi * {} + {} + chunk * {}",
                d_cols / per,
                start / per,
                p.n / per
            );
            // the first K step of an overwriting product ignores the old values (scale-d 0)
            let scale = if target.overwrite {
                "ki == 0 ? 0 : 1"
            } else {
                "1"
            };
            e.line(format!(
                "{f}(&{dn}[{d_off}], {a_arg}, tilus_db + {b_off}, {scale});"
            ));
            e.close();
            e.close();
            e.close();
            e.close();
        }
    }
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum WgmmaHelper {
    /// wgmma fence, commit and wait.
    Sync,
    /// The shared-memory matrix descriptor of a wgmma operand.
    Desc,
    /// Keeps the compiler from moving accumulator accesses across asynchronous wgmma work.
    FenceOperand,
    /// One `wgmma.mma_async m64nNk16` (or `k32`) of the given form.
    Mma(MmaForm),
}

/// An input type of wgmma.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum InputType {
    F16,
    Bf16,
    E4m3,
    E5m2,
}

impl InputType {
    fn of(t: DType) -> InputType {
        match t {
            DType::BF16 => InputType::Bf16,
            DType::F8E4M3 => InputType::E4m3,
            DType::F8E5M2 => InputType::E5m2,
            _ => InputType::F16,
        }
    }

    /// The PTX type's name.
    fn ptx(self) -> &'static str {
        match self {
            InputType::F16 => "f16",
            InputType::Bf16 => "bf16",
            InputType::E4m3 => "e4m3",
            InputType::E5m2 => "e5m2",
        }
    }
}

/// The form of one `wgmma.mma_async m64nNkK`: what its helper's name and text depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct MmaForm {
    /// Columns of the instruction.
    pub n: u16,
    /// Depth of the instruction: 16, or 32 for FP8.
    pub k: u8,
    /// Type of A.
    pub ta: InputType,
    /// Type of B.
    pub tb: InputType,
    /// A from registers (else shared).
    pub rs: bool,
    /// f16 accumulation (else f32).
    pub f16acc: bool,
    /// A MN-major (transpose bit of A; shared A only).
    pub mn_a: bool,
    /// B MN-major (transpose bit of B).
    pub mn_b: bool,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: WgmmaHelper) -> String {
    match h {
        WgmmaHelper::Sync => r#"static __device__ __forceinline__ void tilus_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void tilus_wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void tilus_wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
"#
        .into(),
        WgmmaHelper::Desc => format!(
            "// Shared-memory matrix descriptor of a wgmma operand at `addr`: `fields` holds every field\n\
             // but the start address (computed by the host, see layout::wgmma::descriptor).\n\
             static __device__ __forceinline__ u64 tilus_wgmma_desc(u32 addr, u64 fields) {{\n  \
             return (u64)((addr >> {DESC_ADDR_SHIFT}) & 0x{DESC_ADDR_MASK:X}u) | fields;\n}}\n"
        ),
        WgmmaHelper::FenceOperand => r#"static __device__ __forceinline__ void tilus_fence_operand(float& x) {
  asm volatile("" : "+f"(x) :: "memory");
}
static __device__ __forceinline__ void tilus_fence_operand(u32& x) {
  asm volatile("" : "+r"(x) :: "memory");
}
"#
        .into(),
        WgmmaHelper::Mma(form) => wgmma_helper(form),
    }
}

/// The name of a wgmma helper.
pub(crate) fn wgmma_name(f: MmaForm) -> String {
    // the transpose bits: an MN-major operand is named so
    let order = format!(
        "{}{}",
        if f.mn_a { "_mn_a" } else { "" },
        if f.mn_b { "_mn_b" } else { "" }
    );
    let types = if f.ta == f.tb {
        f.ta.ptx().to_string()
    } else {
        format!("{}_{}", f.ta.ptx(), f.tb.ptx())
    };
    format!(
        "tilus_wgmma_m64n{}k{}_{types}_{}{}{order}",
        f.n,
        f.k,
        if f.rs { "rs" } else { "ss" },
        if f.f16acc { "_f16acc" } else { "" }
    )
}

fn wgmma_helper(f: MmaForm) -> String {
    let MmaForm { rs, f16acc, .. } = f;
    let (n, k) = (f.n as usize, f.k);
    let (at, bt) = (f.ta.ptx(), f.tb.ptx());
    // 8-bit inputs have no transpose bits: their operands are K-major
    let fp8 = f.k == 32;
    // f32 accumulators: one register per element; f16: two elements per 32-bit register.
    let (regs, dt, dc, dty) = if f16acc {
        (n / 4, "f16", "r", "u32")
    } else {
        (n / 2, "f32", "f", "float")
    };
    let d_list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let d_ops: Vec<String> = (0..regs).map(|i| format!("\"+{dc}\"(d[{i}])")).collect();
    let name = wgmma_name(f);
    let (ta, tb) = (f.mn_a as u8, f.mn_b as u8);
    let (a_param, a_operand, a_inputs, rest) = if rs {
        (
            "const u32* a",
            format!("{{%{}, %{}, %{}, %{}}}", regs, regs + 1, regs + 2, regs + 3),
            "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), ".to_string(),
            (regs + 4, format!("1, 1, {tb}")),
        )
    } else {
        (
            "u64 a",
            format!("%{regs}"),
            "\"l\"(a), ".to_string(),
            (
                regs + 1,
                if fp8 {
                    "1, 1".to_string()
                } else {
                    format!("1, 1, {ta}, {tb}")
                },
            ),
        )
    };
    let (b_index, imm) = rest;
    format!(
        "// d[0..{regs}] = A(64x{k}) * B({k}x{n}) + (scale_d ? d : 0), {at} and {bt} inputs, {dt} accumulation; B (and A\n\
         // unless it is in registers) read from shared memory through descriptors.\n\
         static __device__ __forceinline__ void {name}({dty}* d, {a_param}, u64 b, int scale_d) {{\n  \
         asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{scale}, 0;\\n\"\n    \
         \"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{dt}.{at}.{bt} {{{d}}}, {a_operand}, %{b_index}, p, {imm};\\n}}\\n\"\n    \
         : {d_ops}\n    : {a_inputs}\"l\"(b), \"r\"(scale_d));\n}}\n",
        scale = b_index + 1,
        d = d_list.join(", "),
        d_ops = d_ops.join(", "),
    )
}
