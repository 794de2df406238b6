//! The classic bugs of a warp-specialized pipeline, each in a deliberately broken v3 run on the
//! CPU interpreter: what a user who makes the mistake sees. Every test asserts the fault's kind,
//! that its first diagnostic points at the line of the offending call in this file, and what it
//! says; `BrokenV3 { bug: Bug::None, .. }` computes the right product, so that the harness
//! itself is shown correct. The shapes are small (one or four blocks) and K runs over several
//! trips round a ring of two stages, so every bug that needs the ring to wrap has it wrap.
//!
//! `cargo test -p hopper-matmul --test series interp_v3_bugs -- --nocapture` prints each
//! diagnostic as the interpreter reports it (`docs/tutorials/hopper-matmul/v3.md` quotes them).

// `mark(.., k.tma().global_to_shared(..))` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

use half::f16;
use std::cell::RefCell;
use std::collections::HashMap;
use tilus::interp::{Fault, Report};
use tilus::prelude::*;
use tilus::{Diagnostic, Error};
use tilus_bench::harness::{self, Rng};

/// v3's block tile and ring, fixed: `[128, 128]` of C per block, K steps of 64, two stages.
const BM: i32 = 128;
const BN: i32 = 128;
const BK: i32 = 64;
const STAGES: i32 = 2;

/// One mistake in v3's pipeline, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Bug {
    /// v3 as written.
    None,
    /// The producer waits on `empty` for phase `(i / stages) % 2`, as the consumers wait on
    /// `full`, instead of the phase before it: a fresh barrier's phase 0 has not completed, so
    /// its very first wait never returns, and the consumers wait for a stage never filled.
    ProducerPhase,
    /// The consumers never arrive on `empty`: the producer fills the ring once, then waits for a
    /// stage to be freed that never is.
    NoRelease,
    /// The consumers free a stage right after committing the WGMMA that reads it, before any
    /// `wait_group`: the producer refills the stage while the product may still read it.
    EarlyRelease,
    /// The producer declares a number of transaction bytes per stage that the stage's two
    /// copies cannot deliver.
    TxBytes(Tx),
}

/// The wrong byte counts of [`Bug::TxBytes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tx {
    /// A's bytes only, as a constant: the verifier sees that the copies deliver more.
    OnlyA,
    /// 1024 bytes more than the copies deliver, held in a `let` (a value the verifier does not
    /// follow): the consumers' wait never returns.
    Padded,
    /// 1024 bytes fewer, held in a `let`: B's copy delivers more than the phase expects.
    Short,
}

/// v3 (`hopper_matmul::v3::MatmulSpecialized`) with one [`Bug`], at v3's tile and a ring of two
/// stages; `in_flight` as v3's (1: free the previous stage once only the current product runs;
/// 0: wait for each product, then free its own stage).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BrokenV3 {
    bug: Bug,
    in_flight: i32,
}

impl BrokenV3 {
    /// `bug` in v3 as it ships (`in_flight = 1`).
    fn with(bug: Bug) -> BrokenV3 {
        BrokenV3 { bug, in_flight: 1 }
    }
}

#[tilus::script]
impl Script for BrokenV3 {
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        k.blocks([cdiv(m_size, BM), cdiv(n_size, BN)]);
        k.warps(5);
        let offset_m = k.let_i32(BM * k.block_idx().x);
        let offset_n = k.let_i32(BN * k.block_idx().y);
        let k_tiles = k.let_i32(cdiv(k_size, BK));
        let ga = k.global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k.global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k.shared_tensor::<f16>([STAGES, BM, BK]);
        let sb = k.shared_tensor::<f16>([STAGES, BN, BK]);
        let full = k.mbarrier().alloc_counts(&[1; STAGES as usize]);
        let empty = k.mbarrier().alloc_counts(&[128; STAGES as usize]);

        k.thread_group(128, 32, |k| {
            k.single_thread(|k| {
                k.for_range(0, k_tiles, 1, |k, i| {
                    let stage = k.let_i32(i % STAGES);
                    // the phase before the consumers' (a fresh barrier counts it as complete)
                    let ahead = if self.bug == Bug::ProducerPhase { 0 } else { 1 };
                    let free = k.let_i32((i / STAGES + ahead) % 2);
                    #[rustfmt::skip]
                    mark("producer_wait", line!(), k.mbarrier().wait(empty.at(stage), free));
                    let (a, b, bar) = (sa.at(stage), sb.at(stage), full.at(stage));
                    let bytes = a.nbytes() + b.nbytes();
                    let declared: Scalar = match self.bug {
                        Bug::TxBytes(Tx::OnlyA) => a.nbytes().into(),
                        Bug::TxBytes(Tx::Padded) => k.let_i32(bytes + 1024).into(),
                        Bug::TxBytes(Tx::Short) => k.let_i32(bytes - 1024).into(),
                        _ => bytes.into(),
                    };
                    #[rustfmt::skip]
                    mark("expect", line!(), k.mbarrier().arrive_and_expect_tx(bar, declared));
                    let offset_k = k.let_i32(i * BK);
                    #[rustfmt::skip]
                    mark("copy_a", line!(), k.tma().global_to_shared(&ga, &a, [offset_m, offset_k], bar));
                    #[rustfmt::skip]
                    mark("copy_b", line!(), k.tma().global_to_shared(&gb, &b, [offset_n, offset_k], bar));
                });
            });
        });

