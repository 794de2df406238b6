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
use tilus::interp::{HostBuffer, HostBufferMut, InterpValue};
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

// ------------------------------------------------------------------------------------------
// Global memory through registers: strided views, `load_global`, atomics.
// ------------------------------------------------------------------------------------------

use crate::common::scripts::global::{
    small_ints, ColumnStats, LastBlockSums, MaskedLoad, SegmentSums, SharedBytes, SplitKMatmul,
    SplitSum, StridedCopy, StridedTma, SwapTiles, Tickets,
};
use half::f16;

#[test]
fn a_strided_copy_through_registers_is_exact_at_ragged_sizes() {
    for column_major in [false, true] {
        for (m, n, ld, rows, cols) in StridedCopy::SHAPES {
            let s = StridedCopy {
                rows,
                cols,
                column_major,
            };
            let src = s.input(m, n, ld);
            let nan = f16::from_f32(f32::NAN);
            let mut dst = vec![nan; ld * m];
            run(&s, (m as i32, n as i32, ld as i32, &src[..], &mut dst[..])).unwrap();
            let want = s.expected(m, n, ld, &src, nan);
            for (i, (x, y)) in dst.iter().zip(&want).enumerate() {
                assert!(
                    x.to_bits() == y.to_bits(),
                    "{s:?} {m}x{n} ld {ld}: element {i}: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn a_masked_load_fills_outside_the_view() {
    let src = small_ints(40 * 64, 3);
    for (m, n, om, q) in [
        (40, 61, 30, 13),
        (40, 61, -3, -1),
        (10, 7, 0, 0),
        (40, 64, 5, 9),
    ] {
        let s = MaskedLoad { fill: -7 };
        let mut dst = vec![f32::NAN; 16 * 32];
        run(&s, (m, n, 64, om, q, &src[..], &mut dst[..])).unwrap();
        assert_eq!(
            dst,
            s.expected(m, n, 64, om, q, &src),
            "{m}x{n} at ({om}, 4*{q})"
        );
    }
}

#[test]
fn atomic_adds_of_many_blocks_sum_split_k_style() {
    for (splits, m, n, rows, cols) in [(3, 50, 70, 16, 32), (5, 64, 64, 32, 64), (1, 9, 5, 8, 8)] {
        let src = small_ints(splits * m * n, 7);
        let init = small_ints(m * n, 8);
        let mut dst = init.clone();
        let s = SplitSum { rows, cols };
        run(
            &s,
            (splits as i32, m as i32, n as i32, &src[..], &mut dst[..]),
        )
        .unwrap();
        assert_eq!(dst, SplitSum::expected(splits, m, n, &src, &init), "{s:?}");
    }
}

#[test]
fn atomic_add_max_and_min_combine_columns_through_zero_strides() {
    for (m, n, rows, cols) in [(70, 45, 16, 32), (128, 64, 64, 64)] {
        let src = small_ints(m * n, 11);
        let mut sums = vec![0.0f32; n];
        let mut maxs = vec![f32::NEG_INFINITY; n];
        let mut mins = vec![f32::INFINITY; n];
        let s = ColumnStats { rows, cols };
        let args = (
            m as i32,
            n as i32,
            &src[..],
            &mut sums[..],
            &mut maxs[..],
            &mut mins[..],
        );
        run(&s, args).unwrap();
        let (ws, wx, wn) = ColumnStats::expected(m, n, &src);
        assert_eq!((sums, maxs, mins), (ws, wx, wn), "{s:?}");
    }
}

/// The last block to take a ticket sums what every block stored before its ticket (the
/// blocks fence between their stores and their tickets): the column sums, exactly.
#[test]
fn the_block_with_the_last_ticket_sums_every_block_s_row() {
    let nb = 13;
    let rows: Vec<i32> = (0..nb * 32)
        .map(|i| (i * 7919 % 1000) as i32 - 500)
        .collect();
    let (mut work, mut ticket, mut out) = (vec![0; nb * 32], vec![0], vec![-1; 32]);
    let args = (
        nb as i32,
        &rows[..],
        &mut work[..],
        &mut ticket[..],
        &mut out[..],
    );
    run(&LastBlockSums, args).unwrap();
    assert_eq!(out, LastBlockSums::reference(&rows));
    assert_eq!(ticket, vec![nb as i32]);
}

/// Bytes through shared memory and back in another layout: every byte where it was.
#[test]
fn bytes_through_shared_memory_keep_their_places() {
    let x: Vec<u8> = (0..16 * 32).map(|i| (i * 37 % 251) as u8).collect();
    for runs in [false, true] {
        let mut out = vec![0u8; 16 * 32];
        run(&SharedBytes { runs }, (&x[..], &mut out[..])).unwrap();
        assert_eq!(out, x, "runs: {runs}");
    }
}

/// `load_global_scalar` reads the segments' bounds and weights the host left in memory
/// (segments of 0, 1, 31, 32, 33 and 100 elements), and 0 past the view's end.
#[test]
fn scalars_read_from_memory_bound_each_block_s_segment() {
    let lens = [5, 0, 1, 31, 32, 33, 100, 7];
    let (offsets, x, weights) = SegmentSums::inputs(&lens);
    let n = x.len();
    let mut out = vec![f32::NAN; lens.len() + 1];
    let segs = lens.len() as i32;
    run(
        &SegmentSums,
        (
            segs,
            n as i32,
            &x[..],
            &offsets[..],
            &weights[..],
            &mut out[..],
        ),
    )
    .unwrap();
    assert_eq!(out, SegmentSums::reference(&x, &offsets, &weights));
}

/// Scalar atomics return the old value; the interpreter runs blocks one after another when
/// old values are used, so the tickets come out in block order.
#[test]
fn scalar_atomics_hand_out_tickets_in_block_order() {
    let nb = 37;
    let mut counter = vec![0, -1000, 1000];
    let mut order = vec![-1; nb];
    let mut flag = vec![0u32];
    let mut cas_old = vec![u32::MAX; nb];
    let args = (
        nb as i32,
        &mut counter[..],
        &mut order[..],
        &mut flag[..],
        &mut cas_old[..],
    );
    run(&Tickets, args).unwrap();
    assert_eq!(counter, vec![nb as i32, nb as i32 - 1, 0]);
    assert_eq!(order, (0..nb as i32).collect::<Vec<_>>());
    assert_eq!(flag, vec![1]);
    assert_eq!(cas_old[0], 0);
    assert!(cas_old[1..].iter().all(|&x| x == 1), "{cas_old:?}");
}

#[test]
fn tile_exchange_and_compare_and_swap_return_the_old_values() {
    let (m, n) = (40usize, 70usize);
    let x0: Vec<i32> = (0..m * n).map(|i| i as i32).collect();
    let y: Vec<i32> = (0..m * n).map(|i| -(i as i32) - 1).collect();
    let z0 = small_ints(m * n, 5);
    // every other element matches
    let expect: Vec<f32> = z0
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 0 { v } else { v + 0.5 })
        .collect();
    let val = small_ints(m * n, 6);
    let (mut x, mut xo) = (x0.clone(), vec![0; m * n]);
    let (mut z, mut zo) = (z0.clone(), vec![f32::NAN; m * n]);
    let args = (
        m as i32,
        n as i32,
        &mut x[..],
        &y[..],
        &mut xo[..],
        &mut z[..],
        &expect[..],
        &val[..],
        &mut zo[..],
    );
    run(&SwapTiles, args).unwrap();
    assert_eq!(x, y);
    assert_eq!(xo, x0);
    assert_eq!(zo, z0);
    for i in 0..m * n {
        let want = if i % 2 == 0 { val[i] } else { z0[i] };
        assert_eq!(z[i], want, "element {i}");
    }
}

/// Within one block, a load after a store or an atomic of the same elements sees them (a
/// block's own writes are visible to its later reads).
#[test]
fn a_block_reads_its_own_earlier_writes_and_atomics() {
    let mut buf = vec![1.0f32; 64];
    let mut out = vec![0.0f32; 64];
    interpret::<(PtrMut<f32>, PtrMut<f32>)>(
        |k, (buf, out)| {
            k.blocks([1]);
            k.warps(1);
            let g = k.global_view(buf, [64]);
            let twos = k.register_tensor::<f32>([64], 2.0);
            k.store_global(&g, &twos, [0]);
            k.atomic_add(&g, &twos, [0]);
            let t = k.load_global(&g, [0], [64]);
            let o = k.global_view(out, [64]);
            k.store_global(&o, &t, [0]);
        },
        (&mut buf, &mut out),
    )
    .unwrap();
    assert!(buf.iter().all(|&x| x == 4.0), "{buf:?}");
    assert!(out.iter().all(|&x| x == 4.0), "{out:?}");
}

#[test]
fn a_load_past_the_buffer_is_out_of_bounds() {
    let (program, mut plan) =
        plan_unverified(&Body::<(i32, Ptr<f32>, PtrMut<f32>)>(|k, (m, src, dst)| {
            k.blocks([1]);
            k.warps(1);
            let g = k.global_view(src, [m, Val::constant(32)]);
            #[rustfmt::skip]
            let t = mark("load", line!(), k.load_global(&g, [0, 0], [8, 32]));
            let d = k.global_view(dst, [8, 32]);
            k.store_global(&d, &t, [0, 0]);
        }));
    plan.pointer_rules.clear();
    let src = vec![0.0f32; 100];
    let mut dst = vec![0.0f32; 256];
    let mut args = [
        InterpValue::Int(8),
        InterpValue::Buffer(HostBuffer::new(&src)),
        InterpValue::BufferMut(HostBufferMut::new(&mut dst)),
    ];
    let r = run_planned(&program, &plan, &mut args);
    expect_fault(
        r,
        Fault::GlobalOutOfBounds,
        "load",
        &["load_global reads element", "a buffer of 100 elements"],
    );
}

#[test]
fn an_atomic_past_the_buffer_is_out_of_bounds() {
    let (program, mut plan) = plan_unverified(&Body::<(i32, PtrMut<i32>)>(|k, (m, dst)| {
        k.blocks([1]);
        k.warps(1);
        let t = k.register_tensor::<i32>([8, 32], 1.0);
        let g = k.global_view(dst, [m, Val::constant(32)]);
        mark("add", line!(), k.atomic_add(&g, &t, [0, 0]));
    }));
    plan.pointer_rules.clear();
    let mut dst = vec![0i32; 100];
    let mut args = [
        InterpValue::Int(8),
        InterpValue::BufferMut(HostBufferMut::new(&mut dst)),
    ];
    let r = run_planned(&program, &plan, &mut args);
    expect_fault(
        r,
        Fault::GlobalOutOfBounds,
        "add",
        &["atomic_add updates element", "larger than the buffer"],
    );
}

/// The buffer of a strided view must hold its largest offset plus one, and runtime strides
/// must not be negative: argument errors before the run, as before a GPU launch.
#[test]
fn a_strided_view_needs_its_largest_offset_and_nonnegative_strides() {
    type A = (i32, i32, Ptr<f32>, PtrMut<f32>);
    let body: fn(&mut Kernel, Handles<A>) = |k, (m, ld, src, dst)| {
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view_strided(src, [m, Val::constant(8)], (ld, 1));
        let t = k.load_global(&g, [0, 0], [4, 8]);
        let d = k.global_view(dst, [4, 8]);
        k.store_global(&d, &t, [0, 0]);
    };
    let src = vec![0.0f32; 100];
    let mut dst = vec![0.0f32; 32];
    // 1 + 3 * 40 + 7 = 128 elements
    match interpret::<A>(body, (4, 40, &src[..], &mut dst[..])) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "arg2");
            assert!(
                message.contains("holds 100 elements, the kernel reads 128"),
                "{message}"
            );
        }
        other => panic!("expected Error::Argument, got {other:?}"),
    }
    match interpret::<A>(body, (4, -8, &src[..], &mut dst[..])) {
        Err(Error::Argument { message, .. }) => assert!(
            message.contains("stride 0 of view `g0` is -8; strides must not be negative"),
            "{message}"
        ),
        other => panic!("expected Error::Argument, got {other:?}"),
    }
    interpret::<A>(body, (4, 30, &src[..], &mut dst[..])).unwrap();
    assert_eq!(dst, vec![0.0; 32]);
}

