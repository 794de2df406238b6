//! TMA copies (`tma().global_to_shared`): thread scope, boxes, strides, ranks, types, swizzles.

use super::{tma_setup, InF16};
use crate::common::{at, check};
use tilus::ir::DType;
use tilus::layout::{SharedLayout, Swizzle};
use tilus::prelude::*;

#[test]
fn tma_outside_single_thread() {
    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
    })
    .fails_once(
        "tma.global_to_shared runs in a group of 128 threads: each of them would issue its own; \
         wrap it in single_thread()",
    );

    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        k.single_warp(0, |k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared runs in a group of 32 threads");
}

#[test]
fn tma_box_dimension_over_256() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4096, 4096]);
        let s: SharedTensor<f16> = k.shared_tensor([512, 8]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once(
        "tma.global_to_shared: tile `s0` is 512 long in dimension 0; a TMA box allows at most 256",
    );
}

#[test]
fn tma_rows_that_are_not_a_multiple_of_16_bytes() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4096, 4096]);
        let s: SharedTensor<f16> = k.shared_tensor([64, 4]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared: the tile's rows are 8 bytes; TMA needs a multiple of 16");
}

#[test]
fn tma_global_stride_that_is_not_a_multiple_of_16_bytes() {
    check::<(i32, Const<i32>, Ptr<f16>)>(|k, (m, kk, a)| {
        k.warps(1);
        let g = k.global_view(a, [m, kk]);
        let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .consts(&[4095])
    .fails_once(
        "tma.global_to_shared: view `g0` has a stride of 8190 bytes in dimension 0; TMA needs \
         strides that are multiples of 16 bytes (pad rows to a multiple of 8 elements)",
    );

    // 3-D: only the stride of dimension 1 (4095 elements) is misaligned
    check::<(Const<i32>, Ptr<f16>)>(|k, (n, a)| {
        k.warps(1);
        let g = k.global_view(a, [Scalar::from(8), 64.into(), n.into()]);
        let s: SharedTensor<f16> = k.shared_tensor([1, 16, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0, 0], b[0]));
        });
    })
    .consts(&[4095])
    .fails_once("has a stride of 8190 bytes in dimension 1");

    // an odd extent outside the innermost dimension is fine: 4095 * 64 * 2 bytes
    check::<(Const<i32>, Ptr<f16>)>(|k, (n, a)| {
        k.warps(1);
        let g = k.global_view(a, [Scalar::from(8), n.into(), 64.into()]);
        let s: SharedTensor<f16> = k.shared_tensor([1, 16, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.tma().global_to_shared(&g, &s, [0, 0, 0], b[0]);
        });
    })
    .consts(&[4095])
    .compiles("strides of 4095*64*2 and 64*2 bytes are multiples of 16");
}

#[test]
fn tma_rank_mismatch() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4096, 4096]);
        let s: SharedTensor<f16> = k.shared_tensor([64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared: view `g0` has 2 dimensions, tile `s0` 1 and the offsets 2");
}

/// `global_to_shared<T>` takes a view and a tile of the same `T`; edit the IR.
#[test]
fn tma_between_element_types() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .edit(|p| p.shareds[0].dtype = DType::BF16)
    .fails_once("tma.global_to_shared: f16 view into a bf16 tile");
}

/// Shared layouts cannot be pinned from the builder and inference always picks a swizzle
/// whose span the rows fit, so this rule is only reachable by editing the IR.
#[test]
fn tma_rows_wider_than_the_swizzle_span() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .edit(|p| {
        p.shareds[0].layout = Some(SharedLayout {
            shape: vec![64, 64],
            elem_bytes: 2,
            swizzle: Swizzle::B64,
        })
    })
    .fails_once(
        "tma.global_to_shared: tile `s0` has 128-byte rows, wider than its 64B swizzle allows",
    );
}
