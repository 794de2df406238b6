//! Emitters for the memory family: shared tiles are addresses in the planned region, register
//! tiles are per-thread arrays (16-bit elements packed two to a 32-bit word), `load_shared`
//! and `store_shared` use ldmatrix and stmatrix when the layout is made of 8x8 matrices; global memory (`load_global`,
//! `store_global`, atomics) is in `memory/global.rs`.

mod global;
mod packed;
mod row_uniform;

pub(super) use global::{open_first_copy, stride_text as global_stride_text};
pub(super) use row_uniform::row_uniform_tiles;

use super::{c_type, Emitter, Helper};
use crate::ir::{AtomicOp, DType, MemoryInst, RegId, RegisterDecl, SharedView};
use crate::layout::{AddressArith, RegisterLayout, SharedLayout, Swizzle};

/// How a register tile is stored in C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Storage {
    /// One C element per tile element (`float`, `i32`, ...).
    Plain,
    /// Two 16-bit elements per `u32` word, low half first.
    Packed16,
}

pub(super) fn storage(d: &RegisterDecl) -> Storage {
    let n = d.layout.as_ref().map_or(0, |l| l.local_size());
    if d.dtype.bits() == 16 && n % 2 == 0 {
        Storage::Packed16
    } else {
        Storage::Plain
    }
}

pub(super) fn layout(e: &Emitter, r: RegId) -> RegisterLayout {
    e.p.register(r)
        .layout
        .clone()
        .expect("layouts are inferred before codegen")
}

/// The C array elements a register tile is held in: its local elements, or half of them
/// for 16-bit tiles packed in pairs.
pub(super) fn words(e: &Emitter, r: RegId) -> i64 {
    let n = layout(e, r).local_size();
    match storage(e.p.register(r)) {
        Storage::Packed16 => n / 2,
        Storage::Plain => n,
    }
}

/// Declares a register tile's storage.
pub(super) fn declare(e: &mut Emitter, r: RegId) {
    if let Some(scope) = e.declared.last_mut() {
        scope.push(r);
    }
    let d = e.p.register(r);
    let n = layout(e, r).local_size();
    let line = match storage(d) {
        Storage::Packed16 => format!(
            "u32 {}[{}];  // {} {:?}, {} per thread, packed in pairs",
            d.name,
            n / 2,
            d.dtype,
            d.shape,
            n
        ),
        Storage::Plain => format!(
            "{} {}[{}];  // {} {:?}",
            c_type(d.dtype),
            d.name,
            n,
            d.dtype,
            d.shape
        ),
    };
    e.line(line);
}

/// The value of local element `l` (a C expression) of a tile: `float` for f32, the 16 bits for
/// 16-bit types.
pub(super) fn read(e: &Emitter, r: RegId, l: &str) -> String {
    let d = e.p.register(r);
    match storage(d) {
        Storage::Packed16 => format!("(u16)({}[({l}) >> 1] >> ((({l}) & 1) * 16))", d.name),
        Storage::Plain => format!("{}[{l}]", d.name),
    }
}

/// The 32-bit word holding local elements `l` and `l + 1` (`l` even) of a 16-bit tile.
pub(super) fn word(e: &Emitter, r: RegId, l: &str) -> String {
    format!("{}[({l}) >> 1]", e.p.register(r).name)
}

/// A C expression the shared layout's address function runs on.
pub(super) struct CExpr(pub String);

impl AddressArith for CExpr {
    fn scaled(self, k: i64) -> CExpr {
        CExpr(if k == 1 {
            format!("({})", self.0)
        } else {
            format!("({}) * {k}", self.0)
        })
    }
    fn sum(terms: Vec<CExpr>) -> CExpr {
        CExpr(
            terms
                .into_iter()
                .map(|t| t.0)
                .collect::<Vec<_>>()
                .join(" + "),
        )
    }
    fn div_rem(self, k: i64) -> (CExpr, CExpr) {
        (
            CExpr(format!("(({}) / {k})", self.0)),
            CExpr(format!("(({}) % {k})", self.0)),
        )
    }
    fn to_bytes(self, elem_bytes: u32) -> CExpr {
        CExpr(format!("(u32)({}) * {elem_bytes}u", self.0))
    }
    fn swizzled(self, sw: Swizzle) -> CExpr {
        if sw.mask() == 0 {
            self
        } else {
            CExpr(format!("tilus_swizzle({}, {}u)", self.0, sw.mask()))
        }
    }
}

