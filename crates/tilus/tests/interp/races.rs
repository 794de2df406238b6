//! Races on shared memory between warps: a read of bytes another warp wrote, or a write of
//! bytes another warp read or wrote, with no barrier between (`sync`, a group barrier, an
//! mbarrier one side arrives on and the other waits for). Each case, with its barrier, passes
//! the verifier and the interpreter and computes the right result; without it, the verifier
//! rejects it naming both lines where the text shows the race for certain, and the interpreter,
//! run on the unverified program, reports it at run time with both lines.

use crate::common::interp::{assert_noted, expect_fault, plan_unverified, run, run_planned};
use crate::common::{mark, marked};
use tilus::interp::{Fault, InterpValue};
use tilus::prelude::*;
use tilus::Error;

/// `[rows, cols]` row-major `f32` values, all different.
fn values(rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|i| i as f32 * 0.5 - 7.0).collect()
}

/// Runs a correct form: the verifier and the interpreter accept it, and it copies `src`.
fn copies<S: Script<Args = Args>>(script: &S, len: usize) {
    let src = values(len, 1);
    let mut out = vec![f32::NAN; len];
    run(script, (&src[..], &mut out[..])).unwrap();
    assert_eq!(out, src, "{script:?}");
}

/// Interprets a racy form without the verifier.
fn unverified<S: Script<Args = Args>>(script: &S, len: usize) -> tilus::Result<()> {
    let (p, plan) = plan_unverified(script);
    let src = values(len, 1);
    let mut out = vec![f32::NAN; len];
    let mut args = vec![InterpValue::buffer(&src), InterpValue::buffer_mut(&mut out)];
    run_planned(&p, &plan, &mut args).map(|_| ())
}

/// The verifier rejects a racy form at the call marked `key`, with `phrases`, naming the line
/// of the call marked `other`.
#[track_caller]
fn rejected<S: Script>(script: &S, key: &str, other: &str, phrases: &[&str]) {
    crate::common::clear_marks();
    let program = tilus::trace(script, &[]).unwrap();
    let d = match tilus::passes::compile_program(program) {
        Err(Error::Script(d)) => d,
        Err(e) => panic!("expected the verifier's diagnostics, got {e}"),
        Ok(_) => panic!("the verifier accepted {script:?}"),
    };
    let (at, there) = (marked(key).unwrap(), marked(other).unwrap());
    assert_eq!((d[0].loc.file, d[0].loc.line), (at.file, at.line), "{d:#?}");
    let m = &d[0].message;
    assert!(
        m.contains(&format!("{}:{}:", there.file, there.line)),
        "{m}"
    );
    for p in phrases {
        assert!(m.contains(p), "{p:?} not in {m}");
    }
}

type Args = (Ptr<f32>, PtrMut<f32>);

/// Warp 0 stores a tile, warp 1 loads it and writes it out (`gather`: every warp stores its
/// part and warp 0 loads the whole tile, a part of which it stored itself; it is ordered after
/// that part only): with `sync()` between them, or not.
#[derive(Clone, Debug, Hash)]
struct Handoff {
    with_sync: bool,
    gather: bool,
}

impl Script for Handoff {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(if self.gather { 4 } else { 2 });
        let g = k.global_view(src, [32, 32]);
        let o = k.global_view(out, [32, 32]);
        let s = k.shared_tensor::<f32>([32, 32]);
        let store = |k: &mut Kernel| {
            let t = k.load_global(&g, [0, 0], [32, 32]);
            mark("store", line!(), k.store_shared(&s, &t));
        };
        if self.gather {
            store(k);
        } else {
            k.single_warp(0, store);
        }
        if self.with_sync {
            k.sync();
        }
        k.single_warp(if self.gather { 0 } else { 1 }, |k| {
            let t = mark("load", line!(), k.load_shared(&s));
            k.store_global(&o, &t, [0, 0]);
        });
    }
}

