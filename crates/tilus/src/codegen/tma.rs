//! Emitters for TMA copies: one `cp.async.bulk.tensor` per copy, with the tensor map lowering
//! chose passed as a `__grid_constant__` parameter and coordinates innermost first; loads
//! complete on an mbarrier, stores in the issuing thread's bulk group (`commit_group`,
//! `wait_group[.read]`).

use super::{mbarrier, Core, Emitter, Helper};
use crate::ir::{Expr, SharedView, TmaInst};

pub(super) fn emit(e: &mut Emitter, i: &TmaInst) {
    match i {
        TmaInst::GlobalToShared {
            dst,
            offsets,
            bar,
            map,
            multicast,
            ..
        } => {
            let rank = offsets.len();
            let map = map.expect("tensor maps are chosen by lowering");
            let map = e.p.tensor_map(map).name.clone();
            let b = mbarrier::address(e, bar);
            let mask = multicast.as_ref().map(|m| e.expr(m));
            for (dst_name, coords) in boxes(e, dst, offsets) {
                let copy = match &mask {
                    None => {
                        e.use_helper(Helper::Tma(TmaHelper::Load(rank as u8)));
                        format!(
                            "tilus_tma_load_{rank}d({dst_name}, &{map}, {b}, {});",
                            coords.join(", ")
                        )
                    }
                    Some(mask) => {
                        e.use_helper(Helper::Tma(TmaHelper::LoadMulticast(rank as u8)));
                        format!(
                            "tilus_tma_load_{rank}d_multicast({dst_name}, &{map}, {b}, (u16)({mask}), {});",
                            coords.join(", ")
                        )
                    }
                };
                if e.tid().threads == 1 {
                    e.line(copy);
                } else {
                    // a warp issues the copy once, from the lane it elects
                    e.use_helper(Helper::Core(Core::ElectOne));
                    e.line(format!("if (tilus_elect_one()) {copy}"));
                }
            }
        }
        TmaInst::SharedToGlobal {
            src, offsets, map, ..
        } => {
            let rank = offsets.len();
            e.use_helper(Helper::Tma(TmaHelper::Store(rank as u8)));
            let map = map.expect("tensor maps are chosen by lowering");
            let map = e.p.tensor_map(map).name.clone();
            for (src_name, coords) in boxes(e, src, offsets) {
                e.line(format!(
                    "tilus_tma_store_{rank}d(&{map}, {src_name}, {});",
                    coords.join(", ")
                ));
            }
        }
        TmaInst::CommitGroup => {
            e.use_helper(Helper::Tma(TmaHelper::BulkGroup));
            e.line("tilus_bulk_commit_group();");
        }
        TmaInst::WaitGroup { pending, read } => {
            e.use_helper(Helper::Tma(TmaHelper::BulkGroup));
            let f = if *read {
                "tilus_bulk_wait_group_read"
            } else {
                "tilus_bulk_wait_group"
            };
            e.line(format!("{f}<{pending}>();"));
        }
    }
}

/// The boxes of one copy: the tile's first byte and the coordinates (innermost first), or,
/// for a tile stored in column blocks, each block's first byte and coordinates (the blocks
/// `rows × span` bytes apart, `rows` the whole tile's for a view of some of its rows; their
/// columns `col_block` apart).
fn boxes(e: &Emitter, tile: &SharedView, offsets: &[Expr]) -> Vec<(String, Vec<String>)> {
    let base = super::memory::view_base(e, tile);
    let coords: Vec<String> = offsets.iter().rev().map(|o| e.expr(o)).collect();
    let l = super::memory::view_layout(e, tile);
    let (Some(cb), [.., rows, cols]) = (l.col_block, l.shape.as_slice()) else {
        return vec![(base, coords)];
    };
    // a view of some rows (`rows()`) lies in blocks as far apart as the whole tile's rows
    let block_bytes = l.block_rows.unwrap_or(*rows) * cb * l.elem_bytes as i64;
    (0..cols / cb)
        .map(|j| {
            let mut c = coords.clone();
            if j > 0 {
                c[0] = format!("{} + {}", c[0], j * cb);
                (format!("{base} + {}u", j * block_bytes), c)
            } else {
                (base.clone(), c)
            }
        })
        .collect()
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum TmaHelper {
    /// A TMA tile load of the given rank.
    Load(u8),
    /// A TMA tile load of the given rank into several blocks of the cluster.
    LoadMulticast(u8),
    /// A TMA tile store of the given rank.
    Store(u8),
    /// Bulk-group commit and waits.
    BulkGroup,
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
        TmaHelper::LoadMulticast(rank) => {
            let r = rank as usize;
            let params: Vec<String> = (0..r).map(|i| format!("i32 c{i}")).collect();
            let coords: Vec<String> = (0..r).map(|i| format!("%{}", i + 3)).collect();
            let operands: Vec<String> = (0..r).map(|i| format!("\"r\"(c{i})")).collect();
            format!(
                "// TMA multicast: the same box into every block of the cluster whose rank's bit is set in\n\
                 // `mask`, at the same shared address, its bytes on each block's barrier at the same address.\n\
                 static __device__ __forceinline__ void tilus_tma_load_{r}d_multicast(u32 dst, const CUtensorMap* map, u32 bar, u16 mask, {}) {{\n  \
                 asm volatile(\"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {{{}}}], [%2], %{};\"\n    \
                 :: \"r\"(dst), \"l\"(map), \"r\"(bar), {}, \"h\"(mask) : \"memory\");\n}}\n",
                params.join(", "),
                coords.join(", "),
                r + 3,
                operands.join(", ")
            )
        }
        TmaHelper::Store(rank) => {
            let r = rank as usize;
            let params: Vec<String> = (0..r).map(|i| format!("i32 c{i}")).collect();
            let coords: Vec<String> = (0..r).map(|i| format!("%{}", i + 2)).collect();
            let operands: Vec<String> = (0..r).map(|i| format!("\"r\"(c{i})")).collect();
            format!(
                "// TMA: copy a shared tile into the box at (c0 innermost, ...) of the tensor map, in this\n\
                 // thread's bulk group; elements outside the tensor are not written.\n\
                 static __device__ __forceinline__ void tilus_tma_store_{r}d(const CUtensorMap* map, u32 src, {}) {{\n  \
                 asm volatile(\"cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group [%0, {{{}}}], [%1];\"\n    \
                 :: \"l\"(map), \"r\"(src), {} : \"memory\");\n}}\n",
                params.join(", "),
                coords.join(", "),
                operands.join(", ")
            )
        }
        TmaHelper::BulkGroup => r#"// Bulk groups of this thread's TMA stores: commit, then wait until at most N are still
// running (`read`: until at most N still read their shared sources).
static __device__ __forceinline__ void tilus_bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void tilus_bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
template <int N>
static __device__ __forceinline__ void tilus_bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
"#
        .into(),
    }
}
