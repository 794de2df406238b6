//! TMA copies (`tma().global_to_shared`, `shared_to_global`, `commit_group`, `wait_group`):
//! thread scope, boxes, strides, ranks, types, swizzles; a store's published, unwritten and
//! waited-for source.

use super::{tma_setup, InF16};
use crate::common::scripts::{Epilogue, EpilogueBug};
use crate::common::{at, check, check_script, marked};
use tilus::ir::DType;
use tilus::layout::{SharedLayout, Swizzle};
use tilus::prelude::*;

#[test]
fn tma_outside_one_thread_or_one_warp() {
    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
    })
    .fails_once(
        "tma.global_to_shared is issued once, by one thread or by one warp (an elected lane); \
         the current group has 128 threads starting at thread 0: wrap it in single_thread() or \
         single_warp(..)",
    );

    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        k.thread_group(16, 32, |k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("the current group has 32 threads starting at thread 16");

    // a store is a bulk group's: one thread only
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, _) = tma_setup(k, a);
        at(line!(), k.tma().shared_to_global(&s, &g, [0, 0]));
    })
    .fails("tma.shared_to_global runs in a group of 32 threads: each of them would issue its own");
}

/// A warp elects its issuing lane with `elect.sync`, which needs the whole warp: not under
/// a condition that may split it.
#[test]
fn a_warps_tma_under_a_divergent_condition() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        let flag = k.var_i32(0);
        k.single_thread(|k| k.assign(flag, 1));
        k.if_(flag.gt(0), |k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared issued by a warp elects one of its lanes, which needs the whole warp at once");
}

/// The whole warp may issue: one elected lane copies, once.
#[test]
fn a_warp_issues_a_tma_copy_once() {
    check::<InF16>(|k, (a,)| {
        k.warps(2);
        let (g, s, b) = tma_setup(k, a);
        k.single_warp(1, |k| {
            k.single_thread(|k| k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes()));
            k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .compiles("a warp's copy is issued by one lane, and its bytes match the declaration");
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
        let s: SharedTensor<f16> = k.shared_tensor([2, 8, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared: view `g0` has 2 dimensions, tile `s0` 3 and the offsets 2");
}

/// A tile of fewer dimensions than its view is a box one element deep in the view's leading
/// dimensions: one row of a matrix, one matrix of a batch.
#[test]
fn a_tile_may_leave_out_leading_dimensions_of_its_view() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4096, 4096]);
        let s: SharedTensor<f16> = k.shared_tensor([64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [3, 0], b[0]);
        });
        k.mbarrier().wait(b[0], 0u32);
    })
    .compiles("a [64] box of row 3");
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
            stage_stride: None,
            col_block: None,
            block_rows: None,
        })
    })
    .fails_once(
        "tma.global_to_shared: tile `s0` has 128-byte rows, wider than its 64B swizzle allows",
    );
}

// ------------------------------------------------------------------------------------------
// TMA stores (`tma().shared_to_global`, `commit_group`, `wait_group`).
// ------------------------------------------------------------------------------------------

/// The diagnostics of the epilogue with `bug`, which must not compile.
fn epilogue_diagnostics(bug: EpilogueBug) -> crate::common::Diagnostics {
    check_script(Epilogue { bug }).diagnostics()
}

/// The diagnostic containing `phrase`; it must point at the call marked `key` in the scripts.
#[track_caller]
fn at_mark(d: &[tilus::Diagnostic], phrase: &str, key: &str) -> tilus::Diagnostic {
    let hit = d
        .iter()
        .find(|d| d.message.contains(phrase))
        .unwrap_or_else(|| panic!("no diagnostic contains {phrase:?}: {d:#?}"))
        .clone();
    let m = marked(key).unwrap_or_else(|| panic!("`{key}` was not marked"));
    assert_eq!((hit.loc.file, hit.loc.line), (m.file, m.line), "{hit}");
    hit
}

#[test]
fn tma_store_of_tiles_written_without_a_proxy_fence() {
    let d = epilogue_diagnostics(EpilogueBug::NoFence);
    let hit = at_mark(&d, "written by store_shared at", "store");
    assert!(
        hit.message
            .starts_with("tma.shared_to_global reads `s_out`"),
        "{hit}"
    );
    let written = marked("store_shared").unwrap();
    assert!(hit.message.contains(&written.loc()), "{hit}");
}