/// TMA reads a strided view through its real strides (a sub-matrix of a matrix with a leading
/// dimension), and a runtime stride TMA cannot take is an argument error.
#[test]
fn tma_copies_through_a_strided_view() {
    let src: Vec<f32> = (0..8 * 24).map(|i| i as f32).collect();
    let mut dst = vec![f32::NAN; 8 * 16];
    run(&StridedTma, (6, 24, &src[..], &mut dst[..])).unwrap();
    assert_eq!(dst, StridedTma::expected(6, 24));
    match run(&StridedTma, (6, 22, &src[..], &mut dst[..])) {
        Err(Error::Argument { message, .. }) => assert!(
            message.contains("a row stride of 88 bytes is not a multiple of 16"),
            "{message}"
        ),
        other => panic!("expected Error::Argument, got {other:?}"),
    }
}

/// The split-K matmul: operands loaded straight into the mma fragments' layouts, partial
/// products added into the output by every split, exact against the CPU reference.
#[test]
fn a_split_k_matmul_adds_its_partial_products_atomically() {
    for (m, n, kk) in [(64usize, 128usize, 96usize), (100, 130, 64), (64, 128, 40)] {
        let (a, b) = crate::common::inputs::matmul_inputs(m, n, kk);
        let init = small_ints(m * n, 2);
        let mut c = init.clone();
        let args = (m as i32, n as i32, kk as i32, &a[..], &b[..], &mut c[..]);
        run(&SplitKMatmul, args).unwrap();
        let want = SplitKMatmul::expected(m, n, kk, &a, &b, &init);
        assert_eq!(c, want, "{m}x{n}x{kk}");
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

/// Scatters: rows stored at the rows a permutation gives them (those sent outside the view
/// skipped), and a histogram by atomic additions at the bins a tile gives each element.
#[test]
fn scatters_store_and_add_at_the_coordinates_their_tiles_hold() {
    use crate::common::inputs::random_f32;
    use crate::common::scripts::global::Scatters;
    for s in Scatters::FORMS {
        let m = 3 * s.rows as usize - 5;
        let n = s.cols as usize;
        let x = random_f32(m * n, 21);
        // a reversal, with every seventh row sent past the view
        let perm: Vec<i32> = (0..m)
            .map(|i| {
                if i % 7 == 3 {
                    (m + 2) as i32
                } else {
                    (m - 1 - i) as i32
                }
            })
            .collect();
        let bins: Vec<i32> = (0..m * n).map(|i| ((i * 7919) % 16) as i32).collect();
        let (mut out, mut hist) = (vec![f32::NAN; m * n], vec![0.0f32; 16]);
        run(
            &s,
            (
                m as i32,
                &x[..],
                &perm[..],
                &bins[..],
                &mut out[..],
                &mut hist[..],
            ),
        )
        .unwrap();
        let (want, want_hist) = s.expected(&x, &perm, &bins, m);
        let same = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
        assert!(out.iter().zip(&want).all(|(a, b)| same(*a, *b)), "{s:?}");
        for (g, w) in hist.iter().zip(&want_hist) {
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "{s:?}: {g} vs {w}"
            );
        }
    }
}
