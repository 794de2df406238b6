//! The CPU interpreter, diagnostic by diagnostic: one deliberately broken script per fault the
//! interpreter reports (each passes the verifier and the planner; the fault only shows when the
//! kernel runs), with its kind, its message and the file:line it names checked. Before them,
//! the baselines: correct scripts of the same shape, and constructs beyond v0 (f32 tiles, nested
//! groups with plain arrivals, a warp-specialized pipeline) that must run and give exact
//! results.
//!
//! The offending call is written as `at("key", line!(), call)`, on one line, so that the test
//! knows the line a diagnostic must name.

// `at(.., k.sync())` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use tilus::interp::{Fault, InterpValue};
use tilus::lang::ArgList;
use tilus::prelude::*;
use tilus::InterpArgList;
use tilus::{Diagnostic, Error};

thread_local! {
    /// Lines of marked calls, recorded while a body is traced.
    static LINES: RefCell<HashMap<&'static str, u32>> = RefCell::new(HashMap::new());
}

/// Marks `call` (written on the same line) under `key`.
fn at<T>(key: &'static str, line: u32, call: T) -> T {
    LINES.with(|l| l.borrow_mut().insert(key, line));
    call
}

fn line_of(key: &str) -> u32 {
    LINES
        .with(|l| l.borrow().get(key).copied())
        .unwrap_or_else(|| panic!("`{key}` was not marked"))
}

/// A script whose body is a plain function; `A` is its argument list.
struct Body<A: ArgList>(fn(&mut Kernel, Handles<A>));

impl<A: ArgList> Clone for Body<A> {
    fn clone(&self) -> Self {
        Body(self.0)
    }
}

impl<A: ArgList> fmt::Debug for Body<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Body")
    }
}

impl<A: ArgList> Hash for Body<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0 as usize).hash(state)
    }
}

impl<A: ArgList + 'static> Script for Body<A> {
    type Args = A;
    fn body(&self, k: &mut Kernel, args: Handles<A>) {
        (self.0)(k, args)
    }
}

/// Interprets `body` with `args`.
fn interpret<A: InterpArgList + 'static>(
    body: fn(&mut Kernel, Handles<A>),
    args: tilus::InterpArgs<'_, A>,
) -> tilus::Result<tilus::interp::Report> {
    LINES.with(|l| l.borrow_mut().clear());
    tilus::interpret(&Body::<A>(body), args)
}

/// The fault and diagnostics of a run that must fail.
#[track_caller]
fn fault(r: tilus::Result<tilus::interp::Report>) -> (Fault, Vec<Diagnostic>) {
    match r {
        Err(Error::Interp {
            fault, diagnostics, ..
        }) => (fault, diagnostics),
        Err(e) => panic!("expected Error::Interp, got another error: {e}"),
        Ok(rep) => panic!("expected Error::Interp, but the kernel ran: {rep:?}"),
    }
}

/// The first diagnostic is `kind`, contains every phrase and points at the call marked `key`.
#[track_caller]
fn expect(
    r: tilus::Result<tilus::interp::Report>,
    kind: Fault,
    key: &str,
    phrases: &[&str],
) -> Vec<Diagnostic> {
    let (f, d) = fault(r);
    assert_eq!(f, kind, "{d:#?}");
    let first = &d[0];
    assert!(
        first.loc.file.ends_with("interp_diagnostics.rs"),
        "diagnostic points at {}, not at this file: {first}",
        first.loc
    );
    assert_eq!(
        first.loc.line,
        line_of(key),
        "diagnostic points at line {}, the offending call `{key}` is on line {}: {first}",
        first.loc.line,
        line_of(key)
    );
    for p in phrases {
        assert!(first.message.contains(p), "{p:?} not in {first}");
    }
    d
}

/// Some diagnostic (not the first) points at the call marked `key`.
#[track_caller]
fn noted(d: &[Diagnostic], key: &str) {
    let line = line_of(key);
    assert!(
        d[1..].iter().any(|x| x.loc.line == line),
        "no further diagnostic points at `{key}` (line {line}): {d:#?}"
    );
}