/// The shared-space address of a view's first byte: the tile's, or its stage's (stages are
/// `stage_bytes` apart, each aligned for the swizzle).
pub(super) fn view_base(e: &Emitter, v: &SharedView) -> String {
    let rows = e.p.sview_row_offset_bytes(v);
    let base = stage_base(e, v);
    if rows == 0 {
        base
    } else {
        format!("({base} + {rows}u)")
    }
}

/// The shared-space address of the first byte of a view's tile or stage.
fn stage_base(e: &Emitter, v: &SharedView) -> String {
    let d = e.p.shared(v.tensor);
    match &v.stage {
        None => d.name.clone(),
        Some(stage) => {
            let l = d
                .layout
                .as_ref()
                .expect("shared layouts are inferred before codegen");
            match stage.as_int() {
                Some(i) => format!("({} + {}u)", d.name, i * l.stage_bytes() as i64),
                None => format!(
                    "({} + (u32)({}) * {}u)",
                    d.name,
                    e.expr(stage),
                    l.stage_bytes()
                ),
            }
        }
    }
}

/// The layout of the elements a view covers, from its first byte.
pub(super) fn view_layout(e: &Emitter, v: &SharedView) -> SharedLayout {
    e.p.sview_layout(v)
        .expect("shared layouts are inferred before codegen")
}

/// The shared-space address expression of the element of a view at `coords` (C expressions,
/// as stored), through the view's layout (swizzle included).
pub(super) fn smem_address(e: &mut Emitter, v: &SharedView, coords: &[String]) -> String {
    let l = view_layout(e, v);
    if l.swizzle.mask() != 0 {
        e.use_helper(Helper::Core(super::Core::Swizzle));
    }
    let at = l.address(coords.iter().map(|c| CExpr(c.clone())).collect());
    format!("{} + {}", view_base(e, v), at.0)
}

pub(super) fn emit(e: &mut Emitter, i: &MemoryInst) {
    match i {
        MemoryInst::GlobalView(_) => {}
        MemoryInst::AllocShared(s) => {
            let d = e.p.shared(*s);
            let off = d.offset.expect("shared tiles are planned before codegen");
            let t = format!(
                "const u32 {} = tilus_smem + {}u;  // {} bytes",
                d.name,
                off,
                d.footprint()
            );
            e.line(t);
        }
        MemoryInst::FreeShared(_) => {}
        MemoryInst::AllocRegister { out, init } => {
            declare(e, *out);
            let Some(v) = init else { return };
            let d = e.p.register(*out);
            let n = layout(e, *out).local_size();
            let name = d.name.clone();
            let x = v.as_int().map(|i| i as f64).unwrap_or_else(|| match v {
                crate::ir::Expr::Float(b, _) => f64::from_bits(*b),
                _ => 0.0,
            });
            let half_bits = |t: DType| -> u32 {
                u32::from(if t == DType::BF16 {
                    half::bf16::from_f64(x).to_bits()
                } else {
                    half::f16::from_f64(x).to_bits()
                })
            };
            let (count, value) = match (storage(d), d.dtype) {
                (Storage::Packed16, t) => {
                    let bits = half_bits(t);
                    (n / 2, format!("0x{:08x}u", bits | (bits << 16)))
                }
                // a tile of 16-bit floats keeps their bits, a low-precision tile its codes
                (Storage::Plain, t @ (DType::F16 | DType::BF16)) => {
                    (n, format!("(u16)0x{:04x}", half_bits(t)))
                }
                (Storage::Plain, t) if t.is_lowp() => {
                    (n, format!("(u8)0x{:02x}", global::lowp_code(x, t)))
                }
                (Storage::Plain, _) => (n, e.expr(v)),
            };
            e.line("#pragma unroll");
            e.line(format!(
                "for (int l = 0; l < {count}; ++l) {name}[l] = {value};"
            ));
        }
        MemoryInst::LoadShared { src, out } => load_shared(e, src, *out),
        MemoryInst::StoreGlobal { .. } => global::store_global(e, i),
        MemoryInst::LoadGlobal { .. } => global::load_global(e, i),
        MemoryInst::AtomicGlobal { .. } => global::atomic_global(e, i),
        MemoryInst::ScatterGlobal { .. } => global::scatter_global(e, i),
        MemoryInst::AtomicScalar { .. } => global::atomic_scalar(e, i),
        MemoryInst::LoadScalar { .. } => global::load_scalar(e, i),
        MemoryInst::StoreShared { dst, src } => store_shared(e, dst, src),
        MemoryInst::FenceProxyAsync => {
            e.use_helper(Helper::Memory(MemoryHelper::FenceProxyAsync));
            e.line("tilus_fence_proxy_async();");
        }
        MemoryInst::FenceGpu => e.line("__threadfence();  // fence.acq_rel.gpu"),
    }
}

