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
            e.use_helper(Helper::MbarrierInit);
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
        MbarrierInst::Arrive(b) => {
            e.use_helper(Helper::MbarrierArrive);
            let a = address(e, b);
            e.line(format!("tilus_mbarrier_arrive({a});"));
        }
        MbarrierInst::ArriveExpectTx { bar, bytes } => {
            e.use_helper(Helper::MbarrierArriveExpectTx);
            let a = address(e, bar);
            let t = format!(
                "tilus_mbarrier_arrive_expect_tx({a}, (u32)({}));",
                e.expr(bytes)
            );
            e.line(t);
        }
        MbarrierInst::Wait { bar, phase } => {
            e.use_helper(Helper::MbarrierWait);
            let a = address(e, bar);
            let t = format!("tilus_mbarrier_wait({a}, (u32)({}));", e.expr(phase));
            e.line(t);
        }
    }
}
