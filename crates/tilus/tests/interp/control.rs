//! Control: nested thread groups, and warps whose threads disagree on a variable and so can
//! never reassemble for an instruction that needs whole warps.

use crate::common::interp::{expect_fault, interpret, run};
use crate::common::mark;
use crate::common::scripts::Groups;
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