/// How `load_shared` can use ldmatrix: per thread, the 8x8 matrices of each group of
/// `per_group` consecutive register pairs.
struct LdmatrixPlan {
    per_group: i64,
    groups: i64,
}

/// ldmatrix applies when, for every warp and every pair of consecutive locals, the 32 lanes'
/// pairs form an 8x8 matrix in the fragment order (lane t holds row t/4, columns 2(t%4)+{0,1})
/// with rows of 8 contiguous, 16-byte aligned elements, and the offsets between the matrices of
/// a group are the same in every group (so each lane's address is one expression).
fn ldmatrix_plan(l: &RegisterLayout, dtype: DType, threads: i64) -> Option<LdmatrixPlan> {
    if dtype.bits() != 16 || l.rank() != 2 || threads % 32 != 0 || l.local_size() % 2 != 0 {
        return None;
    }
    let pairs = l.local_size() / 2;
    for w in 0..threads / 32 {
        for j in 0..pairs {
            let base = l.coords(w * 32, 2 * j);
            if base[1] % 8 != 0 {
                return None;
            }
            for t in 0..32 {
                for el in 0..2 {
                    let c = l.coords(w * 32 + t, 2 * j + el);
                    if c != vec![base[0] + t / 4, base[1] + 2 * (t % 4) + el] {
                        return None;
                    }
                }
            }
        }
    }
    let per_group = if pairs % 4 == 0 {
        4
    } else if pairs % 2 == 0 {
        2
    } else {
        1
    };
    let groups = pairs / per_group;
    let delta = |g: i64, m: i64| {
        let a = l.local_coords(2 * (g * per_group + m));
        let b = l.local_coords(2 * (g * per_group));
        (a[0] - b[0], a[1] - b[1])
    };
    for g in 1..groups {
        for m in 0..per_group {
            if delta(g, m) != delta(0, m) {
                return None;
            }
        }
    }
    Some(LdmatrixPlan { per_group, groups })
}

/// Emits, in a block of its own, a loop over the plan's groups of 8x8 matrices whose body is
/// `access(addr)`: `addr` the shared address this lane supplies for group `g` (lane t gives
/// row t % 8 of matrix t / 8 of the group), the same for `ldmatrix` and `stmatrix`.
fn for_each_matrix_group(
    e: &mut Emitter,
    tile: &SharedView,
    l: &RegisterLayout,
    plan: &LdmatrixPlan,
    access: impl Fn(&str) -> String,
) {
    let threads = e.tid().threads as i64;
    let tid = e.tid().name.clone();
    let (tt, lt, ls) = (l.thread_terms(), l.local_terms(), l.local_size());
    e.open("");
    let warp_base = format!("({tid} & ~31)");
    let deltas: Vec<(i64, i64)> = (0..plan.per_group)
        .map(|m| {
            let a = l.local_coords(2 * m);
            (a[0], a[1])
        })
        .collect();
    let select = |k: usize| -> String {
        let mut s = format!("{}", deltas[plan.per_group as usize - 1].pick(k));
        for m in (0..plan.per_group as usize - 1).rev() {
            s = format!(
                "(tilus_lane / 8 % {} == {m} ? {} : {s})",
                plan.per_group,
                deltas[m].pick(k)
            );
        }
        s
    };
    e.line(format!("const i32 tilus_lane = {tid} % 32;"));
    let r0 = format!(
        "{} + {} + tilus_lane % 8",
        e.warp_terms(&tt[0], &warp_base, threads),
        select(0)
    );
    let c0 = format!(
        "{} + {}",
        e.warp_terms(&tt[1], &warp_base, threads),
        select(1)
    );
    e.line(format!("const i32 tilus_row = {r0};"));
    e.line(format!("const i32 tilus_col = {c0};"));
    e.line("#pragma unroll");
    e.open(format!("for (int g = 0; g < {}; ++g)", plan.groups));
    let lidx = format!("(g * {})", plan.per_group * 2);
    let row = format!("tilus_row + {}", e.terms(&lt[0], &lidx, ls));
    let col = format!("tilus_col + {}", e.terms(&lt[1], &lidx, ls));
    let addr = smem_address(e, tile, &[row, col]);
    e.line(access(&addr));
    e.close();
    e.close();
}

