//! Fences between blocks: a handshake through global memory (stores, `fence_gpu`, an atomic
//! that signals; the atomic that sees it, `fence_gpu`, the loads) runs, and without either
//! fence the interpreter reports the missing one, naming the signal (release) or the read
//! (acquire) and the other side's lines.

use crate::common::interp::{expect_fault, fault};
use crate::common::mark;
use tilus::interp::{Fault, Options};
use tilus::prelude::*;
use tilus::Error;

use crate::common::scripts::global::LastBlockSums;

/// Block 0 stores 32 values into `work` and raises `flag`; block 1 waits for the flag and
/// copies `work` to `out`. `store_late` moves the store after the release fence.
#[derive(Clone, Debug, Hash)]
struct Handshake {
    store_late: bool,
}

impl Script for Handshake {
    type Args = (PtrMut<f32>, PtrMut<i32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["work", "flag", "out"]
    }
    fn body(&self, k: &mut Kernel, (work, flag, out): Handles<Self::Args>) {
        k.blocks([2]);
        k.warps(1);
        let w = k.global_view(work, [32]);
        let f = k.global_view(flag, [1]);
        let o = k.global_view(out, [32]);
        let bid = k.let_i32(k.block_idx().x);
        let late = self.store_late;
        k.if_else(
            bid.eq_(0),
            |k| {
                let t = k.register_tensor::<f32>([32], Some(2.5));
                if !late {
                    mark("store", line!(), k.store_global(&w, &t, [0]));
                }
                mark("release", line!(), k.fence_gpu());
                if late {
                    mark("store", line!(), k.store_global(&w, &t, [0]));
                }
                k.sync();
                k.single_thread(|k| {
                    mark("signal", line!(), k.atomic_exchange_scalar(&f, [0], 1));
                });
            },
            |k| {
                k.single_thread(|k| {
                    let seen = k.var_i32(0);
                    k.while_(seen.eq_(0), |k| {
                        let old = mark("see", line!(), k.atomic_cas_scalar(&f, [0], 1, 0));
                        k.assign(seen, old);
                    });
                });
                k.sync();
                mark("acquire", line!(), k.fence_gpu());
                let t = mark("read", line!(), k.load_global(&w, [0], [32]));
                k.store_global(&o, &t, [0]);
            },
        );
    }
}

fn handshake(store_late: bool, without_fence: Option<usize>) -> tilus::Result<Vec<f32>> {
    let (mut work, mut flag, mut out) = (vec![0.0f32; 32], vec![0i32], vec![-1.0f32; 32]);
    crate::common::clear_marks();
    let opts = Options {
        without_fence,
        ..Options::default()
    };
    let script = Handshake { store_late };
    tilus::interpret_with(&script, (&mut work[..], &mut flag[..], &mut out[..]), &opts)?;
    assert_eq!(flag, vec![0], "the reader lowers the flag");
    Ok(out)
}

/// The line of marked call `key`.
fn line(key: &str) -> u32 {
    crate::common::marked(key).unwrap().line
}

#[test]
fn a_handshake_with_both_fences_runs() {
    crate::common::cache_dir();
    assert_eq!(handshake(false, None).unwrap(), vec![2.5; 32]);
}

#[test]
fn without_the_release_fence_the_signal_is_reported_with_the_store_and_the_read() {
    crate::common::cache_dir();
    let d = expect_fault(
        handshake(false, Some(0)),
        Fault::MissingReleaseFence,
        "signal",
        &["fence_gpu", "release", "`work`"],
    );
    let lines: Vec<u32> = d.iter().map(|x| x.loc.line).collect();
    assert_eq!(
        lines,
        vec![line("signal"), line("store"), line("see"), line("read")],
        "{d:#?}"
    );
}

