//! The self-contained preamble of generated code: NVRTC from the wheel ships no headers, so
//! generated code includes nothing and defines what it uses. Helpers are emitted only when
//! used, in a fixed order, so the same program always gives byte-identical source.

/// A helper function or type the kernel body uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Helper {
    /// Shared-state-space address of a pointer.
    SmemAddr,
    /// The `CUtensorMap` type.
    TensorMap,
    /// `elect.sync` of one lane.
    ElectOne,
    /// Barrier initialization and its fence.
    MbarrierInit,
    /// Arrival.
    MbarrierArrive,
    /// Arrival with expected transaction bytes.
    MbarrierArriveExpectTx,
    /// Wait on a phase parity.
    MbarrierWait,
    /// A TMA tile load of the given rank.
    TmaLoad(u8),
    /// The TMA swizzle of a byte offset.
    Swizzle,
    /// `ldmatrix` x1/x2/x4.
    Ldmatrix,
    /// 16-bit shared load.
    LdShared16,
    /// 32-bit shared load.
    LdShared32,
    /// 16- and 32-bit shared stores.
    StShared,
    /// `fence.proxy.async.shared::cta`.
    FenceProxyAsync,
    /// mma.sync m16n8k16 with f16 inputs.
    MmaF16,
    /// mma.sync m16n8k16 with bf16 inputs.
    MmaBf16,
    /// f32 to f16 conversions.
    CvtF16,
    /// f32 to bf16 conversions.
    CvtBf16,
    /// The bits of an f32.
    FloatBits,
    /// wgmma fence, commit and wait.
    WgmmaSync,
    /// The shared-memory matrix descriptor of a wgmma operand.
    WgmmaDesc,
    /// Keeps the compiler from moving accumulator accesses across asynchronous wgmma work.
    FenceOperand,
    /// One `wgmma.mma_async m64nNk16`: N, bf16 inputs (else f16), A from registers (else
    /// shared), f16 accumulation (else f32).
    Wgmma(u16, bool, bool, bool),
}

const TYPES: &str = r#"typedef unsigned char u8;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
"#;

/// The preamble: fixed types, then the helpers in `used`, in enum order.
pub fn preamble(used: &std::collections::BTreeSet<Helper>) -> String {
    let mut s = String::from(TYPES);
    for h in used {
        s.push('\n');
        s.push_str(&helper(*h));
    }
    s
}

