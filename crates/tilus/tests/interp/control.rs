//! Control: nested thread groups, warps whose threads disagree on a variable and so can
//! never reassemble for an instruction that needs whole warps, conditionals and `while`
//! loops (and the loop that never ends).

use crate::common::interp::{expect_fault, interpret, run};
use crate::common::scripts::{
    Branches, ClusterLateAnswer, ClusterMulticast, ClusterPairs, ClusterSignals, GroupCopies,
    GroupSyncs, Groups, PersistentItems,
};
use crate::common::{clear_marks, mark, Body};
use tilus::interp::Fault;
use tilus::prelude::*;

/// Nested thread groups: two warp groups store their own rows; one warp of group 0 and one
/// thread of group 1 arrive on a barrier of count 33 that the whole block waits for.
#[test]
fn nested_groups_store_their_own_rows_and_arrive() {
    let mut out = vec![f32::NAN; 512];
    let rep = run(&Groups, (&mut out[..],)).unwrap();
    assert!(out[..256].iter().all(|&x| x == 1.0), "{:?}", &out[..8]);
    assert!(out[256..].iter().all(|&x| x == 2.0), "{:?}", &out[256..264]);
    assert!(rep.max_tasks >= 2, "{rep:?}");
}

/// `thread_groups`: each warp group runs the one copy of the code with its own index (its
/// row, its stage, its arrival), as two `warp_group`s tracing it twice do.
#[test]
fn copies_of_a_group_run_with_their_own_index() {
    for copies in [true, false] {
        let mut out = vec![0i32; 512];
        let script = GroupCopies {
            copies,
            one_stage: false,
        };
        let rep = run(&script, (&mut out[..],)).unwrap();
        assert!(
            out[..256].iter().all(|&x| x == 1),
            "{script:?}: {:?}",
            &out[..8]
        );
        assert!(
            out[256..].iter().all(|&x| x == 11),
            "{script:?}: {:?}",
            &out[256..264]
        );
        assert!(rep.max_tasks >= 2, "{rep:?}");
    }
}

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
            mark("dot", line!(), k.dot(&a, &b, &acc, &acc));
            let g = k.global_view(out, [16, 8]);
            k.store_global(&g, &acc, [0, 0]);
        },
        (&mut out,),
    );
    expect_fault(
        r,
        Fault::Diverged,
        "dot",
        &["needs whole warps", "different values of `v0`"],
    );
}