fn f16s(n: usize) -> Vec<f16> {
    (0..n)
        .map(|i| f16::from_f32((i % 1000) as f32 * 0.25 - 100.0))
        .collect()
}

// ------------------------------------------------------------------------------------------
// Baselines: correct scripts run and give exact results.
// ------------------------------------------------------------------------------------------

/// `(bytes, src, dst)`: one TMA copy of a `[64, 64]` tile declared as `bytes` transaction bytes.
type TxArgs = (i32, Ptr<f16>, PtrMut<f16>);

fn tx_body(k: &mut Kernel, (bytes, src, dst): Handles<TxArgs>) {
    k.warps(4);
    let g = k.global_view(src, [64, 64]);
    let s = k.shared_tensor::<f16>([64, 64]);
    let bar = k.mbarrier().alloc([1]);
    k.single_thread(|k| {
        #[rustfmt::skip]
        at("expect", line!(), k.mbarrier().arrive_and_expect_tx(bar[0], bytes));
        #[rustfmt::skip]
        at("tma", line!(), k.tma().global_to_shared(&g, &s, [0, 0], bar[0]));
    });
    #[rustfmt::skip]
    at("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
    let r = k.load_shared(&s);
    let o = k.global_view(dst, [64, 64]);
    k.store_global(&o, &r, [0, 0]);
}

#[test]
fn a_tma_round_trip_is_exact() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let rep = interpret::<TxArgs>(tx_body, (8192, &src, &mut dst)).unwrap();
    assert_eq!(dst, src);
    assert_eq!((rep.blocks, rep.tma_copies), (1, 1));
    assert_eq!(
        rep.max_tasks, 2,
        "single_thread splits the block in two tasks"
    );
}

type MatmulArgs = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

/// v0's body with 64x128x64 tiles, and a switch for each bug the tests plant.
#[derive(Clone, Copy, Default)]
struct Bugs {
    no_first_sync: bool,
    no_phase_flip: bool,
}

thread_local! {
    static BUGS: RefCell<Bugs> = RefCell::new(Bugs::default());
}

fn matmul_body(k: &mut Kernel, (m, n, kk, a, b, c): Handles<MatmulArgs>) {
    let bugs = BUGS.with(|b| *b.borrow());
    k.blocks([cdiv(m, 64), cdiv(n, 128)]);
    k.warps(4);
    let om = k.let_i32(64 * k.block_idx().x);
    let on = k.let_i32(128 * k.block_idx().y);
    let ga = k.global_view(a, [m, kk]);
    let gb = k.global_view(b, [n, kk]);
    #[rustfmt::skip]
    let sa: SharedTensor<f16> = at("sa", line!(), k.shared_tensor([64, 64]));
    #[rustfmt::skip]
    let sb: SharedTensor<f16> = at("sb", line!(), k.shared_tensor([128, 64]));
    let acc: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
    #[rustfmt::skip]
    let bar = at("bar", line!(), k.mbarrier().alloc([1]));
    let phase = k.var_u32(0u32);
    k.for_range(0, kk, 64, |k, ok| {
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            #[rustfmt::skip]
            at("tma_a", line!(), k.tma().global_to_shared(&ga, &sa, [om, ok], bar[0]));
            k.tma().global_to_shared(&gb, &sb, [on, ok], bar[0]);
            k.mbarrier().wait(bar[0], phase);
        });
        if !bugs.no_first_sync {
            k.sync();
        }
        #[rustfmt::skip]
        let ra = at("load_a", line!(), k.load_shared(&sa));
        let rb = k.load_shared(&sb);
        k.dot(&ra, &rb.transpose(), &acc, &acc);
        k.sync();
        if !bugs.no_phase_flip {
            k.assign(phase, phase ^ 1);
        }
    });
    let h: RegisterTensor<f16> = k.cast(&acc);
    let gc = k.global_view(c, [m, n]);
    k.store_global(&gc, &h, [om, on]);
}

