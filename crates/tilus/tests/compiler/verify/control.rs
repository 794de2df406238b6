//! Launch configuration, loops, conditionals, thread groups, `sync` and scalar variables.

use super::{tma_setup, InF16, OutF32};
use crate::common::scripts::{self, CountingFill};
use crate::common::{at, check, check_script, note};
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
fn copies_of_a_group_past_the_block_or_with_their_own_barrier() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.thread_groups(0, 64, 3, |_, _| {}));
    })
    .fails_once("thread_groups: threads 0..192 are not inside the enclosing group of 128 threads");

    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.thread_groups(0, 32, 0, |_, _| {}));
    })
    .fails_once("thread_groups: needs at least one group");

    check::<OutF32>(|k, _| {
        k.warps(8);
        k.thread_groups(0, 128, 2, |k, _| {
            at(line!(), k.sync_group());
        });
    })
    .fails_once("sync_group() inside thread_groups");

    // the groups read their index from each warp's first lane: not under a condition that
    // may leave it out
    check::<OutF32>(|k, _| {
        k.warps(8);
        let flag = k.var_i32(0);
        k.single_thread(|k| k.assign(flag, 1));
        k.if_(flag.eq_(1), |k| {
            at(line!(), k.thread_groups(0, 128, 2, |_, _| {}));
        });
    })
    .fails_once("thread_groups inside the if at");
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
        let v = k.var_i32(8);
        at(line!(), k.blocks([Scalar::from(1), v.into()]));
    })
    .fails_once("blocks[1] may only use arguments and constants, not `v0`");
}

/// `let`s of arguments and constants are what the host computes: the grid sees through them.
#[test]
fn blocks_through_lets_of_arguments() {
    let p = check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        let tiles = k.let_i32(cdiv(n, 64) * 2);
        k.blocks([tiles]);
    })
    .compiles("the grid is (cdiv(n, 64) * 2), which the host computes");
    let mut vars = vec![];
    p.grid[0].vars(&mut vars);
    assert!(
        vars.iter().all(|v| p.param_of(*v).is_some()),
        "{:?}",
        p.grid[0]
    );
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

// ------------------------------------------------------------------------------------------
// Conditionals and while loops (`if_`, `if_else`, `while_`).
// ------------------------------------------------------------------------------------------

#[test]
fn values_declared_in_a_branch_do_not_exist_after_it() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [32]);
        let mut r: Option<RegisterTensor<f32>> = None;
        k.if_(k.block_idx().x.eq_(0), |k| {
            note(line!(), r = Some(k.register_tensor([32], 1.0)));
        });
        at(line!(), k.store_global(&g, &r.unwrap(), [0]));
    })
    .fails_once_noting(
        "register tensor `r0` is used outside the branch of the if that declares it (at",
    );

    // in the other branch of the same `if`
    check::<OutF32>(|k, _| {
        k.warps(1);
        let w = k.var_i32(0);
        let v = std::cell::Cell::new(None::<Val>);
        k.if_else(
            w.eq_(0),
            |k| {
                note(line!(), v.set(Some(k.let_i32(3))));
            },
            |k| {
                at(line!(), k.assign(w, v.get().unwrap()));
            },
        );
    })
    .fails_once_noting("`v1` is used outside the branch of the if that declares it");

    // a while body is a loop
    check::<OutF32>(|k, _| {
        k.warps(1);
        let i = k.var_i32(0);
        let mut v: Option<Val> = None;
        k.while_(i.lt(4), |k| {
            note(line!(), v = Some(k.let_i32(i * 2)));
            k.assign(i, i + 1);
        });
        at(line!(), k.assign(i, v.unwrap()));
    })
    .fails_once_noting("`v1` is used outside the loop or thread group that declares it");
}