fn helper(h: Helper) -> String {
    match h {
        Helper::SmemAddr => r#"// Shared-state-space address of a shared-memory pointer.
static __device__ __forceinline__ u32 tilus_smem_addr(const void* p) {
  u32 r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
"#
        .into(),
        Helper::TensorMap => r#"// CUtensorMap: an opaque 128-byte, 64-byte aligned descriptor encoded by the host.
struct alignas(64) CUtensorMap { u64 opaque[16]; };
"#
        .into(),
        Helper::ElectOne => r#"// True on exactly one lane of the (fully active) warp.
static __device__ __forceinline__ bool tilus_elect_one() {
  u32 pred = 0;
  asm volatile("{ .reg .pred P; elect.sync _|P, 0xffffffff; selp.b32 %0, 1, 0, P; }" : "+r"(pred));
  return pred != 0;
}
"#
        .into(),
        Helper::MbarrierInit => r#"static __device__ __forceinline__ void tilus_mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void tilus_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
"#
        .into(),
        Helper::MbarrierArrive => r#"static __device__ __forceinline__ void tilus_mbarrier_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
"#
        .into(),
        Helper::MbarrierArriveExpectTx => r#"static __device__ __forceinline__ void tilus_mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
"#
        .into(),
        Helper::MbarrierWait => r#"// Spins until the phase with parity `phase` of the barrier has completed.
static __device__ __forceinline__ void tilus_mbarrier_wait(u32 bar, u32 phase) {
  asm volatile(
    "{\n"
    ".reg .pred P;\n"
    "TILUS_WAIT:\n"
    "mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n"
    "@!P bra TILUS_WAIT;\n"
    "}\n" :: "r"(bar), "r"(phase) : "memory");
}
"#
        .into(),
        Helper::TmaLoad(rank) => {
            let r = rank as usize;
            let params: Vec<String> = (0..r).map(|i| format!("i32 c{i}")).collect();
            let coords: Vec<String> = (0..r).map(|i| format!("%{}", i + 2)).collect();
            let operands: Vec<String> = (0..r).map(|i| format!("\"r\"(c{i})")).collect();
            format!(
                "// TMA: copy the box at (c0 innermost, ...) of the tensor map into shared memory; the bytes\n\
                 // complete on the barrier's transaction count.\n\
                 static __device__ __forceinline__ void tilus_tma_load_{r}d(u32 dst, const CUtensorMap* map, u32 bar, {}) {{\n  \
                 asm volatile(\"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{{}}}], [%{}];\"\n    \
                 :: \"r\"(dst), \"l\"(map), {}, \"r\"(bar) : \"memory\");\n}}\n",
                params.join(", "),
                coords.join(", "),
                r + 2,
                operands.join(", ")
            )
        }
        Helper::Swizzle => r#"// TMA swizzle of a byte offset: the 16-byte chunk bits 4..6 (masked) ^= bits 7..9.
static __device__ __forceinline__ u32 tilus_swizzle(u32 offset, u32 mask) {
  return offset ^ (((offset >> 7) & mask) << 4);
}
"#
        .into(),
        Helper::Ldmatrix => r#"static __device__ __forceinline__ void tilus_ldmatrix_x4(u32* r, u32 addr) {
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
        Helper::LdShared16 => r#"static __device__ __forceinline__ u16 tilus_ld_shared_u16(u32 addr) {
  u16 v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}
"#
        .into(),
        Helper::LdShared32 => r#"static __device__ __forceinline__ u32 tilus_ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
"#
        .into(),
        Helper::StShared => r#"static __device__ __forceinline__ void tilus_st_shared_u16(u32 addr, u16 v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(addr), "h"(v) : "memory");
}
static __device__ __forceinline__ void tilus_st_shared_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(addr), "f"(v) : "memory");
}
static __device__ __forceinline__ void tilus_st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
"#
        .into(),
        Helper::FenceProxyAsync => r#"// Publishes this thread's ordinary shared-memory writes to the async proxy (TMA, wgmma).
static __device__ __forceinline__ void tilus_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
"#
        .into(),
        Helper::MmaF16 | Helper::MmaBf16 => {
            let t = if h == Helper::MmaF16 { "f16" } else { "bf16" };
            format!(
                "// d = a * b + c with mma.sync m16n8k16 ({t} inputs, f32 accumulation).\n\
                 static __device__ __forceinline__ void tilus_mma_m16n8k16_{t}(float* d, const u32* a, const u32* b, const float* c) {{\n  \
                 asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%10, %11, %12, %13}};\"\n    \
                 : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3])\n    \
                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]),\n      \
                 \"f\"(c[0]), \"f\"(c[1]), \"f\"(c[2]), \"f\"(c[3]));\n}}\n"
            )
        }
        Helper::CvtF16 | Helper::CvtBf16 => {
            let t = if h == Helper::CvtF16 { "f16" } else { "bf16" };
            format!(
                "// f32 -> {t}, round to nearest even; the pair form puts `lo` in the low half.\n\
                 static __device__ __forceinline__ u16 tilus_cvt_{t}(float x) {{\n  \
                 u16 r;\n  asm(\"cvt.rn.{t}.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x));\n  return r;\n}}\n\
                 static __device__ __forceinline__ u32 tilus_cvt_{t}x2(float lo, float hi) {{\n  \
                 u32 r;\n  asm(\"cvt.rn.{t}x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n  return r;\n}}\n\
                 static __device__ __forceinline__ float tilus_{t}_to_f32(u16 x) {{\n  \
                 float r;\n  asm(\"cvt.f32.{t} %0, %1;\" : \"=f\"(r) : \"h\"(x));\n  return r;\n}}\n"
            )
        }
        Helper::WgmmaSync => r#"static __device__ __forceinline__ void tilus_wgmma_fence() {
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
        Helper::WgmmaDesc => r#"// Shared-memory matrix descriptor of a K-major swizzled wgmma operand: start address,