fn matmul_inputs(m: usize, n: usize, k: usize) -> (Vec<f16>, Vec<f16>) {
    let a = (0..m * k)
        .map(|i| f16::from_f32(((i * 7) % 13) as f32 / 16.0 - 0.375))
        .collect();
    let b = (0..n * k)
        .map(|i| f16::from_f32(((i * 5) % 11) as f32 / 16.0 - 0.3125))
        .collect();
    (a, b)
}

fn run_matmul(bugs: Bugs, m: usize, n: usize, k: usize) -> tilus::Result<Vec<f16>> {
    BUGS.with(|b| *b.borrow_mut() = bugs);
    let (a, b) = matmul_inputs(m, n, k);
    let mut c = vec![f16::NAN; m * n];
    interpret::<MatmulArgs>(matmul_body, (m as i32, n as i32, k as i32, &a, &b, &mut c))?;
    Ok(c)
}

#[test]
fn the_matmul_baseline_is_exact_on_small_integers() {
    // inputs are multiples of 1/16 with small sums: every partial sum is exact in f32 and f16
    let (m, n, k) = (70, 136, 128);
    let c = run_matmul(Bugs::default(), m, n, k).unwrap();
    let (a, b) = matmul_inputs(m, n, k);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k)
                .map(|x| a[i * k + x].to_f32() * b[j * k + x].to_f32())
                .sum();
            assert_eq!(
                c[i * n + j].to_f32(),
                f16::from_f32(want).to_f32(),
                "({i}, {j})"
            );
        }
    }
}

/// An f32 tile copy through TMA (no swizzle and 128B), the generic shared load and f32 stores.
#[derive(Clone, Debug, Hash)]
struct TileCopy {
    rows: i32,
    cols: i32,
}

impl Script for TileCopy {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = k.global_view::<f32>(src, [m, n]);
        let s = k.shared_tensor::<f32>([self.rows, self.cols]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [om, on], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let r = k.load_shared(&s);
        let out = k.global_view::<f32>(dst, [m, n]);
        k.store_global(&out, &r, [om, on]);
    }
}

#[test]
fn f32_tile_copies_are_exact_at_odd_shapes() {
    for (m, n, rows, cols) in [
        (100, 72, 16, 32),
        (33, 40, 32, 16),
        (64, 64, 64, 64),
        (20, 100, 8, 48),
    ] {
        let data: Vec<f32> = (0..m * n).map(|i| (i as f32).sin()).collect();
        let mut out = vec![f32::NAN; m * n];
        tilus::interpret(
            &TileCopy { rows, cols },
            (m as i32, n as i32, &data, &mut out),
        )
        .unwrap();
        assert_eq!(out, data, "{m}x{n} with {rows}x{cols} tiles");
    }
}

/// Nested thread groups: two warp groups store their own rows; one warp of group 0 and one
/// thread of group 1 arrive on a barrier of count 33 that the whole block waits for.
#[derive(Clone, Debug, Hash)]
struct Groups;

impl Script for Groups {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.warps(8);
        let g = k.global_view::<f32>(out, [2, 256]);
        let bar = k.mbarrier().alloc([33]);
        for wg in 0..2u32 {
            k.warp_group(4 * wg, |k| {
                let t = k.register_tensor::<f32>([1, 256], (wg + 1) as f64);
                k.store_global(&g, &t, [wg as i32, 0]);
                if wg == 0 {
                    k.single_warp(2, |k| k.mbarrier().arrive(bar[0]));
                } else {
                    k.thread_group(64, 32, |k| k.single_thread(|k| k.mbarrier().arrive(bar[0])));
                }
            });
        }
        k.mbarrier().wait(bar[0], 0u32);
    }
}

#[test]
fn nested_groups_store_their_own_rows_and_arrive() {
    let mut out = vec![f32::NAN; 512];
    let rep = tilus::interpret(&Groups, (&mut out[..],)).unwrap();
    assert!(out[..256].iter().all(|&x| x == 1.0), "{:?}", &out[..8]);
    assert!(out[256..].iter().all(|&x| x == 2.0), "{:?}", &out[256..264]);
    assert!(rep.max_tasks >= 2, "{rep:?}");
}

