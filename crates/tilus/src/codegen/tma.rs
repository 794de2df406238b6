//! Emitters for TMA copies: one `cp.async.bulk.tensor` per copy, with the tensor map passed as
//! a `__grid_constant__` parameter and coordinates innermost first.

use super::{mbarrier, Emitter, Helper};
use crate::ir::TmaInst;

pub(super) fn emit(e: &mut Emitter, i: &TmaInst) {
    let TmaInst::GlobalToShared {
        src,
        dst,
        offsets,
        bar,
    } = i;
    let rank = offsets.len();
    e.use_helper(Helper::TmaLoad(rank as u8));
    let map = crate::passes::lower::tensor_map_name(e.p, *src, *dst);
    let coords: Vec<String> = offsets.iter().rev().map(|o| e.expr(o)).collect();
    let b = mbarrier::address(e, bar);
    let dst_name = e.p.shared(*dst).name.clone();
    e.line(format!(
        "tilus_tma_load_{rank}d({dst_name}, &{map}, {b}, {});",
        coords.join(", ")
    ));
}
