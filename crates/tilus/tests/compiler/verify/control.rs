//! Launch configuration, loops, thread groups, `sync` and scalar variables.

use super::OutF32;
use crate::common::scripts::{self, CountingFill};
use crate::common::{at, check, check_script};
use tilus::prelude::*;
use tilus::Error;

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

/// A script that never sets the grid would launch one block and compute one tile of its
/// output: a diagnostic at the body's first statement, unless the script asks for one block.
#[derive(Clone, Debug, Hash)]
struct NoGrid {
    one_block: bool,
}

impl Script for NoGrid {
    type Args = OutF32;
    fn body(&self, k: &mut Kernel, (o,): Handles<OutF32>) {
        if self.one_block {
            k.blocks([1]);
        }
        at(line!(), k.warps(1));
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        k.store_global(&g, &r, [0]);
    }
}

#[test]
fn grid_never_set() {
    check_script(NoGrid { one_block: false }).fails_once(
        "the script never sets the grid: call `k.blocks([..])` at the top of the body \
         (`k.blocks([1])` for a single block)",
    );
    check_script(NoGrid { one_block: true }).compiles("one block is asked for");
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

// ------------------------------------------------------------------------------------------
// 32-bit index arithmetic (passes/ranges.rs): what constants alone overflow is an error when
// the script is traced.
// ------------------------------------------------------------------------------------------

/// The argument error of tracing and planning [`CountingFill`] with the constant `k`.
fn counting_fill(k: i64) -> tilus::Result<()> {
    let program = tilus::trace(&CountingFill, &[k])?;
    tilus::passes::compile_program(program).map(|_| ())
}

#[test]
fn a_loop_counter_that_passes_i32_max_for_a_constant_is_an_argument_error() {
    // the counter reaches k - 1 + 64 after the last iteration
    counting_fill((i32::MAX - 63) as i64).unwrap();
    match counting_fill((i32::MAX - 62) as i64) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "k");
            assert!(message.contains("k = 2147483585"), "{message}");
            assert!(
                message.contains("the counter `i0` of the loop"),
                "{message}"
            );
            assert!(
                message.contains(&format!("{}:", scripts::FILE)),
                "{message}"
            );
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
}

#[test]
fn a_constant_that_does_not_fit_its_type_is_an_argument_error() {
    match counting_fill(99_999_999_999) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "k");
            assert!(message.contains("99999999999 does not fit"), "{message}");
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
}

#[test]
fn literals_that_overflow_are_a_script_error_at_their_line() {
    // no argument to blame: a script error at the line
    check::<OutF32>(|k, (dst,)| {
        k.blocks([1]);
        k.warps(1);
        let big = k.let_i32(i32::MAX);
        let over = at(line!(), k.let_i32(big * 2));
        let t = k.register_tensor::<f32>([32], 1.0);
        let g = k.global_view::<f32>(dst, [32]);
        k.store_global(&g, &t, [over]);
    })
    .fails("`(v0 * 2)` reaches 4294967294, outside the 32-bit integers the kernel computes with");
}