/// Runtime sizes whose 32-bit arithmetic would overflow are an argument error before anything
/// runs (the index guards of the launch plan; the GPU launch checks the same guards).
#[test]
fn runtime_sizes_are_checked_before_the_kernel_runs() {
    use crate::common::scripts::CountingFill;
    let program = tilus::trace(&CountingFill, &[64]).unwrap();
    let (p, launch) = tilus::passes::compile_program(program).unwrap();
    assert!(!launch.index_guards.is_empty());
    let go = |n: i64, buf: &mut [f32]| {
        let mut args = vec![
            tilus::interp::InterpValue::Int(n),
            tilus::interp::InterpValue::Int(64),
            tilus::interp::InterpValue::buffer_mut(buf),
        ];
        tilus::interp::run_program(&p, &launch, &mut args, &Default::default())
    };
    let mut small = vec![0.0f32; 100];
    go(100, &mut small).unwrap();
    assert!(small.iter().all(|&x| x == 1.0));
    // n + 31 in cdiv(n, 32) passes i32::MAX: named, and nothing runs
    let mut tiny = vec![0.0f32; 4];
    match go(i32::MAX as i64, &mut tiny) {
        Err(tilus::Error::Argument { arg, message }) => {
            assert_eq!(arg, "n");
            assert!(message.contains("n = 2147483647"), "{message}");
            assert!(message.contains("outside the 32-bit integers"), "{message}");
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert!(tiny.iter().all(|&x| x == 0.0), "nothing may have run");
    // the largest n whose arithmetic fits passes the guards; the buffer check comes next
    match go(i32::MAX as i64 - 31, &mut tiny) {
        Err(tilus::Error::Argument { message, .. }) => {
            assert!(message.contains("the buffer holds"), "{message}")
        }
        other => panic!("expected the buffer check, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// Conditionals and while loops.
// ------------------------------------------------------------------------------------------

/// Branches on the block index, a `while` loop with a `sync` over two mutable variables,
/// branches nested in a loop and a thread group inside a branch: every block's row is exact.
#[test]
fn branches_and_while_loops_compute_each_blocks_row() {
    let mut out = vec![0.0f32; Branches::BLOCKS * Branches::COLS];
    run(&Branches, (&mut out[..],)).unwrap();
    assert_eq!(out, Branches::expected());
}

/// Threads that disagree on a condition take their own branches (a task's threads share
/// their variables; tasks with different values take different branches), as each GPU
/// thread does: the elements of warp 1, which set the flag, get the other branch's value.
#[test]
fn threads_that_disagree_on_a_condition_take_their_own_branch() {
    let mut out = vec![0.0f32; 64];
    interpret::<(PtrMut<f32>,)>(
        |k, (out,)| {
            k.blocks([1]);
            k.warps(2);
            let flag = k.var_i32(0);
            k.single_warp(1, |k| k.assign(flag, 1));
            let g = k.global_view(out, [64]);
            k.if_else(
                flag.eq_(1),
                |k| {
                    let t = k.register_tensor::<f32>([64], 2.0);
                    k.store_global(&g, &t, [0]);
                },
                |k| {
                    let t = k.register_tensor::<f32>([64], 1.0);
                    k.store_global(&g, &t, [0]);
                },
            );
        },
        (&mut out,),
    )
    .unwrap();
    assert!(out[..32].iter().all(|&x| x == 1.0), "{:?}", &out[..32]);
    assert!(out[32..].iter().all(|&x| x == 2.0), "{:?}", &out[32..]);
}

/// An `if` without `else` whose condition is false, and a `while` whose condition is false
/// from the start, run nothing; an `if` on a runtime argument picks the offset.
#[test]
fn untaken_branches_and_loops_run_nothing() {
    type Args = (i32, PtrMut<f32>);
    fn body(k: &mut Kernel, (n, out): Handles<Args>) {
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view(out, [64]);
        let t = k.register_tensor::<f32>([32], 7.0);
        k.if_(n.gt(100), |k| k.store_global(&g, &t, [0]));
        let i = k.var_i32(n);
        k.while_(i.lt(n), |k| {
            k.store_global(&g, &t, [0]);
            k.assign(i, i + 1);
        });
        k.if_else(n.eq_(1), |k| k.store_global(&g, &t, [32]), |_| {});
    }
    for (n, lo, hi) in [(1, 0.0, 7.0), (5, 0.0, 0.0), (101, 7.0, 0.0)] {
        let mut out = vec![0.0f32; 64];
        interpret::<Args>(body, (n, &mut out)).unwrap();
        assert!(out[..32].iter().all(|&x| x == lo), "n = {n}: {out:?}");
        assert!(out[32..].iter().all(|&x| x == hi), "n = {n}: {out:?}");
    }
}

/// A `while` loop whose condition never becomes false ends in a fault at its line, after the
/// interpreter's iteration limit (small here), instead of running forever.
#[test]
fn a_while_loop_that_never_ends_is_a_fault() {
    clear_marks();
    let script = Body::<(PtrMut<f32>,)>(|k, _| {
        k.blocks([1]);
        k.warps(1);
        let i = k.var_i32(0);
        // the body never advances `i`
        #[rustfmt::skip]
        mark("loop", line!(), k.while_(i.lt(10), |k| k.assign(i, i * 1)));
    });
    let opts = tilus::interp::Options {
        max_loop_iterations: 1000,
        ..Default::default()
    };
    let mut out = [0.0f32; 1];
    let r = tilus::interpret_with(&script, (&mut out[..],), &opts);
    expect_fault(
        r,
        Fault::RunawayLoop,
        "loop",
        &[
            "the condition `(v0 < 10)` still holds after 1000 iterations",
            "max_loop_iterations",
        ],
    );

    // an empty body can never make its condition false: at once, whatever the limit
    let mut out = vec![0.0f32; 1];
    let r = interpret::<(PtrMut<f32>,)>(
        |k, _| {
            k.blocks([1]);
            k.warps(1);
            let n = k.let_i32(k.block_idx().x);
            #[rustfmt::skip]
            mark("loop", line!(), k.while_(n.eq_(0), |_| {}));
        },
        (&mut out,),
    );
    expect_fault(r, Fault::RunawayLoop, "loop", &["the body is empty"]);
}

/// Tiles of the two branches of an `if` share their bytes (only one branch runs): each
/// block's values come through its branch's tile, and no overlap is reported.
#[test]
fn tiles_of_the_two_branches_share_bytes() {
    let body: fn(&mut Kernel, Handles<(PtrMut<f32>,)>) = |k, (out,)| {
        k.blocks([2]);
        k.warps(1);
        let bx = k.block_idx().x;
        let g = k.global_view(out, [2, 32]);
        let through = |k: &mut Kernel, v: f64| {
            let s = k.shared_tensor::<f32>([1, 32]);
            let r = k.register_tensor::<f32>([1, 32], v);
            k.store_shared(&s, &r);
            k.sync();
            let back = k.load_shared(&s);
            k.store_global(&g, &back, (bx.clone(), 0));
            k.sync();
            k.free_shared(&s);
        };
        k.if_else(bx.clone().eq_(0), |k| through(k, 1.0), |k| through(k, 2.0));
    };
    let p = tilus::trace(&Body::<(PtrMut<f32>,)>(body), &[]).unwrap();
    let (p, _) = tilus::passes::compile_program(p).unwrap();
    assert_eq!(p.shareds[0].offset, p.shareds[1].offset);
    let mut out = vec![0.0f32; 64];
    interpret::<(PtrMut<f32>,)>(body, (&mut out,)).unwrap();
    assert!(out[..32].iter().all(|&x| x == 1.0), "{out:?}");
    assert!(out[32..].iter().all(|&x| x == 2.0), "{out:?}");
}

/// A persistent grid runs at most one block per multiprocessor (four on the interpreter's
/// default device, or as many as its options say), the fewest that take as many rounds (9
/// items on four: three rounds, three blocks), each taking every `blocks`-th item.
#[test]
fn a_persistent_grid_runs_one_block_per_multiprocessor_at_most() {
    for items in [3usize, 4, 9, 11] {
        let mut out = vec![-1i32; items];
        run(&PersistentItems, (items as i32, &mut out[..])).unwrap();
        assert_eq!(out, PersistentItems::reference(items, 4), "{items} items");
    }
    let mut out = vec![-1i32; 20];
    let opts = tilus::interp::Options {
        multiprocessors: 7,
        ..Default::default()
    };
    tilus::interpret_with(&PersistentItems, (20, &mut out[..]), &opts).unwrap();
    assert_eq!(out, PersistentItems::reference(20, 7));
}

/// A group barrier waits for its own group only: warp group 1 is held on an mbarrier that
/// warp group 0 arrives on after its `sync_group` (a block barrier there would deadlock).
#[test]
fn a_group_barrier_waits_for_its_group_only() {
    let mut out = [f32::NAN; 256];
    run(&GroupSyncs, (&mut out[..],)).unwrap();
    assert!(out[..128].iter().all(|&x| x == 1.0), "{:?}", &out[..4]);
    assert!(out[128..].iter().all(|&x| x == 2.0), "{:?}", &out[128..132]);
}

/// The blocks of a cluster run together: each knows its rank, and the pair meets at the
/// cluster barrier (twice) before either goes on.
#[test]
fn clusters_of_two_meet_at_their_barrier_and_know_their_rank() {
    for blocks in [2usize, 6] {
        let mut out = vec![-1i32; blocks];
        run(
            &ClusterPairs { lone_sync: false },
            (blocks as i32, &mut out[..]),
        )
        .unwrap();
        assert_eq!(out, ClusterPairs::reference(blocks));
    }
}

/// A grid that is not whole clusters is refused before anything runs.
#[test]
fn a_grid_of_part_of_a_cluster_is_refused() {
    let mut out = [-1i32; 3];
    let err = run(&ClusterPairs { lone_sync: false }, (3, &mut out[..])).unwrap_err();
    assert!(
        err.to_string()
            .contains("not a multiple of the cluster's 2"),
        "{err}"
    );
    assert!(out.iter().all(|&v| v == -1));
}

/// Only rank 0 goes to the cluster barrier: its partner finishes, and rank 0 waits forever;
/// the interpreter reports the deadlock at the barrier's line.
#[test]
fn a_cluster_barrier_one_block_skips_is_a_deadlock_at_its_line() {
    let mut out = [-1i32; 2];
    expect_fault(
        run(&ClusterPairs { lone_sync: true }, (2, &mut out[..])),
        Fault::Deadlock,
        "lone_sync",
        &[
            "deadlock",
            "cluster_sync()",
            "the other blocks of the cluster",
        ],
    );
}

/// Each block completes its partner's barrier with remote arrivals: both waits return.
#[test]
fn blocks_of_a_cluster_complete_each_others_barriers() {
    for after_reads in [false, true] {
        let mut out = vec![-1i32; 4];
        run(
            &ClusterSignals {
                after_reads,
                ..ClusterSignals::default()
            },
            (4, &mut out[..]),
        )
        .unwrap();
        assert_eq!(out, vec![1000, 1, 1002, 3]);
    }
}

/// Meeting after the barriers' allocation without memory ordering, and not again at the end:
/// each block waits for its own barrier, which only its partner's arrivals complete, so no
/// arrival can reach a finished block; the result is the same.
#[test]
fn a_relaxed_first_meeting_and_waited_arrivals_need_no_last_meeting() {
    for after_reads in [false, true] {
        let mut out = vec![-1i32; 4];
        let script = ClusterSignals {
            after_reads,
            relaxed_start: true,
            end_sync: false,
            ..ClusterSignals::default()
        };
        run(&script, (4, &mut out[..])).unwrap();
        assert_eq!(out, vec![1000, 1, 1002, 3]);
    }
}

/// A block that neither waits for its partner's arrivals nor meets it before the end may
/// finish first: the partner's arrival then reaches a finished block (on the GPU, shared
/// memory another block may own by then), a fault at the arrival's line.
#[test]
fn an_arrival_on_a_finished_block_is_a_fault_at_its_line() {
    let mut out = [-1i32; 2];
    expect_fault(
        run(&ClusterLateAnswer, (2, &mut out[..])),
        Fault::NotWaited,
        "answer",
        &[
            "reaches the block of rank 0 after that block finished",
            "cluster_sync()",
        ],
    );
}

/// An arrival on a rank the cluster does not have is a fault at the call.
#[test]
fn a_remote_arrival_outside_the_cluster_is_a_fault_at_its_line() {
    let mut out = [-1i32; 2];
    expect_fault(
        run(
            &ClusterSignals {
                to: 2,
                ..ClusterSignals::default()
            },
            (2, &mut out[..]),
        ),
        Fault::Invalid,
        "arrive_remote",
        &["the cluster has 2 block(s)"],
    );
}

/// Each block of a cluster loads half of a shared tile for both (one multicast copy each):
/// both blocks end with the whole tile, and the copies land on each block's own barrier.
#[test]
fn multicast_copies_land_in_every_block_of_the_mask() {
    let src: Vec<f32> = (0..64 * 32).map(|i| i as f32 * 0.5 - 7.0).collect();
    let blocks = 4usize;
    let mut out = vec![f32::NAN; blocks * 64 * 32];
    run(
        &ClusterMulticast { mask: 0b11 },
        (blocks as i32, &src[..], &mut out[..]),
    )
    .unwrap();
    for b in 0..blocks {
        assert_eq!(&out[b * 64 * 32..(b + 1) * 64 * 32], &src[..], "block {b}");
    }
}

/// A multicast to a rank the cluster does not have is a fault at the copy.
#[test]
fn a_multicast_outside_the_cluster_is_a_fault_at_its_line() {
    let src = vec![1.0f32; 64 * 32];
    let mut out = vec![f32::NAN; 2 * 64 * 32];
    expect_fault(
        run(
            &ClusterMulticast { mask: 0b101 },
            (2, &src[..], &mut out[..]),
        ),
        Fault::Invalid,
        "multicast",
        &["to the block of rank 2", "the cluster has 2 block(s)"],
    );
}