/// Threads that take another path than the `sync()` never arrive: a `sync()` under a
/// condition is allowed only when the condition is the same for the whole block.
#[test]
fn sync_under_a_condition_that_may_differ_between_threads() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let flag = k.var_u32(0u32);
        k.single_thread(|k| k.assign(flag, 1u32));
        #[rustfmt::skip]
        note(line!(), k.if_(flag.eq_(1u32), |k| {
            at(line!(), k.sync());
        }));
    })
    .fails_once_noting("sync() inside the if at");

    // the message names the variable; `let`s computed from it are not uniform either
    let d = check::<OutF32>(|k, _| {
        k.warps(4);
        let flag = k.var_i32(0);
        k.single_warp(1, |k| k.assign(flag, 1));
        let twice = k.name_next("twice").let_i32(flag * 2);
        k.if_else(
            twice.gt(0),
            |_| {},
            |k| {
                at(line!(), k.sync());
            },
        );
    })
    .fails_once("whose condition reads `twice`, which may differ between the threads of the block");
    assert!(d.message.contains("call sync() outside"), "{d}");

    // a variable assigned under a condition that may differ is not uniform
    check::<OutF32>(|k, _| {
        k.warps(4);
        let flag = k.var_i32(0);
        k.single_thread(|k| k.assign(flag, 1));
        let copy = k.var_i32(0);
        k.if_(flag.ne_(0), |k| k.assign(copy, 1));
        k.if_(copy.ne_(0), |k| {
            at(line!(), k.sync());
        });
    })
    .fails_once("sync() inside the if at");

    // a while loop whose counter only some threads advance
    check::<OutF32>(|k, _| {
        k.warps(4);
        let i = k.var_i32(0);
        #[rustfmt::skip]
        note(line!(), k.while_(i.lt(4), |k| {
            at(line!(), k.sync());
            k.single_thread(|k| k.assign(i, i + 1));
        }));
    })
    .fails_once_noting("sync() inside the while at");
}

#[test]
fn sync_under_a_condition_the_whole_block_shares_compiles() {
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.blocks([4]);
        k.warps(4);
        let first = k.let_i32(k.block_idx().x);
        k.if_(first.eq_(0).and(n.gt(16)), |k| k.sync());
        k.if_else(n.le(0).not_(), |k| k.sync(), |k| k.sync());
        let i = k.var_i32(0);
        k.while_(i.lt(n).or(i.eq_(0)), |k| {
            k.sync();
            k.if_(i.ge(2), |k| k.sync());
            k.assign(i, i + 1);
        });
        k.for_range(0, n, 1, |k, j| k.if_(j.ne_(3), |k| k.sync()));
    })
    .compiles("conditions over arguments, the block index and block-wide counters are uniform");
}

/// Within a thread group, `sync_group()` may run under a condition on what the group
/// computes alike (its own `let`s, `var`s and loop counters); not on a variable a smaller
/// group inside it assigns, nor on one of the block's that the group assigns.
#[test]
fn sync_group_under_a_condition_the_group_computes_alike() {
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(8);
        k.thread_group(0, 128, |k| {
            let half = k.let_i32(n / 2);
            let from = k.var_i32(0);
            k.if_(half.gt(3), |k| k.assign(from, half - 3));
            k.for_range(from, n, 1, |k, j| {
                k.if_else(j.eq_(half), |k| k.sync_group(), |k| k.sync_group());
            });
        });
    })
    .compiles("a group's own variables are uniform within it");

    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(8);
        k.thread_group(0, 128, |k| {
            let seen = k.var_i32(0);
            k.single_thread(|k| k.assign(seen, n));
            #[rustfmt::skip]
            note(line!(), k.if_(seen.gt(0), |k| {
                at(line!(), k.sync_group());
            }));
        });
    })
    .fails_once_noting("sync_group() inside the if at");

    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(8);
        let shared = k.var_i32(0);
        k.thread_group(0, 128, |k| {
            k.assign(shared, n);
            #[rustfmt::skip]
            note(line!(), k.if_(shared.gt(0), |k| {
                at(line!(), k.sync_group());
            }));
        });
    })
    .fails_once_noting("sync_group() inside the if at");
}

