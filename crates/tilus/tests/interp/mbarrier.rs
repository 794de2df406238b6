//! mbarriers: a warp-specialized pipeline; deadlocks and transaction counts that are never
//! met or exceeded.

use super::tma::{tx_body, TxArgs};
use crate::common::inputs::f16s;
use crate::common::interp::{assert_noted, expect_fault, interpret, run};
use crate::common::{mark, marked};
use tilus::interp::Fault;
use tilus::prelude::*;

/// Warp specialization: warp 4 streams `[16, 64]` tiles through two stages (TMA, full
/// barriers); warp group 0 copies each to the output and releases its stage (empty barriers,
/// 128 arrivals). Each group keeps its own phase.
#[derive(Clone, Debug, Hash)]
struct Pipeline;

impl Script for Pipeline {
    type Args = (i32, Ptr<f16>, PtrMut<f16>);
    fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(5);
        let g = k.global_view::<f16>(src, [rows, Val::constant(64)]);
        let o = k.global_view::<f16>(dst, [rows, Val::constant(64)]);
        let s0 = k.shared_tensor::<f16>([16, 64]);
        let s1 = k.shared_tensor::<f16>([16, 64]);
        let full = k.mbarrier().alloc([1, 1]);
        let empty = k.mbarrier().alloc([128, 128]);
        k.warp_group(0, |k| {
            let phase = k.var_u32(0u32);
            k.for_range(0, rows, 32, |k, i| {
                for (st, s) in [(0usize, &s0), (1, &s1)] {
                    k.mbarrier().wait(full[st], phase);
                    let r = k.load_shared(s);
                    k.store_global(&o, &r, [i + 16 * st as i32, Scalar::from(0)]);
                    k.mbarrier().arrive(empty[st]);
                }
                k.assign(phase, phase ^ 1);
            });
        });
        k.single_warp(4, |k| {
            k.single_thread(|k| {
                let phase = k.var_u32(0u32);
                k.for_range(0, rows, 32, |k, i| {
                    for (st, s) in [(0usize, &s0), (1, &s1)] {
                        k.mbarrier().wait(empty[st], phase ^ 1);
                        k.mbarrier().arrive_and_expect_tx(full[st], s.nbytes());
                        k.tma().global_to_shared(
                            &g,
                            s,
                            [i + 16 * st as i32, Scalar::from(0)],
                            full[st],
                        );
                    }
                    k.assign(phase, phase ^ 1);
                });
            });
        });
    }
}