/// Warp specialization: warp 4 streams `[16, 64]` tiles through two stages (TMA, full
/// barriers); warp group 0 copies each to the output and releases its stage (empty barriers,
/// 128 arrivals). Each group keeps its own phase.
#[derive(Clone, Debug, Hash)]
struct Pipeline;

impl Script for Pipeline {
    type Args = (i32, Ptr<f16>, PtrMut<f16>);
    fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
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
        let rep = tilus::interpret(&Pipeline, (rows as i32, &src, &mut dst)).unwrap();
        assert_eq!(dst, src, "{rows} rows");
        assert_eq!(rep.tma_copies as usize, 2 * rows.div_ceil(32));
        assert!(
            rep.max_tasks >= 3,
            "producer, consumers, idle threads: {rep:?}"
        );
    }
}

/// What a [`WgmmaTile`] run plants.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
struct WgmmaBugs {
    /// Skip the mbarrier wait before the wgmma.
    no_tma_wait: bool,
    /// Wait for the wgmma only after the K loop.
    wait_after_loop: bool,
}

/// `c[64, 64] = a[64, 64] @ b[64, 64]ᵀ` (f16 in, f32 out) with wgmma, two K steps of 32
/// (64-byte rows: the 64B swizzle), A from shared memory or from registers.
#[derive(Clone, Debug, Hash)]
struct WgmmaTile {
    reg_a: bool,
    bugs: WgmmaBugs,
}

impl Script for WgmmaTile {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 32]);
        let sb = k.shared_tensor::<f16>([64, 32]);
        let bar = k.mbarrier().alloc([1]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        let phase = k.var_u32(0u32);
        k.for_range(0, 64, 32, |k, ok| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                #[rustfmt::skip]
                at("tma_a", line!(), k.tma().global_to_shared(&ga, &sa, [Val::constant(0), ok], bar[0]));
                k.tma()
                    .global_to_shared(&gb, &sb, [Val::constant(0), ok], bar[0]);
            });
            if !self.bugs.no_tma_wait {
                k.mbarrier().wait(bar[0], phase);
            }
            k.wgmma().fence();
            if self.reg_a {
                let ra = k.load_shared(&sa);
                #[rustfmt::skip]
                at("mma", line!(), k.wgmma().mma(&ra, &sb.transpose(), &acc));
            } else {
                #[rustfmt::skip]
                at("mma", line!(), k.wgmma().mma(&sa, &sb.transpose(), &acc));
            }
            k.wgmma().commit_group();
            if !self.bugs.wait_after_loop {
                k.wgmma().wait_group(0);
            }
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        if self.bugs.wait_after_loop {
            k.wgmma().wait_group(0);
        }
        let gc = k.global_view(c, [64, 64]);
        #[rustfmt::skip]
        at("store", line!(), k.store_global(&gc, &acc, [0, 0]));
    }
}

fn wgmma_inputs() -> (Vec<f16>, Vec<f16>) {
    matmul_inputs(64, 64, 64)
}

fn run_wgmma(script: &WgmmaTile) -> tilus::Result<Vec<f32>> {
    LINES.with(|l| l.borrow_mut().clear());
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    tilus::interpret(script, (&a[..], &b[..], &mut c[..]))?;
    Ok(c)
}

