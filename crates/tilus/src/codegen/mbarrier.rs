//! Emitters for mbarriers: initialization by one thread, then a fence and a block barrier so
//! that every thread and the copy engine see initialized barriers.

use super::{Emitter, Helper};
use crate::ir::{BarrierRef, MbarrierInst};

/// The shared-space address of one barrier.
pub(super) fn address(e: &Emitter, b: &BarrierRef) -> String {
    let name = &e.p.barrier(b.array).name;
    match b.index.as_int() {
        Some(0) => name.clone(),
        Some(i) => format!("{name} + {}u", 8 * i),
        None => format!("{name} + 8u * (u32)({})", e.expr(&b.index)),
    }
}

pub(super) fn emit(e: &mut Emitter, i: &MbarrierInst) {
    match i {
        MbarrierInst::Alloc(id) => {
            e.use_helper(Helper::Mbarrier(MbarrierHelper::Init));
            let d = e.p.barrier(*id);
            let off = d.offset.expect("barriers are planned before codegen");
            let (name, counts) = (d.name.clone(), d.counts.clone());
            e.line(format!(
                "const u32 {name} = tilus_smem + {off}u;  // {} mbarrier(s)",
                counts.len()
            ));
            let tid = e.tid().name.clone();
            e.open(format!("if ({tid} == 0)"));
            for (i, c) in counts.iter().enumerate() {
                e.line(format!("tilus_mbarrier_init({name} + {}u, {c}u);", 8 * i));
            }
            e.line("tilus_fence_mbarrier_init();");
            e.close();
            e.line("__syncthreads();");
        }
        MbarrierInst::Arrive { bar, count: 1 } => {
            e.use_helper(Helper::Mbarrier(MbarrierHelper::Arrive));
            let a = address(e, bar);
            e.line(format!("tilus_mbarrier_arrive({a});"));
        }
        MbarrierInst::Arrive { bar, count } => {
            e.use_helper(Helper::Mbarrier(MbarrierHelper::ArriveCount));
            let a = address(e, bar);
            e.line(format!("tilus_mbarrier_arrive_count({a}, {count}u);"));
        }
        MbarrierInst::ArriveExpectTx { bar, bytes } => {
            e.use_helper(Helper::Mbarrier(MbarrierHelper::ArriveExpectTx));
            let a = address(e, bar);
            let t = format!(
                "tilus_mbarrier_arrive_expect_tx({a}, (u32)({}));",
                e.expr(bytes)
            );
            e.line(t);
        }
        MbarrierInst::ArriveRemote {
            bar,
            rank,
            publishes,
        } => {
            let (helper, name) = if *publishes {
                (MbarrierHelper::ArriveRemote, "tilus_mbarrier_arrive_remote")
            } else {
                (
                    MbarrierHelper::ArriveRemoteAfterReads,
                    "tilus_mbarrier_arrive_remote_after_reads",
                )
            };
            e.use_helper(Helper::Mbarrier(helper));
            let a = address(e, bar);
            let t = format!("{name}({a}, (u32)({}));", e.expr(rank));
            e.line(t);
        }
        MbarrierInst::Wait {
            bar,
            phase,
            relaxed,
        } => {
            let (helper, f) = if *relaxed {
                (MbarrierHelper::WaitRelaxed, "tilus_mbarrier_wait_relaxed")
            } else {
                (MbarrierHelper::Wait, "tilus_mbarrier_wait")
            };
            e.use_helper(Helper::Mbarrier(helper));
            let a = address(e, bar);
            let t = format!("{f}({a}, (u32)({}));", e.expr(phase));
            e.line(t);
        }
    }
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum MbarrierHelper {
    /// Barrier initialization and its fence.
    Init,
    /// Arrival.
    Arrive,
    /// Several arrivals in one instruction.
    ArriveCount,
    /// Arrival with expected transaction bytes.
    ArriveExpectTx,
    /// Wait on a phase parity.
    Wait,
    /// Wait on a phase parity without acquire ordering.
    WaitRelaxed,
    /// Arrival on the barrier at the same address in another block of the cluster.
    ArriveRemote,
    /// The remote arrival without the cluster-scope release.
    ArriveRemoteAfterReads,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: MbarrierHelper) -> String {
    match h {
        MbarrierHelper::Init => r#"static __device__ __forceinline__ void tilus_mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void tilus_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
"#
        .into(),
        MbarrierHelper::Arrive => r#"static __device__ __forceinline__ void tilus_mbarrier_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
"#
        .into(),
        MbarrierHelper::ArriveCount => r#"static __device__ __forceinline__ void tilus_mbarrier_arrive_count(u32 bar, u32 count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
"#
        .into(),
        MbarrierHelper::ArriveExpectTx => r#"static __device__ __forceinline__ void tilus_mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
"#
        .into(),
        MbarrierHelper::ArriveRemoteAfterReads => r#"// One arrival on the barrier at `bar` in block `rank` of this cluster, saying that this
// thread's reads of what the barrier guards are complete: nothing to publish, so no
// cluster-scope release (whose fence would hold the warp until its memory operations are done).
static __device__ __forceinline__ void tilus_mbarrier_arrive_remote_after_reads(u32 bar, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
"#
        .into(),
        MbarrierHelper::ArriveRemote => r#"// One arrival on the barrier at `bar` in block `rank` of this cluster (release at cluster
// scope: what this thread wrote before is visible to the threads that wait there).
static __device__ __forceinline__ void tilus_mbarrier_arrive_remote(u32 bar, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
"#
        .into(),
        MbarrierHelper::WaitRelaxed => r#"// Spins until the phase with parity `phase` has completed; relaxed: no acquire ordering.
static __device__ __forceinline__ void tilus_mbarrier_wait_relaxed(u32 bar, u32 phase) {
  asm volatile(
    "{\n"
    ".reg .pred P;\n"
    "TILUS_WAIT_RELAXED:\n"
    "mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64 P, [%0], %1;\n"
    "@!P bra TILUS_WAIT_RELAXED;\n"
    "}\n" :: "r"(bar), "r"(phase) : "memory");
}
"#
        .into(),
        MbarrierHelper::Wait => r#"// Spins until the phase with parity `phase` of the barrier has completed.
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
    }
}