fn load_shared(e: &mut Emitter, src: &SharedView, out: RegId) {
    declare(e, out);
    let l = layout(e, out);
    let d = e.p.register(out);
    let (dtype, threads) = (d.dtype, e.tid().threads as i64);
    let name = d.name.clone();
    if let Some(plan) = ldmatrix_plan(&l, dtype, threads) {
        e.use_helper(Helper::Memory(MemoryHelper::Ldmatrix));
        for_each_matrix_group(e, src, &l, &plan, |addr| {
            format!(
                "tilus_ldmatrix_x{}(&{name}[g * {}], {addr});",
                plan.per_group, plan.per_group
            )
        });
        return;
    }
    if dtype.bits() == 8 && runs_of(e, src, &l, threads, 8) {
        // 8 bytes at a time: each run of 8 locals is 8 consecutive bytes of a row, starting
        // at a multiple of 8 (inside one 16-byte chunk, which the swizzles keep whole)
        e.use_helper(Helper::Memory(MemoryHelper::LdShared64));
        let addr = open_element_loop_by(e, src, &l, 8);
        e.line(format!("const uint2 v = tilus_ld_shared_v2({addr});"));
        e.line("#pragma unroll");
        e.line(format!(
            "for (int j = 0; j < 4; ++j) {{ {name}[l + j] = (u8)(v.x >> (8 * j)); {name}[l + 4 + j] = (u8)(v.y >> (8 * j)); }}"
        ));
        close_element_loop(e);
        return;
    }
    if dtype.bits() == 32 && runs_of(e, src, &l, threads, 4) {
        // 16 bytes at a time: each run of 4 locals is one aligned 16-byte chunk of a row
        // (a thread's run of packed words)
        e.use_helper(Helper::Memory(MemoryHelper::LdShared128));
        let addr = open_element_loop_by(e, src, &l, 4);
        e.line(format!("const uint4 v = tilus_ld_shared_v4({addr});"));
        let t = c_type(dtype);
        let parts: Vec<String> = ["x", "y", "z", "w"]
            .iter()
            .enumerate()
            .map(|(j, f)| format!("{name}[l + {j}] = *reinterpret_cast<const {t}*>(&v.{f});"))
            .collect();
        e.line(parts.join(" "));
        close_element_loop(e);
        return;
    }
    // Generic path: one shared-memory load per element.
    let addr = open_element_loop(e, src, &l);
    let st = storage(e.p.register(out));
    match (st, dtype.bits()) {
        (Storage::Packed16, _) => {
            e.use_helper(Helper::Memory(MemoryHelper::LdShared16));
            e.line(format!("const u32 v = tilus_ld_shared_u16({addr});"));
            e.line(format!(
                "if (l % 2 == 0) {name}[l / 2] = v; else {name}[l / 2] |= v << 16;"
            ));
        }
        (_, 16) => {
            e.use_helper(Helper::Memory(MemoryHelper::LdShared16));
            e.line(format!("{name}[l] = tilus_ld_shared_u16({addr});"));
        }
        (_, 8) => {
            // one byte, at any address (a wider load would be misaligned at odd bytes)
            e.use_helper(Helper::Memory(MemoryHelper::LdShared8));
            e.line(format!("const u32 v = tilus_ld_shared_u8({addr});"));
            e.line(format!(
                "{name}[l] = *reinterpret_cast<const {}*>(&v);",
                c_type(dtype)
            ));
        }
        _ => {
            e.use_helper(Helper::Memory(MemoryHelper::LdShared32));
            e.line(format!("const u32 v = tilus_ld_shared_u32({addr});"));
            e.line(format!(
                "{name}[l] = *reinterpret_cast<const {}*>(&v);",
                c_type(dtype)
            ));
        }
    }
    close_element_loop(e);
}

trait Pick {
    fn pick(&self, k: usize) -> i64;
}
impl Pick for (i64, i64) {
    fn pick(&self, k: usize) -> i64 {
        if k == 0 {
            self.0
        } else {
            self.1
        }
    }
}