#[test]
fn wgmma_products_are_exact_with_a_from_shared_memory_or_registers() {
    let (a, b) = wgmma_inputs();
    for reg_a in [false, true] {
        let c = run_wgmma(&WgmmaTile {
            reg_a,
            bugs: WgmmaBugs::default(),
        })
        .unwrap();
        for i in 0..64 {
            for j in 0..64 {
                let want: f32 = (0..64)
                    .map(|x| a[i * 64 + x].to_f32() * b[j * 64 + x].to_f32())
                    .sum();
                assert_eq!(c[i * 64 + j], want, "reg_a={reg_a} ({i}, {j})");
            }
        }
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
            at("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
            let g = k.global_view(out, [32]);
            let t = k.register_tensor::<f32>([32], 1.0);
            k.store_global(&g, &t, [0]);
        },
        (&mut [0.0f32; 32][..],),
    );
    expect(
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
                at("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
            });
            #[rustfmt::skip]
            at("sync", line!(), k.sync());
            k.single_thread(|k| k.mbarrier().arrive(bar[0]));
        },
        (&mut [0.0f32; 1][..],),
    );
    let d = expect(
        r,
        Fault::Deadlock,
        "wait",
        &["threads 0-31 wait here", "barrier `bar0[0]`"],
    );
    noted(&d, "sync");
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
    let d = expect(
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
    let expect_line = format!("interp_diagnostics.rs:{}:", line_of("expect"));
    assert!(d[0].message.contains(&expect_line), "{}", d[0]);
}

#[test]
fn declaring_fewer_bytes_than_a_copy_delivers_exceeds_the_transaction_count() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let r = interpret::<TxArgs>(tx_body, (4096, &src, &mut dst));
    let d = expect(
        r,
        Fault::TxExceeded,
        "tma",
        &[
            "transaction count exceeded",
            "received 4096 more byte(s) than arrive_and_expect_tx declared (4096)",
        ],
    );
    noted(&d, "expect");
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
                at("expect", line!(), k.mbarrier().arrive_and_expect_tx(bar[0], bytes));
                k.tma().global_to_shared(&g, &s0, [0, 0], bar[0]);
                #[rustfmt::skip]
                at("tma1", line!(), k.tma().global_to_shared(&g, &s1, [32, 0], bar[0]));
            });
            k.mbarrier().wait(bar[0], 0u32);
            let o = k.global_view(dst, [64, 64]);
            let r0 = k.load_shared(&s0);
            k.store_global(&o, &r0, [0, 0]);
        },
        (4096, &src, &mut dst),
    );
    let d = expect(
        r,
        Fault::TxExceeded,
        "tma1",
        &["after the phase it was issued in already completed"],
    );
    noted(&d, "expect");
}

// ------------------------------------------------------------------------------------------
// Reads of TMA destinations before the wait that covers them.
// ------------------------------------------------------------------------------------------

#[test]
fn the_matmul_baseline_runs() {
    run_matmul(Bugs::default(), 64, 128, 128).unwrap();
}

#[test]
fn reading_a_tile_without_the_sync_after_the_single_thread_wait_is_a_read_before_wait() {
    let bugs = Bugs {
        no_first_sync: true,
        ..Bugs::default()
    };
    let r = run_matmul(bugs, 64, 128, 64).map(|_| tilus::interp::Report::default());
    let d = expect(
        r,
        Fault::ReadBeforeWait,
        "load_a",
        &[
            "load_shared reads shared tensor `s0`",
            "still in flight",
            "barrier `bar0[0]`",
        ],
    );
    noted(&d, "tma_a");
}

#[test]
fn waiting_on_a_stale_phase_is_a_read_before_wait_in_the_second_iteration() {
    let bugs = Bugs {
        no_phase_flip: true,
        ..Bugs::default()
    };
    // one K step is fine; the second waits for parity 0 again, which completed long ago
    run_matmul(bugs, 64, 128, 64).unwrap();
    let r = run_matmul(bugs, 64, 128, 128).map(|_| tilus::interp::Report::default());
    let d = expect(
        r,
        Fault::ReadBeforeWait,
        "load_a",
        &["`s0`", "still in flight"],
    );
    noted(&d, "tma_a");
}

// ------------------------------------------------------------------------------------------
// Overlapping shared buffers (the planner never does this: the tests move offsets by hand).
// ------------------------------------------------------------------------------------------