#[test]
fn tma_store_source_written_before_the_wait() {
    let d = epilogue_diagnostics(EpilogueBug::WriteBeforeWait);
    let hit = at_mark(
        &d,
        "is written while the tma.shared_to_global at",
        "rewrite",
    );
    assert!(
        hit.message.contains(&marked("store").unwrap().loc()),
        "{hit}"
    );
    assert!(hit.message.contains("tma.wait_group(..)"), "{hit}");
}

#[test]
fn tma_store_never_waited_for() {
    let d = epilogue_diagnostics(EpilogueBug::NoWait);
    let hit = at_mark(
        &d,
        "the kernel ends while this tma.shared_to_global may still be reading shared tensor `s_out`",
        "store",
    );
    assert!(hit.message.contains("tma.wait_group(..)"), "{hit}");
}

#[test]
fn tma_store_outside_single_thread() {
    let d = epilogue_diagnostics(EpilogueBug::WholeBlock);
    at_mark(
        &d,
        "tma.shared_to_global runs in a group of 128 threads",
        "store",
    );
}

#[test]
fn tma_store_through_a_read_only_pointer() {
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (a, _)| {
        k.warps(1);
        let ro = k.global_view::<f16>(a, [64, 64]);
        let s = k.shared_tensor::<f16>([64, 64]);
        k.single_thread(|k| {
            at(line!(), k.tma().shared_to_global(&s, &ro, [0, 0]));
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    })
    .fails("tma.shared_to_global writes through `arg0`, a read-only Ptr; declare it PtrMut");
}

#[test]
fn tma_store_dtypes_and_ranks_agree() {
    // the typed builder cannot mix element types: the traced program is edited
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (_, b)| {
        k.warps(1);
        let rw = k.global_view::<f32>(b, [64, 64]);
        let s = k.shared_tensor::<f32>([32, 32]);
        k.single_thread(|k| {
            at(line!(), k.tma().shared_to_global(&s, &rw, [0, 0]));
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    })
    .edit(|p| p.shareds[0].dtype = DType::F16)
    .fails("tma.shared_to_global: f16 tile into a f32 view");
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (_, b)| {
        k.warps(1);
        let flat = k.global_view::<f32>(b, [4096]);
        let s = k.shared_tensor::<f32>([32, 32]);
        k.single_thread(|k| {
            at(line!(), k.tma().shared_to_global(&s, &flat, [0]));
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    })
    .fails("tma.shared_to_global: view `g0` has 1 dimensions, tile `s0` 2 and the offsets 1");
}

#[test]
fn tma_store_commits_and_waits_run_in_one_thread() {
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (_, b)| {
        k.warps(1);
        let rw = k.global_view::<f32>(b, [64, 64]);
        let s = k.shared_tensor::<f32>([32, 32]);
        k.single_thread(|k| k.tma().shared_to_global(&s, &rw, [0, 0]));
        at(line!(), k.tma().commit_group());
        k.single_thread(|k| k.tma().wait_group(0));
    })
    .fails("tma.commit_group runs in a group of 32 threads");
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (_, b)| {
        k.warps(1);
        let rw = k.global_view::<f32>(b, [64, 64]);
        let s = k.shared_tensor::<f32>([32, 32]);
        k.single_thread(|k| {
            k.tma().shared_to_global(&s, &rw, [0, 0]);
            k.tma().commit_group();
        });
        at(line!(), k.tma().wait_group(0));
    })
    .fails("tma.wait_group runs in a group of 32 threads");
}

#[test]
fn tma_store_correct_variants_compile() {
    for bug in [
        EpilogueBug::None,
        EpilogueBug::ReuseAfterReadWait,
        EpilogueBug::FreeBeforeWait,
    ] {
        check_script(Epilogue { bug }).compiles("the epilogue is correct");
    }
}

// ------------------------------------------------------------------------------------------
// TMA copies of one stage (`sa.at(s)`): the box is the stage; bytes, padded stages, and the
// static rules that meet stages only when they are the same for certain.
// ------------------------------------------------------------------------------------------

#[test]
fn tma_of_a_stage_takes_the_stages_rank() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [2, 64, 64]);
        let s = k.shared_tensor::<f16>([2, 64, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            let t = k.tma();
            at(line!(), t.global_to_shared(&g, &s.at(0), [0, 0], b[0]));
        });
    })
    .fails_once(
        "tma.global_to_shared: view `g0` has 3 dimensions, tile `s0[0]` 2 and the offsets 2",
    );
}

