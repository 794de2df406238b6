//! Memory: shared buffers that overlap (the planner never does this: the tests move offsets
//! by hand), out-of-bounds global accesses, buffers smaller than their views, and the proxy
//! fence that ordinary shared stores need before an async-proxy read.

use super::seed::run_edited;
use crate::common::interp::{assert_noted, expect_fault, interpret, run};
use crate::common::mark;
use crate::common::scripts::{self, OnesTimesB};
use tilus::interp::Fault;
use tilus::prelude::*;
use tilus::Error;

#[test]
fn the_planned_offsets_do_not_overlap() {
    run_edited(|_| {}).unwrap();
}

#[test]
fn two_live_tiles_sharing_bytes_overlap() {
    let r = run_edited(|p| p.shareds[1].offset = Some(p.shareds[0].offset.unwrap() + 4096));
    let d = expect_fault(
        r,
        Fault::SharedOverlap,
        "sb",
        &["shared tensor `s1`", "overlaps `s0`", "still alive"],
    );
    assert_noted(&d, "sa");
}

#[test]
fn a_barrier_inside_a_live_tile_overlaps() {
    let r = run_edited(|p| p.barriers[0].offset = Some(p.shareds[1].offset.unwrap() + 64));
    let d = expect_fault(
        r,
        Fault::SharedOverlap,
        "bar",
        &["the mbarriers `bar0`", "overlap shared tensor `s1`"],
    );
    assert_noted(&d, "sb");
}

// ------------------------------------------------------------------------------------------
// Out-of-bounds global accesses.
// ------------------------------------------------------------------------------------------

#[test]
fn a_store_at_a_negative_offset_is_out_of_bounds() {
    let mut out = vec![0.0f32; 64 * 32];
    let r = interpret::<(i32, PtrMut<f32>)>(
        |k, (m, out)| {
            k.blocks([cdiv(m, 8)]);
            k.warps(1);
            let row = k.let_i32(8 * k.block_idx().x - 1);
            let t = k.register_tensor::<f32>([8, 32], 1.0);
            let g = k.global_view(out, [m, Val::constant(32)]);
            #[rustfmt::skip]
            mark("store", line!(), k.store_global(&g, &t, [row, Val::constant(0)]));
        },
        (64, &mut out),
    );
    match &r {
        Err(Error::Interp { block, .. }) => assert_eq!(*block, [0, 0, 0]),
        other => panic!("{other:?}"),
    }
    expect_fault(
        r,
        Fault::GlobalOutOfBounds,
        "store",
        &[
            "out-of-bounds global write",
            "store_global writes element [-1, ",
            "negative",
        ],
    );
}

#[test]
fn a_buffer_smaller_than_its_view_is_an_argument_error_as_on_the_gpu() {
    let mut out = vec![0.0f32; 100];
    let r = interpret::<(i32, PtrMut<f32>)>(
        |k, (m, out)| {
            k.warps(1);
            let t = k.register_tensor::<f32>([8, 32], 1.0);
            let g = k.global_view(out, [m, Val::constant(32)]);
            k.store_global(&g, &t, [0, 0]);
        },
        (8, &mut out),
    );
    match r {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "arg1");
            assert!(
                message.contains("holds 100 elements, the kernel reads 256"),
                "{message}"
            );
        }
        other => panic!("expected Error::Argument, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// The proxy fence: a missing fence is a compile-time diagnostic where the program shows it
// (`compiler/verify/memory.rs`), and an interpreter fault where only the threads at run time
// do (a fence run by other threads than the writers).
// ------------------------------------------------------------------------------------------

#[test]
fn the_interpreter_catches_a_fence_run_by_the_wrong_threads() {
    let b = OnesTimesB::input();
    let mut c = vec![f32::NAN; 64 * 64];
    let err = run(&OnesTimesB { fence: 2 }, (&b[..], &mut c[..])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("fence_proxy_async") && text.contains(scripts::FILE),
        "{text}"
    );
}

#[test]
fn with_the_fence_the_interpreter_computes_the_product() {
    let b = OnesTimesB::input();
    let mut c = vec![f32::NAN; 64 * 64];
    run(&OnesTimesB { fence: 1 }, (&b[..], &mut c[..])).unwrap();
    let want = OnesTimesB::expected(&b);
    for (i, (x, y)) in c.iter().zip(&want).enumerate() {
        assert!((x - y).abs() <= 1e-4, "{i}: {x} vs {y}");
    }
}

// ------------------------------------------------------------------------------------------
// Stages of a staged tile (`sa.at(s)`): loads and stores reach exactly their stage; an index
// outside the stages is a fault (the generated code does not check it).
// ------------------------------------------------------------------------------------------

/// `(stage, dst)`: fills the 3 stages of a `[3, 8, 32]` f32 tile with 1, 2, 3 through
/// `store_shared(sa.at(s))` in a loop, then loads stage `stage` (a runtime argument) and
/// stores it. Marked call: `load`.
fn one_stage(k: &mut Kernel, (stage, dst): Handles<(i32, PtrMut<f32>)>) {
    k.blocks([1]);
    k.warps(2);
    let sa = k.shared_tensor::<f32>([3, 8, 32]);
    k.for_range(0, 3, 1, |k, s| {
        let v = k.register_tensor::<f32>([8, 32], 0.0);
        let filled = k.compute(v + (s + 1));
        k.store_shared(&sa.at(s), &filled);
    });
    k.sync();
    let s = k.let_i32(stage);
    #[rustfmt::skip]
    let r = mark("load", line!(), k.load_shared(&sa.at(s)));
    let g = k.global_view::<f32>(dst, [8, 32]);
    k.store_global(&g, &r, [0, 0]);
}

#[test]
fn loads_and_stores_of_a_stage_reach_that_stage() {
    for stage in 0..3 {
        let mut out = vec![f32::NAN; 8 * 32];
        interpret::<(i32, PtrMut<f32>)>(one_stage, (stage, &mut out[..])).unwrap();
        assert!(
            out.iter().all(|&x| x == (stage + 1) as f32),
            "stage {stage}: {out:?}"
        );
    }
}

#[test]
fn a_stage_index_outside_the_stages_is_out_of_bounds() {
    for stage in [3, -1] {
        let mut out = vec![f32::NAN; 8 * 32];
        let r = interpret::<(i32, PtrMut<f32>)>(one_stage, (stage, &mut out[..]));
        expect_fault(
            r,
            Fault::SharedOutOfBounds,
            "load",
            &[
                &format!("load_shared uses stage {stage} of shared tensor `s0`"),
                "which has 3 stages",
            ],
        );
    }
}