#[test]
fn a_load_of_another_warps_store_needs_a_barrier_between() {
    copies(
        &Handoff {
            with_sync: true,
            gather: false,
        },
        32 * 32,
    );
    let racy = Handoff {
        with_sync: false,
        gather: false,
    };
    rejected(
        &racy,
        "load",
        "store",
        &[
            "load_shared reads bytes of `s0`",
            "in warp 1 that store_shared wrote in warp 0",
        ],
    );
    let d = expect_fault(
        unverified(&racy, 32 * 32),
        Fault::SharedRace,
        "load",
        &[
            "load_shared: thread 32 (warp 1) reads bytes of `s0`",
            "that thread 0 (warp 0) wrote with nothing ordering the two",
            "the read may see the bytes before the write lands",
            "A `sync()`",
        ],
    );
    assert_noted(&d, "store");
}

/// Copies of a group (`thread_groups`) are different warps: each on its own stage, no race;
/// both on one stage, the second group's store races with the first's, in the verifier and
/// in the interpreter.
#[test]
fn copies_of_a_group_race_on_a_stage_they_share() {
    use crate::common::scripts::GroupCopies;
    let racy = GroupCopies {
        copies: true,
        one_stage: true,
    };
    rejected(
        &racy,
        "store",
        "store",
        &["in warp 4 that store_shared wrote in warp 0"],
    );
    let (p, plan) = plan_unverified(&racy);
    let mut out = vec![0i32; 512];
    let mut args = vec![InterpValue::buffer_mut(&mut out)];
    let r = run_planned(&p, &plan, &mut args).map(|_| ());
    expect_fault(r, Fault::SharedRace, "store", &["(warp 4)", "(warp 0)"]);
}

const ROUNDS: i32 = 3;

/// Four warps store one row each of a `[4, 32]` scratch tile; after a barrier warp 0 reads
/// all four rows and writes them out, once per round. `end_sync`: a barrier at the end of each
/// round, before the scratch is written again.
#[derive(Clone, Debug, Hash)]
struct ScratchRounds {
    end_sync: bool,
}

impl Script for ScratchRounds {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view(src, [4 * ROUNDS, 32]);
        let o = k.global_view(out, [4 * ROUNDS, 32]);
        let scratch = k.shared_tensor::<f32>([4, 32]);
        k.for_range(0, ROUNDS, 1, |k, r| {
            let t = k.load_global(&g, [r * 4, Scalar::from(0)], [4, 32]);
            mark("refill", line!(), k.store_shared(&scratch, &t));
            k.sync();
            k.single_warp(0, |k| {
                let all = mark("gather", line!(), k.load_shared(&scratch));
                k.store_global(&o, &all, [r * 4, Scalar::from(0)]);
            });
            if self.end_sync {
                k.sync();
            }
        });
    }
}

#[test]
fn a_warp_that_stored_a_part_needs_a_barrier_before_reading_the_others_parts() {
    copies(
        &Handoff {
            with_sync: true,
            gather: true,
        },
        32 * 32,
    );
    let racy = Handoff {
        with_sync: false,
        gather: true,
    };
    rejected(
        &racy,
        "load",
        "store",
        &[
            "load_shared reads bytes of `s0`",
            "in warp 0 that store_shared wrote in warp",
        ],
    );
    let d = expect_fault(unverified(&racy, 32 * 32), Fault::SharedRace, "load", &[]);
    assert_noted(&d, "store");
}

#[test]
fn a_reduction_scratch_written_again_needs_a_barrier_after_its_reads() {
    let len = 4 * ROUNDS as usize * 32;
    copies(&ScratchRounds { end_sync: true }, len);
    let racy = ScratchRounds { end_sync: false };
    rejected(
        &racy,
        "refill",
        "gather",
        &[
            "store_shared writes bytes of `s0`",
            "that load_shared read in warp 0",
        ],
    );
    let d = expect_fault(
        unverified(&racy, len),
        Fault::SharedRace,
        "refill",
        &[
            "store_shared: thread 32 (warp 1) writes bytes of `s0`",
            "(warp 0) read with nothing ordering the two",
            "the write may land before the read",
        ],
    );
    assert_noted(&d, "gather");
}