#[test]
fn tma_of_a_stage_delivers_the_stages_bytes() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4096, 4096]);
        let s = k.shared_tensor::<f16>([2, 64, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes()));
            k.tma().global_to_shared(&g, &s.at(1), [0, 0], b[0]);
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .fails_once(
        "arrive_and_expect_tx declares 16384 bytes on `bar0[0]`, but the TMA copies issued on it \
         before the wait deliver 8192 bytes",
    );
}

#[test]
fn tma_of_a_whole_tile_whose_stages_are_padded() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4, 64]);
        let whole = k.global_view(a, [2, 4, 64]);
        // 512-byte stages of 128-byte rows: padded to the 1024 bytes of the 128B swizzle
        let s = k.shared_tensor::<f16>([2, 4, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(b[0], 3 * s.at(0).nbytes());
            k.tma().global_to_shared(&g, &s.at(0), [0, 0], b[0]);
            let t = k.tma();
            at(line!(), t.global_to_shared(&whole, &s, [0, 0, 0], b[0]));
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .fails_once("tma.global_to_shared: `s0` pads its stages to 1024 bytes");
}

/// Stages 0 and 1 of a `[2, 32, 64]` f16 tile, stored to global memory with TMA; the second
/// ordinary store writes stage `second` while the TMA store of stage 0 may still read it.
fn staged_stores(k: &mut Kernel, o: PtrVal<f16>, second: i32) {
    k.blocks([1]);
    k.warps(4);
    let sc = k.shared_tensor::<f16>([2, 32, 64]);
    let g = k.global_view(o, [64, 64]);
    let r = k.register_tensor::<f16>([32, 64], 1.0);
    k.store_shared(&sc.at(0), &r);
    k.fence_proxy_async();
    k.sync();
    k.single_thread(|k| {
        k.tma().shared_to_global(&sc.at(0), &g, [0, 0]);
        k.tma().commit_group();
    });
    at(line!(), k.store_shared(&sc.at(second), &r));
    k.fence_proxy_async();
    k.sync();
    k.single_thread(|k| {
        k.tma().shared_to_global(&sc.at(1), &g, [32, 0]);
        k.tma().commit_group();
        k.tma().wait_group(0);
    });
}

#[test]
fn writing_the_stage_a_tma_store_reads() {
    check::<(PtrMut<f16>,)>(|k, (o,)| staged_stores(k, o, 0))
        .fails_once("`s0[0]` is written while the tma.shared_to_global at");
    check::<(PtrMut<f16>,)>(|k, (o,)| staged_stores(k, o, 1))
        .compiles("another stage may be written while a TMA store reads stage 0");
}

#[test]
fn tma_store_of_a_stage_written_without_a_proxy_fence() {
    check::<(PtrMut<f16>,)>(|k, (o,)| {
        k.blocks([1]);
        k.warps(4);
        let sc = k.shared_tensor::<f16>([2, 32, 64]);
        let g = k.global_view(o, [64, 64]);
        let r = k.register_tensor::<f16>([32, 64], 1.0);
        k.store_shared(&sc.at(0), &r);
        k.fence_proxy_async();
        k.store_shared(&sc.at(1), &r);
        k.sync();
        k.single_thread(|k| {
            // stage 0 was published; stage 1 was not
            k.tma().shared_to_global(&sc.at(0), &g, [0, 0]);
            at(line!(), k.tma().shared_to_global(&sc.at(1), &g, [32, 0]));
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    })
    .fails_once("tma.shared_to_global reads `s0`, written by store_shared at");
}

#[test]
#[rustfmt::skip]
fn a_multicast_needs_clusters() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes());
            at(line!(), k.tma().global_to_shared_multicast(&g, &s, [0, 0], b[0], 1));
        });
    })
    .fails("tma.global_to_shared_multicast in a kernel without clusters");
}
