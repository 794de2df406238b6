//! Tensor-core products with mma.sync (`dot`), and the layouts they ask of their operands.

use super::OutF32;
use crate::common::{at, check, note};
use tilus::ir::DType;
use tilus::prelude::*;

#[test]
fn dot_shape_mismatch() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([16, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once(
        "dot: shapes do not agree: a [64, 32] @ b [16, 128] + c [64, 128] -> out [64, 128]",
    );

    // the output's shape differs from the accumulator's
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        let o: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
        at(line!(), k.dot(&a, &b, &c, &o));
    })
    .fails_once("dot: shapes do not agree");

    // a transposed view has the swapped shape
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b.transpose(), &c, &c));
    })
    .fails_once("a [64, 32] @ b [128, 32] + c [64, 128]");
}

#[test]
fn dot_of_tiles_that_are_not_2d() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([2, 64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([2, 32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([2, 64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once("dot takes 2-D tiles");
}

#[test]
fn dot_operand_types() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f32> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f32> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once("dot: operands must both be f16 or both bf16, got f32 and f32");

    let d = check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<i32> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<i32> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<i32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .diagnostics();
    d.find("dot: operands must both be f16 or both bf16, got i32 and i32");
    d.find("dot: mma.sync accumulates in f32; c and out are i32 and i32");
    assert_eq!(d.len(), 2, "{d:#?}");

    // the operands' types differ (only reachable by editing the IR)
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .edit(|p| p.registers[1].dtype = DType::BF16)
    .fails_once("got f16 and bf16");
}

#[test]
fn dot_accumulator_type() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f16> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once("dot: mma.sync accumulates in f32; c and out are f16 and f16");

    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<bf16> = k.register_tensor([64, 32], 0.0);
        let b: RegisterTensor<bf16> = k.register_tensor([32, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        let o: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        k.dot(&a, &b, &c, &o);
    })
    .compiles("bf16 operands with an f32 accumulator are fine");
}

#[test]
fn dot_that_cannot_be_tiled_over_the_warps() {
    // N = 8 cannot be split over the 4 warps that M = 16 leaves
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([16, 16], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([16, 8], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([16, 8], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once("dot: [16, 16] x [16, 8] cannot be cut into m16n8k16 tiles over 4 warps");

    // K = 8 is not a multiple of 16
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 8], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([8, 128], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c));
    })
    .fails_once("dot: [64, 8] x [8, 128] cannot be cut into m16n8k16 tiles over 4 warps");
}

#[test]
fn dot_in_a_group_that_is_not_whole_warps() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.thread_group(0, 16, |k| {
            let a: RegisterTensor<f16> = k.register_tensor([16, 16], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([16, 8], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([16, 8], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        });
    })
    .fails_once("dot runs on whole warps; the current group has 16 threads");
}

#[test]
fn dot_operand_from_another_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        k.warp_group(4, |k| {
            let b: RegisterTensor<f16> = k.register_tensor([32, 64], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        });
    })
    .fails_once(
        "dot operand a: register tensor `r0` belongs to a group of 256 threads but is used in a \
         group of 128",
    );
}

#[test]
fn dot_into_a_transposed_view() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
        at(line!(), k.dot(&a, &b, &c, &c.transpose()));
    })
    .fails_once("dot: the output must not be a transposed view");
}

/// One tile, two products that need it laid out differently, in a thread group (where a
/// conversion through shared memory cannot be inserted: the group cannot meet at block
/// barriers).
#[test]
fn conflicting_layouts_from_two_dots() {
    let d = check::<OutF32>(|k, _| {
        k.warps(8);
        k.thread_group(0, 128, |k| {
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b1: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c1: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            let b2: RegisterTensor<f16> = k.register_tensor([32, 16], 0.0);
            let c2: RegisterTensor<f32> = k.register_tensor([64, 16], 0.0);
            note(line!(), k.dot(&a, &b1, &c1, &c1));
            at(line!(), k.dot(&a, &b2, &c2, &c2));
        });
    })
    .fails_once_noting("register tensor `r0` needs layout");
    assert!(
        d.message
            .contains("for dot operand a here, but dot operand a at"),
        "{d}"
    );
    assert!(
        d.message
            .contains("convert it first (`let t2 = k.convert_layout(&r0);`"),
        "{d}"
    );
}

/// The same two products by the whole block: the operand is converted for the second,
/// through shared memory.
#[test]
fn conflicting_layouts_from_two_dots_meet_through_a_conversion_in_the_block() {
    let p = check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
        let b1: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
        let c1: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        let b2: RegisterTensor<f16> = k.register_tensor([32, 16], 0.0);
        let c2: RegisterTensor<f32> = k.register_tensor([64, 16], 0.0);
        k.dot(&a, &b1, &c1, &c1);
        k.dot(&a, &b2, &c2, &c2);
    })
    .compiles("the second dot's operand is converted");
    let ir = tilus::ir::print_program(&p);
    assert!(
        ir.contains("convert_layout(r0)") && ir.contains("through shared"),
        "{ir}"
    );
}

/// Back-to-back products in a thread group: the f32 accumulator cast to f16 is not in the
/// A-operand layout, and only shared memory could convert it.
#[test]
fn conflicting_layouts_through_a_cast() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        k.thread_group(0, 128, |k| {
            let a: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            k.dot(&a, &b, &c, &c);
            let h: RegisterTensor<f16> = at(line!(), k.cast(&c));
            let c2: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            note(line!(), k.dot(&h, &b, &c2, &c2));
        });
    })
    .fails_once_noting("for cast here, but dot operand a at");
}

/// The same products by the whole block: the cast's source is converted before the cast.
#[test]
fn back_to_back_products_meet_through_a_conversion_before_the_cast() {
    let p = check::<OutF32>(|k, _| {
        k.warps(4);
        let a: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
        let b: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
        let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
        k.dot(&a, &b, &c, &c);
        let h: RegisterTensor<f16> = k.cast(&c);
        let c2: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
        k.dot(&h, &b, &c2, &c2);
    })
    .compiles("the cast's source is converted");
    let ir = tilus::ir::print_program(&p);
    assert!(
        ir.contains("convert_layout(r2)") && ir.contains("through shared"),
        "{ir}"
    );
}