/// Two warps pass `[2, 256]` tiles through two buffers, one barrier per round: each warp stores
/// its row, then reads the other warp's row and writes it out. `flip_late` uses one buffer for
/// two rounds in a row, so a round's stores overwrite what the previous round still reads.
#[derive(Clone, Debug, Hash)]
struct DoubleBuffer {
    flip_late: bool,
}

impl Script for DoubleBuffer {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(2);
        let rounds = 4;
        let g = k.global_view(src, [2 * rounds, 256]);
        let o = k.global_view(out, [2 * rounds, 256]);
        let bufs = [k.shared_tensor::<f32>([2, 256]), k.shared_tensor([2, 256])];
        for r in 0..rounds {
            let buf = &bufs[(if self.flip_late { r / 2 } else { r } % 2) as usize];
            let t = k.load_global(&g, [2 * r, 0], [2, 256]);
            mark("fill", line!(), k.store_shared(buf, &t));
            k.sync();
            for w in 0..2 {
                k.single_warp(w, |k| {
                    let row = 1 - w as i32;
                    let x = mark("drain", line!(), k.load_shared(&buf.rows(row, 1)));
                    k.store_global(&o, &x, [2 * r + row, 0]);
                });
            }
        }
    }
}

#[test]
fn a_double_buffer_flipped_late_overwrites_what_the_other_warp_still_reads() {
    copies(&DoubleBuffer { flip_late: false }, 2 * 4 * 256);
    let racy = DoubleBuffer { flip_late: true };
    rejected(
        &racy,
        "fill",
        "drain",
        &[
            "store_shared writes bytes of `s0`",
            "that load_shared read in warp",
        ],
    );
    let d = expect_fault(
        unverified(&racy, 2 * 4 * 256),
        Fault::SharedRace,
        "fill",
        &[
            "store_shared: thread 0 (warp 0) writes bytes of `s0`",
            "(warp 1) read",
        ],
    );
    assert_noted(&d, "drain");
}

/// A producer warp fills a one-stage buffer with ordinary stores for a consumer warp through
/// two mbarriers (`full`: 32 arrivals by the producer; `empty`: 32 by the consumer).
/// `free_early`: the consumer frees the stage before it reads it.
#[derive(Clone, Debug, Hash)]
struct MbarrierHandoff {
    free_early: bool,
}

impl Script for MbarrierHandoff {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        let free_early = self.free_early;
        k.blocks([1]);
        k.warps(2);
        let g = k.global_view(src, [16 * ROUNDS, 32]);
        let o = k.global_view(out, [16 * ROUNDS, 32]);
        let stage = k.shared_tensor::<f32>([16, 32]);
        let full = k.mbarrier().alloc([32]);
        let empty = k.mbarrier().alloc([32]);
        k.single_warp(1, |k| {
            k.for_range(0, ROUNDS, 1, |k, r| {
                k.mbarrier().wait(empty[0], (r + 1) % 2);
                let t = k.load_global(&g, [r * 16, Scalar::from(0)], [16, 32]);
                mark("produce", line!(), k.store_shared(&stage, &t));
                k.mbarrier().arrive(full[0]);
            });
        });
        k.single_warp(0, |k| {
            k.for_range(0, ROUNDS, 1, |k, r| {
                k.mbarrier().wait(full[0], r % 2);
                if free_early {
                    k.mbarrier().arrive(empty[0]);
                }
                let t = mark("consume", line!(), k.load_shared(&stage));
                if !free_early {
                    k.mbarrier().arrive(empty[0]);
                }
                k.store_global(&o, &t, [r * 16, Scalar::from(0)]);
            });
        });
    }
}

#[test]
fn a_stage_refilled_by_ordinary_stores_is_ordered_by_its_mbarriers_alone() {
    let len = 16 * ROUNDS as usize * 32;
    copies(&MbarrierHandoff { free_early: false }, len);
    // who arrives on which barrier is beyond the text: the verifier lets it through
    let racy = MbarrierHandoff { free_early: true };
    crate::common::clear_marks();
    let program = tilus::trace(&racy, &[]).unwrap();
    assert!(tilus::passes::compile_program(program).is_ok());
    let d = expect_fault(
        unverified(&racy, len),
        Fault::SharedRace,
        "consume",
        &[
            "load_shared: thread 0 (warp 0) reads bytes of `s0`",
            "thread 32 (warp 1) wrote",
        ],
    );
    assert_noted(&d, "produce");
}