// leading-byte offset 1 (unused for swizzled K-major), stride-byte offset (8 rows), swizzle
// mode (1: 128B, 2: 64B, 3: 32B).
static __device__ __forceinline__ u64 tilus_wgmma_desc(u32 addr, u32 sbo, u32 mode) {
  return (u64)((addr >> 4) & 0x3FFFu) | ((u64)1 << 16) | ((u64)((sbo >> 4) & 0x3FFFu) << 32) | ((u64)mode << 62);
}
"#
        .into(),
        Helper::FenceOperand => r#"static __device__ __forceinline__ void tilus_fence_operand(float& x) {
  asm volatile("" : "+f"(x) :: "memory");
}
static __device__ __forceinline__ void tilus_fence_operand(u32& x) {
  asm volatile("" : "+r"(x) :: "memory");
}
"#
        .into(),
        Helper::Wgmma(n, bf16, rs, f16acc) => wgmma_helper(n as usize, bf16, rs, f16acc),
        Helper::FloatBits => r#"static __device__ __forceinline__ u32 tilus_f32_bits(float x) {
  u32 r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
"#
        .into(),
    }
}

/// The name of a wgmma helper.
pub fn wgmma_name(n: u16, bf16: bool, rs: bool, f16acc: bool) -> String {
    format!(
        "tilus_wgmma_m64n{n}k16_{}_{}{}",
        if bf16 { "bf16" } else { "f16" },
        if rs { "rs" } else { "ss" },
        if f16acc { "_f16acc" } else { "" }
    )
}

fn wgmma_helper(n: usize, bf16: bool, rs: bool, f16acc: bool) -> String {
    let t = if bf16 { "bf16" } else { "f16" };
    // f32 accumulators: one register per element; f16: two elements per 32-bit register.
    let (regs, dt, dc, dty) = if f16acc {
        (n / 4, "f16", "r", "u32")
    } else {
        (n / 2, "f32", "f", "float")
    };
    let d_list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let d_ops: Vec<String> = (0..regs).map(|i| format!("\"+{dc}\"(d[{i}])")).collect();
    let name = wgmma_name(n as u16, bf16, rs, f16acc);
    let (a_param, a_operand, a_inputs, rest) = if rs {
        (
            "const u32* a",
            format!("{{%{}, %{}, %{}, %{}}}", regs, regs + 1, regs + 2, regs + 3),
            "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), ".to_string(),
            (regs + 4, "1, 1, 0"),
        )
    } else {
        (
            "u64 a",
            format!("%{regs}"),
            "\"l\"(a), ".to_string(),
            (regs + 1, "1, 1, 0, 0"),
        )
    };
    let (b_index, imm) = rest;
    format!(
        "// d[0..{regs}] += A(64x16) * B(16x{n}), {t} inputs, {dt} accumulation; B (and A unless it is in\n\
         // registers) read from shared memory through descriptors.\n\
         static __device__ __forceinline__ void {name}({dty}* d, {a_param}, u64 b) {{\n  \
         asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{scale}, 0;\\n\"\n    \
         \"wgmma.mma_async.sync.aligned.m64n{n}k16.{dt}.{t}.{t} {{{d}}}, {a_operand}, %{b_index}, p, {imm};\\n}}\\n\"\n    \
         : {d_ops}\n    : {a_inputs}\"l\"(b), \"r\"(1));\n}}\n",
        scale = b_index + 1,
        d = d_list.join(", "),
        d_ops = d_ops.join(", "),
    )
}
