//! Launch configuration, loops, thread groups, `sync` and scalar variables.

use super::OutF32;
use crate::common::{at, check};
use tilus::prelude::*;

#[test]
fn sync_inside_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.single_warp(1, |k| {
            at(line!(), k.sync());
        });
    })
    .fails_once("sync() inside a thread group would wait for threads that never arrive");

    check::<OutF32>(|k, _| {
        k.warps(4);
        k.for_range(0, 4, 1, |k, _| {
            k.single_thread(|k| {
                at(line!(), k.sync());
            });
        });
    })
    .fails_once("sync() inside a thread group");
}

#[test]
fn thread_group_outside_its_enclosing_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.thread_group(96, 64, |_| {}));
    })
    .fails_once("threads 96..160 are not inside the enclosing group of 128 threads");

    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.single_warp(4, |_| {}));
    })
    .fails_once("single_warp: threads 128..160 are not inside");

    check::<OutF32>(|k, _| {
        k.warps(4);
        k.single_warp(0, |k| {
            at(line!(), k.thread_group(16, 32, |_| {}));
        });
    })
    .fails_once("threads 16..48 are not inside the enclosing group of 32 threads");
}

#[test]
fn empty_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.thread_group(0, 0, |_| {}));
    })
    .fails_once("thread_group: a thread group needs at least one thread");
}

/// The builder cannot check a group opened before `warps` is set; the verifier does.
#[test]
fn thread_group_larger_than_the_block_declared_later() {
    check::<OutF32>(|k, _| {
        at(line!(), k.thread_group(0, 256, |_| {}));
        k.warps(4);
    })
    .fails_once("thread group 0..256 does not fit in the enclosing group of 128 threads");
}

#[test]
fn warp_group_not_aligned_to_four_warps() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        at(line!(), k.warp_group(2, |_| {}));
    })
    .fails_once("warp_group must start at a warp index divisible by 4, got 2");
}

#[test]
fn warps_out_of_range() {
    for n in [0u32, 33] {
        let r = match n {
            0 => check::<OutF32>(|k, _| {
                at(line!(), k.warps(0));
            }),
            _ => check::<OutF32>(|k, _| {
                at(line!(), k.warps(33));
            }),
        };
        // The rejected call also leaves the warps unset, which is reported too.
        let d = r.fails("warps must be between 1 and 32 (1024 threads)");
        assert!(d.message.contains(&format!("got {n}")), "{d}");
    }
}

#[test]
fn warps_set_inside_a_loop_or_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.for_range(0, 4, 1, |k, _| {
            at(line!(), k.warps(4));
        });
    })
    .fails_once("warps must be set at the top of the body");

    check::<OutF32>(|k, _| {
        k.warps(4);
        k.single_warp(0, |k| {
            at(line!(), k.warps(2));
        });
    })
    .fails_once("warps must be set at the top of the body");
}

/// There is no offending call to point at: the diagnostic points at the body's first
/// statement.
#[test]
fn warps_never_set() {
    let d = check::<OutF32>(|k, (o,)| {
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        k.store_global(&g, &r, [0]);
    })
    .diagnostics();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(
        d[0].message
            .contains("never sets the number of warps: call `k.warps(n)`")
            && d[0].loc.file == file!(),
        "{}",
        d[0]
    );
}

#[test]
fn blocks_with_too_many_or_no_dimensions() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.blocks([1, 2, 3, 4]));
    })
    .fails_once("blocks takes 1 to 3 dimensions, got 4");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.blocks([0i32; 0]));
    })
    .fails_once("blocks takes 1 to 3 dimensions, got 0");
}

#[test]
fn blocks_depending_on_the_block_index() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let _ = k.let_i32(0);
        at(line!(), k.blocks([k.block_idx().x]));
    })
    .fails_once("blocks[0] may not depend on the block index");
}

#[test]
fn blocks_using_a_kernel_variable() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let v = k.let_i32(8);
        at(line!(), k.blocks([Scalar::from(1), v.into()]));
    })
    .fails_once("blocks[1] may only use arguments and constants, not `v0`");
}

#[test]
fn for_range_with_a_step_that_is_not_positive() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.for_range(0, 64, 0, |_, _| {}));
    })
    .fails_once("for_range needs a positive step, got 0");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.for_range(64, 0, -8, |_, _| {}));
    })
    .fails_once("for_range needs a positive step, got -8");
}

#[test]
fn assign_to_an_immutable_variable() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let v = k.let_i32(0);
        at(line!(), k.assign(v, 1));
    })
    .fails_once("`v0` is not mutable: declare it with var_i32/var_u32 to assign it");

    // a loop index
    check::<OutF32>(|k, _| {
        k.warps(1);
        k.for_range(0, 8, 1, |k, i| {
            at(line!(), k.assign(i, 0));
        });
    })
    .fails_once("`i0` is not mutable");

    // a runtime argument
    check::<(i32,)>(|k, (n,)| {
        k.warps(1);
        at(line!(), k.assign(n, 0));
    })
    .fails_once("`arg0` is not mutable");
}

#[test]
fn assign_to_a_constant() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.assign(Val::constant(3), 1));
    })
    .fails_once("assign needs a variable declared with var_i32/var_u32, not a constant");

    check::<(Const<i32>,)>(|k, (n,)| {
        k.warps(1);
        at(line!(), k.assign(n, 1));
    })
    .consts(&[64])
    .fails_once("not a constant");
}

/// `warp * 32` overflows before the group is checked.
#[test]
fn single_warp_with_a_huge_index() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.single_warp(200_000_000, |_| {}));
    })
    .fails_once("are not inside the enclosing group of 128 threads");
}

#[test]
fn warps_set_twice() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.warps(2));
    })
    .fails_once("the number of warps is already set at");
}

#[test]
fn min_blocks_per_sm_out_of_range() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.min_blocks_per_sm(0));
    })
    .fails_once("min_blocks_per_sm must be between 1 and 32, got 0");
}