/// A group barrier orders the warps of its group only: warps 0 and 1 meet at their group's
/// barrier, warp 2 at none; `reader` loads what warp 0 stored.
#[derive(Clone, Debug, Hash)]
struct GroupBarrier {
    reader: u32,
}

impl Script for GroupBarrier {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view(src, [32, 32]);
        let o = k.global_view(out, [32, 32]);
        let s = k.shared_tensor::<f32>([32, 32]);
        k.single_warp(0, |k| {
            let t = k.load_global(&g, [0, 0], [32, 32]);
            mark("store", line!(), k.store_shared(&s, &t));
        });
        k.thread_group(0, 64, |k| k.sync_group());
        k.single_warp(self.reader, |k| {
            let t = mark("load", line!(), k.load_shared(&s));
            k.store_global(&o, &t, [0, 0]);
        });
    }
}

#[test]
fn a_group_barrier_orders_its_own_warps_only() {
    copies(&GroupBarrier { reader: 1 }, 32 * 32);
    let racy = GroupBarrier { reader: 2 };
    rejected(
        &racy,
        "load",
        "store",
        &["in warp 2 that store_shared wrote in warp 0"],
    );
    let d = expect_fault(
        unverified(&racy, 32 * 32),
        Fault::SharedRace,
        "load",
        &["thread 64 (warp 2) reads", "thread 0 (warp 0) wrote"],
    );
    assert_noted(&d, "store");
}

/// A ring of two stages indexed by the loop (`s.at(i % 2)`): warp 0 fills the stage, warp 1
/// drains it after a barrier, one barrier per round. Without the barrier, within a round the
/// fill and the drain name the same stage for certain (one variable, not written in between),
/// so the verifier reports it; the interpreter reports it in the stage the round computed.
#[derive(Clone, Debug, Hash)]
struct StagedRing {
    with_sync: bool,
}

impl Script for StagedRing {
    type Args = Args;
    fn body(&self, k: &mut Kernel, (src, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(2);
        let g = k.global_view(src, [8 * 32, 32]);
        let o = k.global_view(out, [8 * 32, 32]);
        let ring = k.shared_tensor::<f32>([2, 32, 32]);
        let with_sync = self.with_sync;
        k.for_range(0, 8, 1, |k, i| {
            let stage = k.let_i32(i % 2);
            k.single_warp(0, |k| {
                let t = k.load_global(&g, (i * 32, 0), [32, 32]);
                mark("fill", line!(), k.store_shared(&ring.at(stage), &t));
            });
            if with_sync {
                k.sync();
            }
            k.single_warp(1, |k| {
                let t = mark("drain", line!(), k.load_shared(&ring.at(stage)));
                k.store_global(&o, &t, (i * 32, 0));
            });
        });
    }
}

#[test]
fn a_ring_indexed_by_the_loop_needs_its_barrier_in_every_round() {
    copies(&StagedRing { with_sync: true }, 8 * 32 * 32);
    let racy = StagedRing { with_sync: false };
    crate::common::clear_marks();
    let program = tilus::trace(&racy, &[]).unwrap();
    let verdict = tilus::passes::compile_program(program);
    let msg = match verdict {
        Err(Error::Script(d)) => d[0].message.clone(),
        other => panic!("{other:?}"),
    };
    assert!(msg.contains("load_shared reads bytes of `s0`"), "{msg}");
    let d = expect_fault(
        unverified(&racy, 8 * 32 * 32),
        Fault::SharedRace,
        "drain",
        &[
            "load_shared: thread 32 (warp 1) reads bytes of `s0[0]`",
            "thread 0 (warp 0) wrote",
        ],
    );
    assert_noted(&d, "fill");
}