/// Plans the matmul body, lets `edit` move things, and interprets it.
fn run_edited(edit: fn(&mut tilus::ir::Program)) -> tilus::Result<tilus::interp::Report> {
    LINES.with(|l| l.borrow_mut().clear());
    BUGS.with(|b| *b.borrow_mut() = Bugs::default());
    let (m, n, k) = (64usize, 128usize, 64usize);
    let program = tilus::trace(&Body::<MatmulArgs>(matmul_body), &[n as i64, k as i64])?;
    let (mut program, plan) = tilus::passes::compile_program(program)?;
    edit(&mut program);
    let (a, b) = matmul_inputs(m, n, k);
    let mut c = vec![f16::NAN; m * n];
    let mut args = vec![
        InterpValue::Int(m as i64),
        InterpValue::Int(n as i64),
        InterpValue::Int(k as i64),
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    tilus::interp::run_program(&program, &plan, &mut args, &Default::default())
}

#[test]
fn the_planned_offsets_do_not_overlap() {
    run_edited(|_| {}).unwrap();
}

#[test]
fn two_live_tiles_sharing_bytes_overlap() {
    let r = run_edited(|p| p.shareds[1].offset = Some(p.shareds[0].offset.unwrap() + 4096));
    let d = expect(
        r,
        Fault::SharedOverlap,
        "sb",
        &["shared tensor `s1`", "overlaps `s0`", "still alive"],
    );
    noted(&d, "sa");
}

#[test]
fn a_barrier_inside_a_live_tile_overlaps() {
    let r = run_edited(|p| p.barriers[0].offset = Some(p.shareds[1].offset.unwrap() + 64));
    let d = expect(
        r,
        Fault::SharedOverlap,
        "bar",
        &["the mbarriers `bar0`", "overlap shared tensor `s1`"],
    );
    noted(&d, "sb");
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
            at("store", line!(), k.store_global(&g, &t, [row, Val::constant(0)]));
        },
        (64, &mut out),
    );
    match &r {
        Err(Error::Interp { block, .. }) => assert_eq!(*block, [0, 0, 0]),
        other => panic!("{other:?}"),
    }
    expect(
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
// wgmma: asynchronous operands and accumulators.
// ------------------------------------------------------------------------------------------

#[test]
fn a_wgmma_on_a_tile_whose_copy_is_in_flight_is_a_read_before_wait() {
    let bugs = WgmmaBugs {
        no_tma_wait: true,
        ..WgmmaBugs::default()
    };
    for reg_a in [false, true] {
        let r = run_wgmma(&WgmmaTile { reg_a, bugs }).map(|_| Default::default());
        let key = "mma";
        let (f, d) = fault(r);
        assert_eq!(f, Fault::ReadBeforeWait, "{d:#?}");
        // with A in registers, load_shared is the first to read the tile
        assert!(d[0].message.contains("still in flight"), "{}", d[0]);
        if !reg_a {
            assert_eq!(d[0].loc.line, line_of(key), "{}", d[0]);
            assert!(d[0].message.starts_with("wgmma.mma reads"), "{}", d[0]);
        }
    }
}

/// Plans a script without the verifier (whose static rules reject the bugs these tests make
/// the interpreter find at run time) and interprets it.
fn plan_unverified<S: Script>(script: &S) -> (tilus::ir::Program, tilus::ir::LaunchPlan) {
    let program = tilus::trace(script, &[]).unwrap();
    let program = tilus::passes::infer_layout::run(program).unwrap();
    let program = tilus::passes::plan_shared::run(program).unwrap();
    tilus::passes::lower::run(program)
}

#[test]
fn a_copy_into_a_tile_an_unfinished_wgmma_reads_is_an_overwrite_before_wait() {
    let bugs = WgmmaBugs {
        wait_after_loop: true,
        ..WgmmaBugs::default()
    };
    let script = WgmmaTile { reg_a: false, bugs };
    // the verifier sees it statically ...
    LINES.with(|l| l.borrow_mut().clear());
    match run_wgmma(&script) {
        Err(Error::Script(d)) => assert!(
            d.iter()
                .any(|d| d.message.contains("is written while the wgmma at")
                    && d.loc.line == line_of("tma_a")),
            "{d:#?}"
        ),
        other => panic!("expected the verifier to reject the script, got {other:?}"),
    }
    // ... and the interpreter at run time
    LINES.with(|l| l.borrow_mut().clear());
    let (program, plan) = plan_unverified(&script);
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    let mut args = vec![
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    let r = tilus::interp::run_program(&program, &plan, &mut args, &Default::default());
    let d = expect(
        r,
        Fault::OverwriteBeforeWait,
        "tma_a",
        &[
            "overwrites shared tensor `s0`",
            "wgmma that reads it is unfinished",
        ],
    );
    noted(&d, "mma");
}

#[test]
fn using_the_accumulator_before_wait_group_is_a_read_before_wait() {
    // the verifier rejects this statically; the test removes the wait from the planned program
    LINES.with(|l| l.borrow_mut().clear());
    let script = WgmmaTile {
        reg_a: false,
        bugs: WgmmaBugs {
            wait_after_loop: true,
            ..WgmmaBugs::default()
        },
    };
    // one K step only, so that no copy overwrites an operand first
    let (mut program, plan) = plan_unverified(&script);
    program.body.retain(|s| {
        !matches!(
            s.kind,
            tilus::ir::StmtKind::Inst(tilus::ir::Inst::Wgmma(tilus::ir::WgmmaInst::Wait(_)))
        )
    });
    for s in program.body.iter_mut() {
        if let tilus::ir::StmtKind::For { end, .. } = &mut s.kind {
            *end = tilus::ir::Expr::i32(32);
        }
    }
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    let mut args = vec![
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    let r = tilus::interp::run_program(&program, &plan, &mut args, &Default::default());
    let d = expect(
        r,
        Fault::ReadBeforeWait,
        "store",
        &["store_global uses accumulator `r0`", "wgmma.wait_group"],
    );
    noted(&d, "mma");
}

// ------------------------------------------------------------------------------------------
// Warps that can never reassemble.
// ------------------------------------------------------------------------------------------

#[test]
fn a_variable_only_some_threads_assigned_keeps_a_warp_apart_at_dot() {
    let mut out = vec![0.0f32; 16 * 8];
    let r = interpret::<(PtrMut<f32>,)>(
        |k, (out,)| {
            k.warps(1);
            let flag = k.var_u32(0u32);
            let a = k.register_tensor::<f16>([16, 16], 1.0);
            let b = k.register_tensor::<f16>([16, 8], 1.0);
            let acc = k.register_tensor::<f32>([16, 8], 0.0);
            // only thread 0 changes its copy of `flag`
            k.single_thread(|k| k.assign(flag, 1u32));
            #[rustfmt::skip]
            at("dot", line!(), k.dot(&a, &b, &acc, &acc));
            let g = k.global_view(out, [16, 8]);
            k.store_global(&g, &acc, [0, 0]);
        },
        (&mut out,),
    );
    expect(
        r,
        Fault::Diverged,
        "dot",
        &["needs whole warps", "different values of `v0`"],
    );
}

/// `c[64, 64] = a[64, 64] @ b[64, 64]ᵀ` with an f16 accumulator, widened to f32 to store.
#[derive(Clone, Debug, Hash)]
struct WgmmaF16Acc;

impl Script for WgmmaF16Acc {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let bar = k.mbarrier().alloc([1]);
        let acc = k.register_tensor::<f16>([64, 64], 0.0);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [0, 0], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let wide = k.cast::<f32>(&acc);
        let gc = k.global_view(c, [64, 64]);
        k.store_global(&gc, &wide, [0, 0]);
    }
}

#[test]
fn an_f16_accumulator_is_exact_on_small_integers_and_widens_exactly() {
    // partial sums stay below 8 in steps of 1/256: exact in f16
    let (a, b) = wgmma_inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    tilus::interpret(&WgmmaF16Acc, (&a[..], &b[..], &mut c[..])).unwrap();
    for i in 0..64 {
        for j in 0..64 {
            let want: f32 = (0..64)
                .map(|x| a[i * 64 + x].to_f32() * b[j * 64 + x].to_f32())
                .sum();
            assert_eq!(c[i * 64 + j], want, "({i}, {j})");
        }
    }
}
