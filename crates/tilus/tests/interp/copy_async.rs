//! Copies by threads (`copy_async`): boxes of views with any pitch and offset land exactly,
//! zeros outside the view; a ring of stages sums rows while chunks are in flight; the copy's
//! hazards are found — a read before the wait (verifier and interpreter), a missing `sync`
//! after it (the interpreter's race detector), a kernel that ends with a copy in flight, a
//! wait that covers one group too few — and the vector width follows the view's alignment.

use crate::common::inputs::{fresh_seed, random_f32};
use crate::common::interp::{assert_noted, expect_fault, plan_unverified, run, run_planned};
use crate::common::scripts::copy_async::{CopyBox, CopyBug, RingBug, RingRowSums};
use crate::common::{diagnostics_of, marked};
use half::f16;
use tilus::interp::{Fault, InterpValue};
use tilus::ir::{CpAsyncInst, Inst, StmtKind};

fn source(s: &CopyBox) -> Vec<f16> {
    let x = random_f32(s.src_len(), fresh_seed());
    x.iter().map(|&v| f16::from_f32(v)).collect()
}

#[test]
fn boxes_land_exactly_with_zeros_outside_the_view() {
    for s in CopyBox::CASES {
        let src = source(&s);
        let mut out = vec![f16::NAN; (s.rows * s.cols) as usize];
        run(&s, (&src[..], &mut out[..])).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&s.expected(&src)), "{s:?}");
    }
}

/// The bytes per copy lowering chose for each case.
fn widths(s: &CopyBox) -> Vec<u32> {
    let p = tilus::trace(s, &[]).unwrap();
    let (p, _) = tilus::passes::compile_program(p).unwrap();
    let mut out = vec![];
    p.walk(&mut |st| {
        if let StmtKind::Inst(Inst::CpAsync(CpAsyncInst::Copy { vector, .. })) = &st.kind {
            out.push(vector.unwrap() * 2);
        }
    });
    out
}

#[test]
fn the_bytes_per_copy_follow_the_views_alignment() {
    let [aligned, pitch_1000, odd, pitch_102, _, _] = CopyBox::CASES;
    // rows of 16-byte multiples at a column that keeps them: whole 16-byte copies
    assert_eq!(widths(&aligned), [16]);
    assert_eq!(widths(&pitch_1000), [16]);
    // a pitch of 1001 elements keeps nothing above one element (2 bytes: ordinary copies)
    assert_eq!(widths(&odd), [2]);
    // 204-byte rows keep 4 bytes
    assert_eq!(widths(&pitch_102), [4]);
}

#[test]
fn the_ring_sums_rows_while_chunks_are_in_flight() {
    for stages in [2, 3, 4] {
        for k_size in [1, 31, 32, 100, 257] {
            let rows = RingRowSums::ROWS as usize;
            let x = random_f32(rows * k_size, fresh_seed());
            let mut out = vec![f32::NAN; rows];
            let s = RingRowSums::new(stages);
            run(&s, (k_size as i32, &x[..], &mut out[..])).unwrap();
            let want = RingRowSums::expected(&x, k_size);
            for (r, (g, w)) in out.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "stages {stages}, k {k_size}, row {r}: {g} vs {w}"
                );
            }
        }
    }
}

/// Runs a planted bug without the verifier.
fn unverified_box(s: &CopyBox) -> tilus::Result<tilus::interp::Report> {
    let (p, plan) = plan_unverified(s);
    let src = source(s);
    let mut out = vec![f16::ZERO; (s.rows * s.cols) as usize];
    let mut args = vec![InterpValue::buffer(&src), InterpValue::buffer_mut(&mut out)];
    run_planned(&p, &plan, &mut args)
}

fn with_bug(bug: CopyBug) -> CopyBox {
    CopyBox {
        bug: Some(bug),
        ..CopyBox::new(16, 64, (16, 64), 64, (0, 0), 4)
    }
}

#[test]
fn a_read_before_the_wait_is_rejected_and_faults() {
    let s = with_bug(CopyBug::ReadBeforeWait);
    let d = diagnostics_of(&s, &[]);
    let (read, copy) = (marked("read").unwrap(), marked("copy").unwrap());
    assert_eq!(
        (d[0].loc.file, d[0].loc.line),
        (read.file, read.line),
        "{d:#?}"
    );
    assert!(
        d[0].message
            .contains(&format!("{}:{}", copy.file, copy.line)),
        "{}",
        d[0]
    );
    assert!(d[0].message.contains("copy_async_wait_group"), "{}", d[0]);
    let d = expect_fault(
        unverified_box(&s),
        Fault::ReadBeforeWait,
        "read",
        &["a copy_async", "copy_async_wait_group"],
    );
    assert_noted(&d, "copy");
}