        k.thread_group(0, 128, |k| {
            let acc = k.register_tensor::<f32>([BM, BN], 0.0);
            k.for_range_unrolled(0, k_tiles, 1, STAGES as u32, |k, i| {
                let stage = k.let_i32(i % STAGES);
                let phase = k.let_i32(i / STAGES % 2);
                #[rustfmt::skip]
                mark("consumer_wait", line!(), k.mbarrier().wait(full.at(stage), phase));
                k.wgmma().fence();
                #[rustfmt::skip]
                mark("mma", line!(), k.wgmma().mma(&sa.at(stage), &sb.at(stage).transpose(), &acc));
                k.wgmma().commit_group();
                match (self.bug, self.in_flight) {
                    (Bug::NoRelease, n) => k.wgmma().wait_group(n as u32),
                    (Bug::EarlyRelease, n) => {
                        #[rustfmt::skip]
                        mark("release", line!(), k.mbarrier().arrive(empty.at(stage)));
                        k.wgmma().wait_group(n as u32);
                    }
                    (_, 0) => {
                        k.wgmma().wait_group(0);
                        k.mbarrier().arrive(empty.at(stage));
                    }
                    _ => {
                        k.wgmma().wait_group(1);
                        k.if_(i.gt(0), |k| {
                            let previous = k.let_i32((i + STAGES - 1) % STAGES);
                            k.mbarrier().arrive(empty.at(previous));
                        });
                    }
                }
            });
            k.wgmma().wait_group(0);
            let casted_acc = k.cast::<f16>(&acc);
            let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
            k.store_global(&gc, &casted_acc, [offset_m, offset_n]);
        });
    }
}

// ------------------------------------------------------------------------------------------
// Which call a diagnostic must point at: `mark("key", line!(), call)`, the call on that line.
// ------------------------------------------------------------------------------------------

thread_local! {
    /// The lines of the marked calls, recorded while the script is traced (on this thread).
    static MARKS: RefCell<HashMap<&'static str, u32>> = RefCell::new(HashMap::new());
}

/// Records that `call`, written on `line` of this file, is the call marked `key`.
fn mark<T>(key: &'static str, line: u32, call: T) -> T {
    MARKS.with(|m| m.borrow_mut().insert(key, line));
    call
}

/// The line of the call marked `key` (the script must have been traced).
fn line_of(key: &str) -> u32 {
    MARKS
        .with(|m| m.borrow().get(key).copied())
        .unwrap_or_else(|| panic!("`{key}` was not marked"))
}

/// Whether a diagnostic points at the call marked `key`.
fn points_at(d: &Diagnostic, key: &str) -> bool {
    d.loc.file == file!() && d.loc.line == line_of(key)
}

// ------------------------------------------------------------------------------------------
// Running and checking.
// ------------------------------------------------------------------------------------------

/// Runs `script` at `m x n x k` on random f16 inputs; with the output and the CPU reference.
fn run(
    script: &BrokenV3,
    (m, n, k): (usize, usize, usize),
) -> (tilus::Result<Report>, Vec<f16>, Vec<f16>) {
    tilus_bench::test_cache!();
    MARKS.with(|m| m.borrow_mut().clear());
    let mut rng = Rng::new(0x5eed + m as u64 + k as u64);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut c = vec![f16::NAN; m * n];
    let args = (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]);
    let r = tilus::interpret(script, args);
    let expect = harness::cpu_reference(&a, &b, m, n, k);
    (r, c, expect)
}

/// The shape of the failing runs: one block, four K steps (the ring of two wraps twice).
const SMALL: (usize, usize, usize) = (128, 128, 256);

/// Runs `script` at [`SMALL`] and returns the interpreter's fault with its diagnostics, after
/// checking its kind and that the first diagnostic points at the call marked `key` and says
/// every phrase. Prints the error as a user sees it.
#[track_caller]
fn expect_fault(script: &BrokenV3, kind: Fault, key: &str, phrases: &[&str]) -> Vec<Diagnostic> {
    let (r, _, _) = run(script, SMALL);
    let e = r.expect_err("the broken pipeline ran");
    println!("{script:?}:\n{e}\n");
    let Error::Interp {
        fault,
        diagnostics: d,
        ..
    } = e
    else {
        panic!("expected an interpreter fault, got: {e}");
    };
    assert_eq!(fault, kind, "{d:#?}");
    assert!(
        points_at(&d[0], key),
        "the first diagnostic should point at `{key}` (line {}): {}",
        line_of(key),
        d[0]
    );
    for p in phrases {
        assert!(d[0].message.contains(p), "{p:?} not in {}", d[0]);
    }
    d
}