/// `stmatrix` where the tile's layout is made of 8x8 matrices in the fragment order (a WGMMA
/// or mma accumulator cast to 16 bits is: four matrices, 16 bytes per lane, per
/// instruction), else one shared-memory store per element, at the tile's (swizzled) layout.
fn store_shared(e: &mut Emitter, dst: &SharedView, src: &crate::ir::RegView) {
    let rank = e.p.sview_stored_shape(dst).len();
    let l = layout(e, src.tensor).permute(&src.perm(rank));
    let dtype = e.p.register(src.tensor).dtype;
    let threads = e.tid().threads as i64;
    if let Some(plan) = ldmatrix_plan(&l, dtype, threads) {
        e.use_helper(Helper::Memory(MemoryHelper::Stmatrix));
        let name = e.p.register(src.tensor).name.clone();
        for_each_matrix_group(e, dst, &l, &plan, |addr| {
            format!(
                "tilus_stmatrix_x{}(&{name}[g * {}], {addr});",
                plan.per_group, plan.per_group
            )
        });
        return;
    }
    e.use_helper(Helper::Memory(MemoryHelper::StShared));
    if dtype.bits() == 16 && runs_of(e, dst, &l, threads, 8) {
        // 16 bytes at a time: each run of 8 locals is 8 consecutive elements of a row,
        // starting at a multiple of 8 (a 16-byte chunk, which the swizzles keep whole)
        let name = e.p.register(src.tensor).name.clone();
        let addr = open_element_loop_by(e, dst, &l, 8);
        e.line(format!(
            "tilus_st_shared_v4({addr}, {name}[(l >> 1)], {name}[(l >> 1) + 1], {name}[(l >> 1) + 2], {name}[(l >> 1) + 3]);"
        ));
        close_element_loop(e);
        return;
    }
    let addr = open_element_loop(e, dst, &l);
    let v = read(e, src.tensor, "l");
    if dtype.bits() == 16 {
        e.line(format!("tilus_st_shared_u16({addr}, {v});"));
    } else if dtype.bits() == 8 {
        // one byte: a wider store would overwrite the neighbours (and be misaligned)
        e.line(format!("tilus_st_shared_u8({addr}, (u32)({v}));"));
    } else if dtype == DType::F32 {
        e.line(format!("tilus_st_shared_f32({addr}, {v});"));
    } else {
        e.line(format!("tilus_st_shared_u32({addr}, (u32)({v}));"));
    }
    close_element_loop(e);
}

/// Whether each thread's locals come in runs of `n` consecutive elements of one row, each
/// run starting at a multiple of `n` (rows of whole runs, stages unpadded): with `n`
/// elements of `16 / n` bytes, each run is one aligned 16-byte chunk, which every swizzle
/// keeps whole (8 bytes, half a chunk, for eight 8-bit elements).
fn runs_of(e: &Emitter, dst: &SharedView, l: &RegisterLayout, threads: i64, n: i64) -> bool {
    let ls = l.local_size();
    let sl = view_layout(e, dst);
    // (a transposed view's rows are the stored columns: its runs are not contiguous)
    if ls % n != 0
        || l.rank() == 0
        || dst.transposed
        || sl.row_span() % n != 0
        || sl.stage_stride.is_some()
    {
        return false;
    }
    let last = l.rank() - 1;
    (0..threads).all(|t| {
        (0..ls).step_by(n as usize).all(|g| {
            let first = l.coords(t, g);
            first[last] % n == 0
                && (1..n).all(|j| {
                    let c = l.coords(t, g + j);
                    c[..last] == first[..last] && c[last] == first[last] + j
                })
        })
    })
}

/// Opens a block with the thread's coordinate terms and an unrolled loop over its local
/// elements, and returns the shared address of element `l` of `tile` (swizzle applied); the
/// caller emits the access and closes both with [`close_element_loop`].
fn open_element_loop(e: &mut Emitter, tile: &SharedView, l: &RegisterLayout) -> String {
    open_element_loop_by(e, tile, l, 1)
}

/// [`open_element_loop`] stepping `step` locals at a time (`l` the first of each step).
fn open_element_loop_by(
    e: &mut Emitter,
    tile: &SharedView,
    l: &RegisterLayout,
    step: i64,
) -> String {
    let (tt, lt, ls) = (l.thread_terms(), l.local_terms(), l.local_size());
    let threads = e.tid().threads as i64;
    let tid = e.tid().name.clone();
    e.open("");
    for (dim, terms) in tt.iter().enumerate() {
        let t = e.terms(terms, &tid, threads);
        e.line(format!("const i32 tilus_t{dim} = {t};"));
    }
    e.line("#pragma unroll");
    let advance = if step == 1 {
        "++l".to_string()
    } else {
        format!("l += {step}")
    };
    e.open(format!("for (int l = 0; l < {ls}; {advance})"));
    let coords: Vec<String> = (0..l.rank())
        .map(|d| format!("tilus_t{d} + {}", e.terms(&lt[d], "l", ls)))
        .collect();
    smem_address(e, tile, &coords)
}

