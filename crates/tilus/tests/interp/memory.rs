//! Memory: shared buffers that overlap (the planner never does this: the tests move offsets
//! by hand), out-of-bounds global accesses, buffers smaller than their views, and the proxy
//! fence that ordinary shared stores need before an async-proxy read.

use super::seed::run_edited;
use crate::common::interp::{
    assert_noted, expect_fault, interpret, plan_unverified, run, run_planned,
};
use crate::common::scripts::{self, OnesTimesB};
use crate::common::{mark, Body};
use tilus::interp::Fault;
use tilus::interp::{HostBufferMut, InterpValue};
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

/// As in the generated code (one unsigned comparison per coordinate), elements at negative
/// coordinates are outside the view and skipped, like those past its end.
#[test]
fn a_store_at_a_negative_offset_skips_the_rows_outside_the_view() {
    let mut out = vec![0.0f32; 64 * 32];
    interpret::<(i32, PtrMut<f32>)>(
        |k, (m, out)| {
            k.blocks([cdiv(m, 8)]);
            k.warps(1);
            let row = k.let_i32(8 * k.block_idx().x - 1);
            let t = k.register_tensor::<f32>([8, 32], 1.0);
            let g = k.global_view(out, [m, Val::constant(32)]);
            k.store_global(&g, &t, [row, Val::constant(0)]);
        },
        (64, &mut out),
    )
    .unwrap();
    assert!(out[..63 * 32].iter().all(|&x| x == 1.0));
    assert!(out[63 * 32..].iter().all(|&x| x == 0.0));
}

/// A view the launch checks did not compare with its buffer (the plan's pointer rules
/// removed): the store's elements inside the view but past the buffer are a fault.
#[test]
fn a_store_past_the_buffer_is_out_of_bounds() {
    let (program, mut plan) = plan_unverified(&Body::<(i32, PtrMut<f32>)>(|k, (m, out)| {
        k.blocks([1]);
        k.warps(1);
        let t = k.register_tensor::<f32>([8, 32], 1.0);
        let g = k.global_view(out, [m, Val::constant(32)]);
        mark("store", line!(), k.store_global(&g, &t, [0, 0]));
    }));
    plan.pointer_rules.clear();
    let mut out = vec![0.0f32; 100];
    let mut args = [
        InterpValue::Int(8),
        InterpValue::BufferMut(HostBufferMut::new(&mut out)),
    ];
    let r = run_planned(&program, &plan, &mut args);
    expect_fault(
        r,
        Fault::GlobalOutOfBounds,
        "store",
        &[
            "out-of-bounds global access",
            "store_global writes element [4, 0] of view `g0` [8, 32] (thread 0)",
            "a buffer of 100 elements",
            "larger than the buffer",
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
