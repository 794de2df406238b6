//! Emitter for the registers family: `setmaxnreg`, increasing or decreasing from the count
//! every thread was launched with (the kernel is compiled to exactly that count, see
//! [`launch_registers`]).

use super::Emitter;
use crate::ir::{launch_registers, RegistersInst};

pub(super) fn emit(e: &mut Emitter, i: &RegistersInst) {
    match i {
        RegistersInst::SetMax(n) => {
            let start = launch_registers(e.p);
            let action = match n.cmp(&start) {
                std::cmp::Ordering::Less => "dec",
                std::cmp::Ordering::Greater => "inc",
                std::cmp::Ordering::Equal => {
                    e.line(format!("// already {start} registers per thread"));
                    return;
                }
            };
            e.line(format!(
                "asm volatile(\"setmaxnreg.{action}.sync.aligned.u32 {n};\" ::: \"memory\");  \
                 // from {start}"
            ));
        }
        // layout inference's input: nothing to run
        RegistersInst::Layout { .. } => {}
    }
}
