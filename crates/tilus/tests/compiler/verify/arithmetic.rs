//! Casts, elementwise expressions and reductions.

use super::OutF32;
use crate::common::{at, check, note};
use tilus::prelude::*;

/// `cast` creates its output with the source's shape; edit the IR.
#[test]
fn cast_between_different_shapes() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
        let _: RegisterTensor<f16> = at(line!(), k.cast(&r));
    })
    .edit(|p| p.registers[1].shape = vec![32, 16])
    .fails_once("cast: shapes differ ([32, 32] -> [32, 16])");
}

/// `transpose` of a 1-D tile is documented as swapping the last two dimensions; `cast` then
/// computes `rank - 2` and underflows.
#[test]
fn cast_of_a_transposed_1d_tile() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let _: RegisterTensor<f16> = at(line!(), k.cast(&r.transpose()));
    })
    .fails("transpose");
}

#[test]
fn cast_between_unsupported_types() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let t: RegisterTensor<i32> = k.register_tensor([32], 1.0);
        let _h: RegisterTensor<f16> = at(line!(), k.cast(&t));
    })
    .fails_once("cast from i32 to f16 is not supported; go through f32");
}

// ------------------------------------------------------------------------------------------
// Elementwise expressions and reductions.
// ------------------------------------------------------------------------------------------

#[test]
fn operands_of_different_types() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let b: RegisterTensor<i32> = k.register_tensor([32], 1.0);
        let _: RegisterTensor<f32> = at(
            line!(),
            k.compute(a + b.cast::<f32>().cast::<i32>().cast::<f32>()),
        );
    })
    .compiles("casts make the types agree");

    // the IR can be edited into a mismatch the typed API cannot express
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let b: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let _: RegisterTensor<f32> = at(line!(), k.compute(a + b));
    })
    .edit(|p| p.registers[1].dtype = tilus::ir::DType::I32)
    .fails("`+` of f32 and i32; cast one of them first");
}

#[test]
fn shapes_that_do_not_broadcast() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a: RegisterTensor<f32> = k.register_tensor([32, 4], 1.0);
        let b: RegisterTensor<f32> = k.register_tensor([32, 8], 1.0);
        let _: RegisterTensor<f32> = at(line!(), k.compute(a + b));
    })
    .fails_once("compute: shapes [32, 4] and [32, 8] do not broadcast");
}

#[test]
fn float_functions_of_integers() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a: RegisterTensor<i32> = k.register_tensor([32], 1.0);
        let _: RegisterTensor<i32> = at(line!(), k.compute(a.exp()));
    })
    .fails_once("exp needs floating-point values, got i32");
}

#[test]
fn a_reduction_over_a_dimension_the_tile_lacks() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a: RegisterTensor<f32> = k.register_tensor([32, 4], 1.0);
        let _ = at(line!(), k.sum(a, 2, false));
    })
    .fails("sum: dimension 2 of a tile of 2 dimension(s)");
}

#[test]
fn a_reduction_across_warps_inside_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        k.warp_group(0, |k| {
            // [4, 32] over 128 threads: the rows are in different warps
            let a: RegisterTensor<f32> = k.register_tensor([4, 32], 1.0);
            let _ = at(line!(), k.sum(a, 0, false));
        });
    })
    .fails_once("dimension 0 of `r0` is spread over several warps");
}

#[test]
fn a_reduction_across_warps_under_a_condition_threads_may_disagree_on() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let flag = k.var_u32(0u32);
        k.single_thread(|k| k.assign(flag, 1u32));
        let a: RegisterTensor<f32> = k.register_tensor([4, 32], 1.0);
        #[rustfmt::skip]
        note(line!(), k.if_(flag.eq_(1u32), |k| {
            let _ = at(line!(), k.sum(a, 0, false));
        }));
    })
    .fails_once_noting("sum waits for every thread of the block, inside the if at");
}

#[test]
fn a_reduction_within_warps_needs_warp_aligned_groups() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.thread_group(16, 32, |k| {
            let a: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let _ = at(line!(), k.sum(a, 0, false));
        });
    })
    .fails_once("sum runs on whole warps; the current group has 32 threads starting at thread 16");
}

/// A tile far past the register budget is rejected for that, and the rejection does not first
/// match each thread's hundred thousand elements one by one against the operands' (an
/// expression over a `[4096, 4096]` tile took minutes when it did).
#[test]
fn a_huge_expression_is_rejected_for_its_registers() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let r: RegisterTensor<f32> = k.register_tensor([4096, 4096], 1.0);
        let _ = at(line!(), k.compute(&r * 2.0 + 1.0));
    })
    .fails_once("registers per thread");
}

/// `assign_tile` into a slice: the slice is a tile of its own, so the assignment would leave
/// its source as it was.
#[test]
fn assign_tile_into_a_slice() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let acc: RegisterTensor<f32> = k.register_tensor([32, 32], 0.0);
        let part = k.slice(&acc, 1, 0, 16);
        at(line!(), k.assign_tile(&part, part + 1.0));
    })
    .fails_once("assign_tile: `r1` is a slice of `r0`, a tile of its own");
}

/// `assign_tile` into a transposed view.
#[test]
fn assign_tile_into_a_transposed_view() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let acc: RegisterTensor<f32> = k.register_tensor([32, 32], 0.0);
        at(line!(), k.assign_tile(&acc.transpose(), acc + 1.0));
    })
    .fails_once("assign_tile: the destination is a transposed view");
}

/// An expression of another shape than the destination's does not broadcast to it.
#[test]
fn assign_tile_of_a_wider_tile() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let acc: RegisterTensor<f32> = k.register_tensor([32, 16], 0.0);
        let wide: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
        at(line!(), k.assign_tile(&acc, wide + 1.0));
    })
    .fails("assign_tile: a [32, 32] tile does not broadcast to [32, 16]");
}

/// A tile of the whole block assigned inside a thread group.
#[test]
fn assign_tile_from_another_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(2);
        let acc: RegisterTensor<f32> = k.register_tensor([64], 0.0);
        k.thread_group(0, 32, |k| {
            at(line!(), k.assign_tile(&acc, acc + 1.0));
        });
    })
    .fails("assign_tile: register tensor `r0` belongs to a group of 64 threads");
}