#[test]
fn a_missing_sync_after_the_wait_is_a_race() {
    let s = with_bug(CopyBug::NoSync);
    // the verifier: the read names the copy's line
    let d = diagnostics_of(&s, &[]);
    let (read, copy) = (marked("read").unwrap(), marked("copy").unwrap());
    assert_eq!(
        (d[0].loc.file, d[0].loc.line),
        (read.file, read.line),
        "{d:#?}"
    );
    assert!(
        d[0].message
            .contains(&format!("{}:{}", copy.file, copy.line)),
        "{}",
        d[0]
    );
    assert!(
        d[0].message.contains("copy_async_wait_group that covers"),
        "{}",
        d[0]
    );
    let d = expect_fault(unverified_box(&s), Fault::SharedRace, "read", &[]);
    assert_noted(&d, "copy");
    // with one warp, its own copies are all it reads: no race
    let one = CopyBox {
        warps: 1,
        ..s.clone()
    };
    unverified_box(&one).unwrap();
}

#[test]
fn a_kernel_that_ends_with_a_copy_in_flight_is_rejected_and_faults() {
    let s = with_bug(CopyBug::NeverWaited);
    let d = diagnostics_of(&s, &[]);
    let copy = marked("copy").unwrap();
    assert_eq!(
        (d[0].loc.file, d[0].loc.line),
        (copy.file, copy.line),
        "{d:#?}"
    );
    assert!(d[0].message.contains("may still be writing"), "{}", d[0]);
    expect_fault(
        unverified_box(&s),
        Fault::NotWaited,
        "copy",
        &["may still write", "copy_async_wait_group"],
    );
}

#[test]
fn ordinary_stores_into_a_tile_a_copy_is_filling_fault_and_a_second_copy_does_not() {
    let s = with_bug(CopyBug::StoreWhileInFlight);
    let d = expect_fault(
        unverified_box(&s),
        Fault::ReadBeforeWait,
        "store",
        &[
            "store_shared writes shared tensor",
            "a copy_async into it is still in flight",
        ],
    );
    assert_noted(&d, "copy");
    // two copies of the same box in flight land the same bytes: no fault, the right result
    let twice = with_bug(CopyBug::CopyTwice);
    let src = source(&twice);
    let mut out = vec![f16::NAN; (twice.rows * twice.cols) as usize];
    run(&twice, (&src[..], &mut out[..])).unwrap();
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&out), bits(&twice.expected(&src)));
}

fn unverified_ring(bug: RingBug) -> tilus::Result<tilus::interp::Report> {
    let s = RingRowSums {
        bug: Some(bug),
        ..RingRowSums::new(3)
    };
    let (p, plan) = plan_unverified(&s);
    let x = random_f32(RingRowSums::ROWS as usize * 100, fresh_seed());
    let mut out = vec![0f32; RingRowSums::ROWS as usize];
    let mut args = vec![
        InterpValue::Int(100),
        InterpValue::buffer(&x),
        InterpValue::buffer_mut(&mut out),
    ];
    run_planned(&p, &plan, &mut args)
}

#[test]
fn a_ring_that_waits_one_group_short_reads_a_stage_in_flight() {
    expect_fault(
        unverified_ring(RingBug::WaitOneShort),
        Fault::ReadBeforeWait,
        "read",
        &["a copy_async"],
    );
}

#[test]
fn a_ring_without_the_sync_after_its_wait_races() {
    expect_fault(
        unverified_ring(RingBug::NoSync),
        Fault::SharedRace,
        "read",
        &[],
    );
}

/// A copy of a one-dimensional tile from a two-dimensional view (the verifier's error).
#[derive(Clone, Debug, Hash)]
struct RankMismatch;

impl tilus::Script for RankMismatch {
    type Args = (tilus::prelude::Ptr<f16>, tilus::prelude::PtrMut<f16>);
    fn body(
        &self,
        k: &mut tilus::prelude::Kernel,
        (src, _out): tilus::prelude::Handles<Self::Args>,
    ) {
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view(src, [16, 16]);
        let s = k.shared_tensor::<f16>([16]);
        crate::common::mark("copy", line!(), k.copy_async(&g, [0, 0], &s));
        k.copy_async_wait_all();
    }
}

#[test]
fn a_copy_whose_tile_and_view_ranks_differ_is_refused_by_both() {
    let d = diagnostics_of(&RankMismatch, &[]);
    assert!(d[0].message.contains("all three must agree"), "{}", d[0]);
    let (p, plan) = plan_unverified(&RankMismatch);
    let src = vec![f16::ONE; 256];
    let mut out = vec![f16::ZERO; 16];
    let mut args = vec![InterpValue::buffer(&src), InterpValue::buffer_mut(&mut out)];
    expect_fault(
        run_planned(&p, &plan, &mut args),
        Fault::Invalid,
        "copy",
        &["has 2 dimensions, the tile 1 and the offsets 2"],
    );
}
