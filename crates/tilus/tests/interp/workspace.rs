//! Kernel-owned workspaces (`global_tensor`): the interpreter gives each run a fresh zeroed
//! one, blocks take turns through a semaphore in it, and a `zeroed` workspace left dirty is a
//! fault at its declaration.

use crate::common::inputs::{fresh_seed, random_f32};
use crate::common::interp::{expect_fault, run};
use crate::common::scripts::workspace::TakeTurns;
use tilus::interp::Fault;

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let x = random_f32(n * TakeTurns::COLS, fresh_seed());
    let out = random_f32(TakeTurns::COLS, fresh_seed());
    (x, out)
}

#[test]
fn blocks_take_turns_through_a_semaphore_in_the_workspace() {
    for n in [1usize, 2, 7] {
        let (x, before) = inputs(n);
        let mut out = before.clone();
        run(
            &TakeTurns { no_reset: false },
            (n as i32, &x[..], &mut out[..]),
        )
        .unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&out),
            bits(&TakeTurns::expected(&x, &before)),
            "{n} blocks"
        );
    }
}

#[test]
fn a_zeroed_workspace_left_dirty_is_a_fault_at_its_declaration() {
    let (x, mut out) = inputs(3);
    let r = run(&TakeTurns { no_reset: true }, (3, &x[..], &mut out[..]));
    expect_fault(
        r,
        Fault::DirtyWorkspace,
        "workspace",
        &["declared zeroed", "element 0"],
    );
}

#[test]
fn the_workspace_is_a_kernel_parameter_sized_by_the_host() {
    let p = tilus::trace(&TakeTurns { no_reset: false }, &[]).unwrap();
    let (_, plan) = tilus::passes::compile_program(p.clone()).unwrap();
    let ws: Vec<_> = plan
        .params
        .iter()
        .filter_map(|kp| match kp {
            tilus::ir::KernelParam::Workspace { bytes, zeroed, .. } => {
                Some((bytes.clone(), *zeroed))
            }
            _ => None,
        })
        .collect();
    assert_eq!(ws.len(), 1);
    assert!(ws[0].1);
    assert_eq!(plan.eval_with(&ws[0].0, &|_| None), Some(4));
    let src = tilus::emit(&TakeTurns { no_reset: false }, &[]).unwrap();
    assert!(
        src.contains("i32* __restrict__ ws0  /* left zeroed */"),
        "{src}"
    );
}

/// A workspace sized by what only the kernel knows (the block index).
#[derive(Clone, Debug, Hash)]
struct SizedByTheBlock;

impl tilus::Script for SizedByTheBlock {
    type Args = (i32,);
    fn body(&self, k: &mut tilus::prelude::Kernel, (n,): tilus::prelude::Handles<Self::Args>) {
        k.blocks([n]);
        k.warps(1);
        let b = k.let_i32(k.block_idx().x + 1);
        crate::common::mark("workspace", line!(), k.global_tensor::<i32>([b], false));
    }
}

#[test]
fn a_workspace_the_host_cannot_size_is_an_error_at_its_line() {
    crate::common::clear_marks();
    let d = match tilus::trace(&SizedByTheBlock, &[]) {
        Err(tilus::Error::Script(d)) => d,
        other => panic!("expected the builder's diagnostic, got {other:?}"),
    };
    let at = crate::common::marked("workspace").unwrap();
    assert_eq!((d[0].loc.file, d[0].loc.line), (at.file, at.line), "{d:#?}");
    assert!(d[0].message.contains("known to the host"), "{}", d[0]);
}
