//! Emitters for TMA copies: one `cp.async.bulk.tensor` per copy, with the tensor map lowering
//! chose passed as a `__grid_constant__` parameter and coordinates innermost first.

use super::{mbarrier, Emitter, Helper};
use crate::ir::TmaInst;

pub(super) fn emit(e: &mut Emitter, i: &TmaInst) {
    match i {
        TmaInst::GlobalToShared {
            dst,
            offsets,
            bar,
            map,
            ..
        } => {
            let rank = offsets.len();
            e.use_helper(Helper::Tma(TmaHelper::Load(rank as u8)));
            let map = map.expect("tensor maps are chosen by lowering");
            let map = e.p.tensor_map(map).name.clone();
            let coords: Vec<String> = offsets.iter().rev().map(|o| e.expr(o)).collect();
            let b = mbarrier::address(e, bar);
            let dst_name = e.p.shared(*dst).name.clone();
            e.line(format!(
                "tilus_tma_load_{rank}d({dst_name}, &{map}, {b}, {});",
                coords.join(", ")
            ));
        }
    }
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum TmaHelper {
    /// A TMA tile load of the given rank.
    Load(u8),
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: TmaHelper) -> String {
    match h {
        TmaHelper::Load(rank) => {
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
    }
}
