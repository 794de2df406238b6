//! Rules for moving registers between warp groups: the count `setmaxnreg` accepts, and a
//! record of who asks for what, from which the verifier checks the block's budget once the
//! whole program is seen (`verify/registers.rs`). Whole warp groups and uniform conditions
//! follow from the facts.

use super::Rules;
use crate::ir::registers::MAX_REGISTERS_RANGE;
use crate::ir::{Loc, RegistersInst};
use crate::passes::context::{Checker, LayoutCx, RegisterRequest, Scope};

impl Rules for RegistersInst {
    fn check(&self, c: &mut Checker, loc: Loc, scope: &Scope) {
        match self {
            RegistersInst::SetMax(n) => {
                if !MAX_REGISTERS_RANGE.contains(n) || !n.is_multiple_of(8) {
                    c.err(
                        loc,
                        format!(
                            "set_max_registers({n}): the count must be a multiple of 8 from {} \
                             to {}",
                            MAX_REGISTERS_RANGE.start(),
                            MAX_REGISTERS_RANGE.end()
                        ),
                    );
                    return;
                }
                c.register_requests.push(RegisterRequest {
                    first_thread: scope.base,
                    threads: scope.threads,
                    registers: *n,
                    loc,
                });
            }
            RegistersInst::Layout { tile, layout } => {
                let d = c.p.register(*tile);
                let threads = i64::from(d.group_threads.max(1));
                if layout.shape() != d.shape.as_slice() {
                    let msg = format!(
                        "annotate_layout: a layout of shape {:?} for `{}`, a {:?} tile",
                        layout.shape(),
                        d.name,
                        d.shape
                    );
                    c.err(loc, msg);
                } else if !layout.is_valid() || layout.num_threads() > threads {
                    let msg = format!(
                        "annotate_layout: {layout} does not spread `{}` over its {threads} \
                         threads (every element held, none twice, no more threads than the \
                         group has)",
                        d.name
                    );
                    c.err(loc, msg);
                }
            }
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        if let RegistersInst::Layout { tile, layout } = self {
            cx.require(*tile, layout.clone(), loc, "annotate_layout");
        }
    }
}