/// Some diagnostic after the first points at the call marked `key` and says every phrase.
#[track_caller]
fn assert_noted(d: &[Diagnostic], key: &str, phrases: &[&str]) {
    assert!(
        d[1..]
            .iter()
            .any(|x| points_at(x, key) && phrases.iter().all(|p| x.message.contains(p))),
        "no further diagnostic at `{key}` (line {}) saying {phrases:?}: {d:#?}",
        line_of(key)
    );
}

// ------------------------------------------------------------------------------------------
// The harness is right ...
// ------------------------------------------------------------------------------------------

#[test]
fn without_a_bug_the_broken_v3_computes_the_product() {
    for in_flight in [1, 0] {
        for shape in [SMALL, (256, 256, 512)] {
            let (r, c, expect) = run(
                &BrokenV3 {
                    bug: Bug::None,
                    in_flight,
                },
                shape,
            );
            r.unwrap_or_else(|e| panic!("in_flight {in_flight} at {shape:?}: {e}"));
            let check = harness::compare(&c, &expect);
            assert!(
                check.passed(),
                "in_flight {in_flight} at {shape:?}: {check:?}"
            );
        }
    }
}

// ------------------------------------------------------------------------------------------
// ... and each bug ends in a fault at its line.
// ------------------------------------------------------------------------------------------

#[test]
fn a_producer_waiting_for_the_wrong_empty_phase_deadlocks_at_once() {
    let d = expect_fault(
        &BrokenV3::with(Bug::ProducerPhase),
        Fault::Deadlock,
        "producer_wait",
        &[
            "deadlock: thread 128 waits here for the phase with parity 0 of barrier `empty[0]`",
            "0 phase(s) completed so far",
        ],
    );
    assert_noted(
        &d,
        "consumer_wait",
        &["threads 0-127 wait here for the phase with parity 0 of barrier `full[0]`"],
    );
}

#[test]
fn consumers_that_never_free_a_stage_deadlock_once_the_ring_wraps() {
    let d = expect_fault(
        &BrokenV3::with(Bug::NoRelease),
        Fault::Deadlock,
        "producer_wait",
        &[
            "thread 128 waits here for the phase with parity 0 of barrier `empty[0]`",
            "still expects 128 arrival(s)",
        ],
    );
    assert_noted(&d, "consumer_wait", &["parity 1 of barrier `full[0]`"]);
}

#[test]
fn freeing_a_stage_before_its_wgmma_completes_lets_the_producer_overwrite_it() {
    for in_flight in [1, 0] {
        let d = expect_fault(
            &BrokenV3 {
                bug: Bug::EarlyRelease,
                in_flight,
            },
            Fault::OverwriteBeforeWait,
            "copy_a",
            &["tma.global_to_shared overwrites shared tensor `sa[0]` while a wgmma that reads it is unfinished"],
        );
        assert_noted(&d, "mma", &["the wgmma was issued here"]);
        assert_noted(
            &d,
            "release",
            &["threads 0-127 arrived on barrier `empty[0]` here while the wgmma was unfinished"],
        );
    }
}

#[test]
fn a_constant_byte_count_the_copies_cannot_deliver_is_rejected_by_the_verifier() {
    let (r, _, _) = run(&BrokenV3::with(Bug::TxBytes(Tx::OnlyA)), SMALL);
    let e = r.expect_err("the verifier should reject the script");
    println!("TxBytes(OnlyA):\n{e}\n");
    let Error::Script(d) = e else {
        panic!("expected a verifier diagnostic, got: {e}");
    };
    assert!(points_at(&d[0], "expect"), "{d:#?}");
    assert!(
        d[0].message
            .contains("arrive_and_expect_tx declares 16384 bytes on `full"),
        "{}",
        d[0]
    );
    assert!(d[0].message.contains("deliver 32768 bytes"), "{}", d[0]);
}

#[test]
fn declaring_more_bytes_than_the_copies_deliver_at_run_time_is_never_met() {
    let d = expect_fault(
        &BrokenV3::with(Bug::TxBytes(Tx::Padded)),
        Fault::TxNeverMet,
        "consumer_wait",
        &[
            "transaction count never met",
            "barrier `full[0]`",
            "declared 33792 byte(s)",
            "delivered 32768",
            "remaining 1024 byte(s)",
        ],
    );
    assert!(
        d[0].message
            .contains(&format!("{}:{}", file!(), line_of("expect"))),
        "{}",
        d[0]
    );
}

#[test]
fn declaring_fewer_bytes_than_the_copies_deliver_at_run_time_exceeds_the_count() {
    let d = expect_fault(
        &BrokenV3::with(Bug::TxBytes(Tx::Short)),
        Fault::TxExceeded,
        "copy_b",
        &[
            "transaction count exceeded",
            "barrier `full[0]`",
            "1024 more byte(s) than arrive_and_expect_tx declared (31744)",
        ],
    );
    assert_noted(&d, "expect", &["declared 31744 byte(s) here"]);
}