#[test]
fn a_warp_specialized_pipeline_streams_every_tile() {
    for rows in [32usize, 96, 80] {
        let src = f16s(rows * 64);
        let mut dst = vec![f16::NAN; rows * 64];
        let rep = run(&Pipeline, (rows as i32, &src, &mut dst)).unwrap();
        assert_eq!(dst, src, "{rows} rows");
        assert_eq!(rep.tma_copies as usize, 2 * rows.div_ceil(32));
        assert!(
            rep.max_tasks >= 3,
            "producer, consumers, idle threads: {rep:?}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// Deadlocks and transaction counts.
// ------------------------------------------------------------------------------------------

#[test]
fn a_wait_that_nobody_completes_is_a_deadlock_naming_the_barrier_and_the_waiters() {
    let r = interpret::<(PtrMut<f32>,)>(
        |k, (out,)| {
            k.warps(1);
            let bar = k.mbarrier().alloc([2]);
            k.single_thread(|k| k.mbarrier().arrive(bar[0]));
            #[rustfmt::skip]
            mark("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
            let g = k.global_view(out, [32]);
            let t = k.register_tensor::<f32>([32], 1.0);
            k.store_global(&g, &t, [0]);
        },
        (&mut [0.0f32; 32][..],),
    );
    expect_fault(
        r,
        Fault::Deadlock,
        "wait",
        &[
            "deadlock",
            "threads 0-31 wait here",
            "parity 0 of barrier `bar0[0]`",
            "still expects 1 arrival(s)",
        ],
    );
}

#[test]
fn a_sync_some_threads_never_reach_is_a_deadlock() {
    // the producer waits for a phase only the consumers' sync-guarded arrival completes
    let r = interpret::<(PtrMut<f32>,)>(
        |k, _| {
            k.warps(2);
            let bar = k.mbarrier().alloc([1]);
            k.single_warp(0, |k| {
                #[rustfmt::skip]
                mark("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
            });
            #[rustfmt::skip]
            mark("sync", line!(), k.sync());
            k.single_thread(|k| k.mbarrier().arrive(bar[0]));
        },
        (&mut [0.0f32; 1][..],),
    );
    let d = expect_fault(
        r,
        Fault::Deadlock,
        "wait",
        &["threads 0-31 wait here", "barrier `bar0[0]`"],
    );
    assert_noted(&d, "sync");
    assert!(
        d.iter().any(|x| x
            .message
            .contains("threads 32-63 wait here in sync() for threads 0-31")),
        "{d:#?}"
    );
}

#[test]
fn declaring_more_bytes_than_the_copies_deliver_is_a_transaction_count_never_met() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let r = interpret::<TxArgs>(tx_body, (2 * 8192, &src, &mut dst));
    let d = expect_fault(
        r,
        Fault::TxNeverMet,
        "wait",
        &[
            "transaction count never met",
            "barrier `bar0[0]`",
            "declared 16384 byte(s)",
            "delivered 8192",
        ],
    );
    let expect_line = marked("expect").unwrap().loc();
    assert!(d[0].message.contains(&expect_line), "{}", d[0]);
}

#[test]
fn declaring_fewer_bytes_than_a_copy_delivers_exceeds_the_transaction_count() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let r = interpret::<TxArgs>(tx_body, (4096, &src, &mut dst));
    let d = expect_fault(
        r,
        Fault::TxExceeded,
        "tma",
        &[
            "transaction count exceeded",
            "received 4096 more byte(s) than arrive_and_expect_tx declared (4096)",
        ],
    );
    assert_noted(&d, "expect");
}

/// `(bytes, a, out)`: two copies on one barrier, the phase declaring `bytes`.
type TwoCopies = (i32, Ptr<f16>, PtrMut<f16>);

#[test]
fn a_copy_landing_after_its_phase_completed_exceeds_the_transaction_count() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let r = interpret::<TwoCopies>(
        |k, (bytes, src, dst)| {
            k.warps(4);
            let g = k.global_view(src, [64, 64]);
            let s0 = k.shared_tensor::<f16>([32, 64]);
            let s1 = k.shared_tensor::<f16>([32, 64]);
            let bar = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                // declares the bytes of one copy only
                #[rustfmt::skip]
                mark("expect", line!(), k.mbarrier().arrive_and_expect_tx(bar[0], bytes));
                k.tma().global_to_shared(&g, &s0, [0, 0], bar[0]);
                #[rustfmt::skip]
                mark("tma1", line!(), k.tma().global_to_shared(&g, &s1, [32, 0], bar[0]));
            });
            k.mbarrier().wait(bar[0], 0u32);
            let o = k.global_view(dst, [64, 64]);
            let r0 = k.load_shared(&s0);
            k.store_global(&o, &r0, [0, 0]);
        },
        (4096, &src, &mut dst),
    );
    let d = expect_fault(
        r,
        Fault::TxExceeded,
        "tma1",
        &["after the phase it was issued in already completed"],
    );
    assert_noted(&d, "expect");
}

// ------------------------------------------------------------------------------------------
// Arrivals with a count.
// ------------------------------------------------------------------------------------------

/// Lane 0 of each warp arrives for its 32 threads: four arrivals of 32 complete a barrier of
/// 128 (`WarpArrivals`, the script the GPU test runs too).
#[test]
fn one_thread_arriving_for_its_warp_completes_a_barrier_counting_threads() {
    let mut out = vec![0.0f32; 128];
    run(&crate::common::scripts::WarpArrivals, (&mut out[..],)).unwrap();
    assert!(out.iter().all(|&x| x == 3.0));
}

#[test]
fn a_count_past_the_phase_is_reported_with_its_line() {
    let r = interpret::<(PtrMut<f32>,)>(
        |k, _| {
            k.warps(1);
            let bar = k.mbarrier().alloc([4, 40]);
            k.single_thread(|k| {
                k.mbarrier().arrive_count(bar[0], 3);
                // the verifier cannot see this one: the index is a runtime value
                let i = k.let_i32(0);
                #[rustfmt::skip]
                mark("count", line!(), k.mbarrier().arrive_count(bar.at(i), 2));
            });
        },
        (&mut [0.0f32; 1][..],),
    );
    expect_fault(
        r,
        Fault::Invalid,
        "count",
        &["2 arrivals on barrier `bar0[0]`", "has only 1 pending"],
    );
}

/// `set_max_registers` changes nothing the interpreter computes: the split script writes
/// what it writes on the GPU.
#[test]
fn registers_moved_between_warp_groups_leave_the_results_alone() {
    let mut out = vec![f32::NAN; 384];
    run(&crate::common::scripts::RegisterSplit, (&mut out[..],)).unwrap();
    assert!(out[..256].iter().all(|&x| x == 2.0));
    assert!(out[256..].iter().all(|&x| x == 3.0));
}