#[test]
fn without_the_acquire_fence_the_read_is_reported_with_the_signal_it_saw() {
    crate::common::cache_dir();
    let d = expect_fault(
        handshake(false, Some(1)),
        Fault::MissingAcquireFence,
        "read",
        &["fence_gpu", "acquire", "`work`"],
    );
    let lines: Vec<u32> = d.iter().map(|x| x.loc.line).collect();
    assert_eq!(
        lines,
        vec![line("read"), line("see"), line("signal"), line("store")],
        "{d:#?}"
    );
}

/// A store one step late (after the fence, before the signal) is not published.
#[test]
fn a_store_after_the_release_fence_is_not_published() {
    crate::common::cache_dir();
    expect_fault(
        handshake(true, None),
        Fault::MissingReleaseFence,
        "signal",
        &["release"],
    );
}

#[test]
fn a_fence_number_beyond_the_programs_fences_is_an_argument_error() {
    crate::common::cache_dir();
    match handshake(false, Some(2)) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "without_fence");
            assert!(message.contains("2 `fence_gpu` statements"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// The last block's ticket continues every earlier block's: it sees all their signals, and
/// reads their rows through atomics. Each of the two fences is needed.
#[test]
fn the_last_block_sees_every_earlier_ticket_and_needs_both_fences() {
    crate::common::cache_dir();
    let nb = 5;
    let rows: Vec<i32> = (0..nb * 32).map(|i| (i * 37 % 101) as i32 - 50).collect();
    let sums = |without_fence| {
        let (mut work, mut ticket, mut out) = (vec![0; nb * 32], vec![0], vec![-1; 32]);
        let args = (
            nb as i32,
            &rows[..],
            &mut work[..],
            &mut ticket[..],
            &mut out[..],
        );
        let opts = Options {
            without_fence,
            ..Options::default()
        };
        tilus::interpret_with(&LastBlockSums, args, &opts).map(|_| out)
    };
    assert_eq!(sums(None).unwrap(), LastBlockSums::reference(&rows));
    assert_eq!(fault(sums(Some(0))).0, Fault::MissingReleaseFence);
    assert_eq!(fault(sums(Some(1))).0, Fault::MissingAcquireFence);
}

/// Blocks take turns through a semaphore: block `b` waits until it reads `b`, adds `b + 1` to
/// a running row, and releases `b + 1`. Both of the semaphore's fences are needed.
#[derive(Clone, Debug, Hash)]
struct Turns {
    blocks: i32,
}

impl Script for Turns {
    type Args = (PtrMut<i32>, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (sem, acc): Handles<Self::Args>) {
        k.blocks([self.blocks]);
        k.warps(1);
        let s = k.global_view(sem, [1]);
        let a = k.global_view(acc, [32]);
        let b = k.let_i32(k.block_idx().x);
        k.lock_semaphore(&s, [0], b);
        let row = k.load_global(&a, [0], [32]);
        let next = k.compute(row + (b + 1));
        k.store_global(&a, &next, [0]);
        k.release_semaphore(&s, [0], b + 1);
    }
}

#[test]
fn blocks_take_turns_through_a_semaphore_and_need_both_its_fences() {
    crate::common::cache_dir();
    let run = |without_fence| {
        let (mut sem, mut acc) = (vec![0i32], vec![5i32; 32]);
        let opts = Options {
            without_fence,
            ..Options::default()
        };
        tilus::interpret_with(&Turns { blocks: 6 }, (&mut sem[..], &mut acc[..]), &opts)
            .map(|_| (sem, acc))
    };
    let (sem, acc) = run(None).unwrap();
    assert_eq!(sem, vec![6]);
    // and the GPU's code compiles
    let c = tilus::build(&Turns { blocks: 6 }, &[]).unwrap();
    assert!(c.source.contains("__threadfence()") || c.source.contains("fence.acq_rel.gpu"));
    assert!(acc.iter().all(|&v| v == 5 + 21), "{acc:?}");
    // the release's fence (the program's second), then the acquire's (its first)
    for (n, kind) in [
        (1, Fault::MissingReleaseFence),
        (0, Fault::MissingAcquireFence),
    ] {
        let (f, _) = fault(run(Some(n)));
        assert_eq!(f, kind, "without fence {n}");
    }
}