#[test]
fn free_shared_in_a_branch_of_a_tile_allocated_outside_it() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        #[rustfmt::skip]
        note(line!(), k.if_(k.block_idx().x.eq_(0), |k| {
            at(line!(), k.free_shared(&s));
        }));
    })
    .fails_once_noting("free_shared(`s0`) must be in the same branch as its allocation (the if at");

    // allocated and freed in the same branch: fine
    check::<OutF32>(|k, _| {
        k.warps(1);
        k.if_else(
            k.block_idx().x.eq_(0),
            |k| {
                let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
                k.free_shared(&s);
            },
            |k| {
                let s: SharedTensor<f32> = k.shared_tensor([32, 16]);
                k.free_shared(&s);
            },
        );
    })
    .compiles("each branch frees its own tile");

    // a while body is a loop
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        let i = k.var_i32(0);
        k.while_(i.lt(1), |k| {
            at(line!(), k.free_shared(&s));
            k.assign(i, 1);
        });
    })
    .fails_once("free_shared(`s0`) must be in the same loop as its allocation");
}

#[test]
fn mbarrier_alloc_inside_a_conditional() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        #[rustfmt::skip]
        note(line!(), k.if_(k.block_idx().x.eq_(0), |k| {
            at(line!(), k.mbarrier().alloc([1]));
        }));
    })
    .fails_once_noting("mbarrier.alloc must run once in the whole block, not inside the if at");

    check::<OutF32>(|k, _| {
        k.warps(1);
        let i = k.var_i32(0);
        k.while_(i.lt(1), |k| {
            at(line!(), k.mbarrier().alloc([1]));
            k.assign(i, 1);
        });
    })
    .fails_once("mbarrier.alloc must run once in the whole block: outside loops and thread groups");
}

/// The builder takes scalars, which are integers or booleans; an edited program may hold a
/// floating-point condition.
#[test]
fn a_floating_point_condition() {
    fn to_float(p: &mut tilus::ir::Program) {
        for s in &mut p.body {
            if let tilus::ir::StmtKind::If { cond, .. } | tilus::ir::StmtKind::While { cond, .. } =
                &mut s.kind
            {
                *cond = tilus::ir::Expr::Float(1.5f64.to_bits(), tilus::ir::DType::F32);
            }
        }
    }
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.if_(1, |_| {}));
    })
    .edit(to_float)
    .fails_once("if_ needs a boolean or integer condition, got f32");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.while_(0, |_| {}));
    })
    .edit(to_float)
    .fails_once("while_ needs a boolean or integer condition, got f32");
}

#[test]
fn literals_that_overflow_in_a_branch_are_a_script_error() {
    check::<OutF32>(|k, _| {
        k.blocks([1]);
        k.warps(1);
        let big = k.let_i32(i32::MAX);
        k.if_(k.block_idx().x.eq_(0), |k| {
            at(line!(), k.let_i32(big + 1));
        });
    })
    .fails("`(v0 + 1)` reaches 2147483648, outside the 32-bit integers");
}

/// A `[32, 64]` f16 tile written by ordinary stores, published, and a view to store it to.
fn tma_store_setup(k: &mut Kernel, dst: PtrVal<f16>) -> (GlobalTensor<f16>, SharedTensor<f16>) {
    let g = k.global_view::<f16>(dst, [64, 64]);
    let s = k.shared_tensor::<f16>([32, 64]);
    let r = k.register_tensor::<f16>([32, 64], 1.0);
    k.store_shared(&s, &r);
    k.fence_proxy_async();
    k.sync();
    (g, s)
}

/// What is in flight after an `if` is what either branch leaves in flight.
#[test]
fn a_tma_store_waited_for_in_one_branch_only() {
    check::<(PtrMut<f16>,)>(|k, (dst,)| {
        k.warps(4);
        let (g, s) = tma_store_setup(k, dst);
        k.single_thread(|k| {
            at(line!(), k.tma().shared_to_global(&s, &g, [0, 0]));
            k.tma().commit_group();
            k.if_(k.block_idx().x.eq_(0), |k| k.tma().wait_group(0));
        });
    })
    .fails_once(
        "the kernel ends while this tma.shared_to_global may still be reading shared tensor `s0`",
    );

    check::<(PtrMut<f16>,)>(|k, (dst,)| {
        k.warps(4);
        let (g, s) = tma_store_setup(k, dst);
        k.single_thread(|k| {
            k.tma().shared_to_global(&s, &g, [0, 0]);
            k.tma().commit_group();
            k.if_else(
                k.block_idx().x.eq_(0),
                |k| k.tma().wait_group(0),
                |k| k.tma().wait_group_read(0),
            );
        });
        k.sync();
    })
    .compiles("both branches wait for the reads");
}

