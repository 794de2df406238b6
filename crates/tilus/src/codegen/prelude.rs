//! The self-contained preamble of generated code: NVRTC from the wheel ships no headers, so
//! generated code includes nothing and defines what it uses. Helpers are emitted only when
//! used, in a fixed order, so the same program always gives byte-identical source. The helpers
//! of an instruction family are defined in its emitter's file; this one holds the few every
//! family shares.

use super::{arithmetic, cp_async, debug, lowp, mbarrier, memory, mma, tma, wgmma};

/// A helper function or type the kernel body uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Helper {
    /// Shared by every family.
    Core(Core),
    /// mbarrier functions.
    Mbarrier(mbarrier::MbarrierHelper),
    /// TMA functions.
    Tma(tma::TmaHelper),
    /// Shared-memory loads, stores and fences.
    Memory(memory::MemoryHelper),
    /// mma.sync.
    Mma(mma::MmaHelper),
    /// Conversions.
    Arith(arithmetic::ArithHelper),
    /// wgmma.
    Wgmma(wgmma::WgmmaHelper),
    /// Printing.
    Debug(debug::DebugHelper),
    /// cp.async copies and groups.
    CpAsync(cp_async::CpAsyncHelper),
    /// Low-precision types' codes.
    Lowp(lowp::LowpHelper),
}

/// Helpers every family may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Core {
    /// Shared-state-space address of a pointer.
    SmemAddr,
    /// The `CUtensorMap` type.
    TensorMap,
    /// `elect.sync` of one lane.
    ElectOne,
    /// The TMA swizzle of a byte offset.
    Swizzle,
    /// The bits of an f32.
    FloatBits,
}

const TYPES: &str = r#"typedef unsigned char u8;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
"#;

/// The preamble: fixed types, then the helpers in `used`, in enum order.
pub(crate) fn preamble(used: &std::collections::BTreeSet<Helper>) -> String {
    let mut s = String::from(TYPES);
    for h in used {
        s.push('\n');
        s.push_str(&helper(*h));
    }
    s
}

fn helper(h: Helper) -> String {
    match h {
        Helper::Core(c) => core(c),
        Helper::Mbarrier(h) => mbarrier::helper_text(h),
        Helper::Tma(h) => tma::helper_text(h),
        Helper::Memory(h) => memory::helper_text(h),
        Helper::Mma(h) => mma::helper_text(h),
        Helper::Arith(h) => arithmetic::helper_text(h),
        Helper::Wgmma(h) => wgmma::helper_text(h),
        Helper::Debug(h) => debug::helper_text(h),
        Helper::CpAsync(h) => cp_async::helper_text(h),
        Helper::Lowp(h) => lowp::helper_text(h),
    }
}

fn core(c: Core) -> String {
    match c {
        Core::SmemAddr => r#"// Shared-state-space address of a shared-memory pointer.
static __device__ __forceinline__ u32 tilus_smem_addr(const void* p) {
  u32 r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
"#
        .into(),
        Core::TensorMap => {
            r#"// CUtensorMap: an opaque 128-byte, 64-byte aligned descriptor encoded by the host.
struct alignas(64) CUtensorMap { u64 opaque[16]; };
"#
            .into()
        }
        Core::ElectOne => r#"// True on exactly one lane of the (fully active) warp.
static __device__ __forceinline__ bool tilus_elect_one() {
  u32 pred = 0;
  asm volatile("{ .reg .pred P; elect.sync _|P, 0xffffffff; selp.b32 %0, 1, 0, P; }" : "+r"(pred));
  return pred != 0;
}
"#
        .into(),
        Core::Swizzle => {
            r#"// TMA swizzle of a byte offset: the 16-byte chunk bits 4..6 (masked) ^= bits 7..9.
static __device__ __forceinline__ u32 tilus_swizzle(u32 offset, u32 mask) {
  return offset ^ (((offset >> 7) & mask) << 4);
}
"#
            .into()
        }
        Core::FloatBits => r#"static __device__ __forceinline__ u32 tilus_f32_bits(float x) {
  u32 r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
"#
        .into(),
    }
}