fn close_element_loop(e: &mut Emitter) {
    e.close();
    e.close();
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum MemoryHelper {
    /// `ldmatrix` x1/x2/x4.
    Ldmatrix,
    /// `stmatrix` x1/x2/x4.
    Stmatrix,
    /// 8-bit shared load (zero-extended).
    LdShared8,
    /// 16-bit shared load.
    LdShared16,
    /// 32-bit shared load.
    LdShared32,
    /// 64-bit shared load (two words).
    LdShared64,
    /// 128-bit shared load (four words).
    LdShared128,
    /// 16- and 32-bit shared stores.
    StShared,
    /// `fence.proxy.async.shared::cta`.
    FenceProxyAsync,
    /// The vector type of global loads and stores.
    Vec,
    /// A global atomic of PTX (`returns`: `atom`, else `red`).
    Atomic {
        /// The operation.
        op: AtomicOp,
        /// The element type.
        dtype: DType,
        /// Whether it returns the old value.
        returns: bool,
    },
    /// f32 min or max, built from the integer atomics (so defined after them).
    FloatMinMax {
        /// Max, else min.
        max: bool,
        /// Whether it returns the old value.
        returns: bool,
    },
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: MemoryHelper) -> String {
    match h {
        MemoryHelper::Ldmatrix => r#"static __device__ __forceinline__ void tilus_ldmatrix_x4(u32* r, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
    : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
static __device__ __forceinline__ void tilus_ldmatrix_x2(u32* r, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
static __device__ __forceinline__ void tilus_ldmatrix_x1(u32* r, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
}
"#
        .into(),
        MemoryHelper::Stmatrix => r#"static __device__ __forceinline__ void tilus_stmatrix_x4(const u32* r, u32 addr) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
    :: "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
static __device__ __forceinline__ void tilus_stmatrix_x2(const u32* r, u32 addr) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(addr), "r"(r[0]), "r"(r[1]) : "memory");
}
static __device__ __forceinline__ void tilus_stmatrix_x1(const u32* r, u32 addr) {
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(addr), "r"(r[0]) : "memory");
}
"#
        .into(),
        MemoryHelper::LdShared8 => r#"static __device__ __forceinline__ u32 tilus_ld_shared_u8(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
"#
        .into(),
        MemoryHelper::LdShared16 => r#"static __device__ __forceinline__ u16 tilus_ld_shared_u16(u32 addr) {
  u16 v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}
"#
        .into(),
        MemoryHelper::LdShared32 => r#"static __device__ __forceinline__ u32 tilus_ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
"#
        .into(),
        MemoryHelper::LdShared64 => r#"static __device__ __forceinline__ uint2 tilus_ld_shared_v2(u32 addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
"#
        .into(),
        MemoryHelper::LdShared128 => r#"static __device__ __forceinline__ uint4 tilus_ld_shared_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
"#
        .into(),
        MemoryHelper::StShared => r#"static __device__ __forceinline__ void tilus_st_shared_u16(u32 addr, u16 v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(addr), "h"(v) : "memory");
}
static __device__ __forceinline__ void tilus_st_shared_u8(u32 addr, u32 v) {
  asm volatile("st.shared.u8 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ void tilus_st_shared_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(addr), "f"(v) : "memory");
}
static __device__ __forceinline__ void tilus_st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
// No memory clobber: global loads may be moved above it (shared and global memory do not
// alias), so a warp's loads of the next rows are in flight while these are stored; the
// volatile asm of fences and barriers stays in order with it.
static __device__ __forceinline__ void tilus_st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d));
}
"#
        .into(),
        MemoryHelper::Vec => r#"// N elements of T at an address aligned to their size: one vector load or store.
template <typename T, int N> struct alignas(sizeof(T) * N) tilus_vec { T v[N]; };
"#
        .into(),
        MemoryHelper::Atomic { op, dtype, returns } => global::atomic_text(op, dtype, returns),
        MemoryHelper::FloatMinMax { max, returns } => global::float_min_max_text(max, returns),
        MemoryHelper::FenceProxyAsync => r#"// Publishes this thread's ordinary shared-memory writes to the async proxy (TMA, wgmma).
static __device__ __forceinline__ void tilus_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
"#
        .into(),
    }
}