#[test]
fn a_tma_store_whose_source_a_while_body_rewrites_without_a_fence() {
    // the fence before the loop publishes the first iteration's stores, not the second's
    check::<(PtrMut<f16>,)>(|k, (dst,)| {
        k.warps(4);
        let (g, s) = tma_store_setup(k, dst);
        let r = k.register_tensor::<f16>([32, 64], 2.0);
        let i = k.var_i32(0);
        k.while_(i.lt(2), |k| {
            k.single_thread(|k| {
                at(line!(), k.tma().shared_to_global(&s, &g, [0, 0]));
                k.tma().commit_group();
                k.tma().wait_group(0);
            });
            k.sync();
            note(line!(), k.store_shared(&s, &r));
            k.sync();
            k.assign(i, i + 1);
        });
    })
    .fails_once_noting("tma.shared_to_global reads `s0`, written by store_shared at");

    // a fence in one branch only does not publish the stores of the other path
    check::<(PtrMut<f16>,)>(|k, (dst,)| {
        k.warps(4);
        let g = k.global_view::<f16>(dst, [64, 64]);
        let s = k.shared_tensor::<f16>([32, 64]);
        let r = k.register_tensor::<f16>([32, 64], 1.0);
        note(line!(), k.store_shared(&s, &r));
        k.if_(k.block_idx().x.eq_(0), |k| k.fence_proxy_async());
        k.sync();
        k.single_thread(|k| {
            at(line!(), k.tma().shared_to_global(&s, &g, [0, 0]));
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    })
    .fails_once_noting("written by store_shared at");
}

/// Copies in a branch are not counted against an expected byte count outside it: the rule
/// is for one statement list.
#[test]
fn expected_bytes_with_copies_in_a_branch_are_not_guessed() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes());
            k.if_(k.block_idx().x.eq_(0), |k| {
                k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
            });
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .compiles("the copy may or may not be issued");
}

#[test]
fn group_barriers_need_a_group_of_whole_warps_without_divergence() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.sync_group());
    })
    .fails_once("sync_group() outside thread groups: the whole block synchronizes with sync()");

    check::<OutF32>(|k, _| {
        k.warps(4);
        k.thread_group(16, 64, |k| {
            at(line!(), k.sync_group());
        });
    })
    .fails_once("sync_group() needs a group of whole warps");

    check::<OutF32>(|k, _| {
        k.warps(4);
        let flag = k.var_i32(0);
        k.warp_group(0, |k| {
            k.single_thread(|k| k.assign(flag, 1));
            k.if_(flag.gt(0), |k| {
                at(line!(), k.sync_group());
            });
        });
    })
    .fails_once("sync_group() inside the if at");
}

#[test]
fn cluster_barriers_and_sizes_are_checked() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.cluster_sync());
    })
    .fails_once("cluster_sync() in a kernel without clusters");

    check::<OutF32>(|k, _| {
        k.cluster_blocks([2]);
        k.warps(4);
        k.warp_group(0, |k| {
            at(line!(), k.cluster_sync());
        });
    })
    .fails_once("cluster_sync() inside a thread group would wait for threads that never arrive");

    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.cluster_blocks([3, 3]));
    })
    .fails_once("a cluster has 1 to 8 blocks");

    check::<OutF32>(|k, _| {
        k.warps(4);
        k.cluster_blocks([2]);
        at(line!(), k.cluster_blocks([2]));
    })
    .fails_once("the cluster is already set; set it once");

    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.cluster_rank());
    })
    .fails_once("cluster_rank() before cluster_blocks(..)");
}
