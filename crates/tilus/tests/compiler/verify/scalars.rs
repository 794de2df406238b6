//! Scalar types: float scalars compute with floats and never stand where an integer is
//! needed; integers and floats meet through an explicit cast.

use crate::common::{at, check};
use tilus::prelude::*;

type FloatOut = (f32, PtrMut<f32>);

#[test]
fn a_float_scalar_as_an_offset() {
    check::<FloatOut>(|k, (alpha, out)| {
        k.warps(1);
        let g = k.global_view::<f32>(out, [64]);
        let t = k.register_tensor::<f32>([32], 1.0);
        let o = Scalar::from(alpha) * 2.0;
        at(line!(), k.store_global(&g, &t, [o]));
    })
    .fails_once("a f32 scalar where an integer is needed (an offset, index or count)");
}

#[test]
fn a_float_scalar_as_a_loop_bound() {
    check::<FloatOut>(|k, (alpha, _)| {
        k.warps(1);
        at(line!(), k.for_range(0, Scalar::from(alpha), 1, |_, _| {}));
    })
    .fails_once("a f32 scalar where an integer is needed (a loop bound)");
}

#[test]
fn integers_and_floats_mixed_in_one_expression() {
    check::<(i32, f32, PtrMut<f32>)>(|k, (n, alpha, _)| {
        k.warps(1);
        let _ = at(line!(), k.let_f32(Scalar::from(alpha) + n));
    })
    .fails_once("a scalar expression mixes types: `+` of f32 and i32");

    check::<(i32, f32, PtrMut<f32>)>(|k, (n, alpha, _)| {
        k.warps(1);
        let _ = k.let_f32(Scalar::from(alpha) + n.cast::<f32>());
    })
    .compiles("an explicit cast makes the types agree");
}

#[test]
fn bit_operations_on_floats() {
    check::<FloatOut>(|k, (alpha, _)| {
        k.warps(1);
        let _ = at(line!(), k.let_f32(Scalar::from(alpha) % 2.0));
    })
    .fails_once("`%` of f32 values");
}

#[test]
fn a_float_value_into_an_integer_variable() {
    check::<FloatOut>(|k, (alpha, _)| {
        k.warps(1);
        let _ = at(line!(), k.let_i32(alpha));
    })
    .fails_once("a f32 value into a i32 variable: convert it explicitly with `.cast::<i32>()`");

    check::<FloatOut>(|k, (alpha, _)| {
        k.warps(1);
        let v = k.var_i32(0);
        at(line!(), k.assign(v, alpha));
    })
    .fails_once("a f32 value into the i32 variable");
}

/// A fast divisor's multiplier is computed by the host before the launch: a divisor that
/// reads the block index (or anything else the kernel computes) cannot have one.
#[test]
fn a_fast_divisor_the_host_cannot_compute() {
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        let per_block = k.let_i32(k.block_idx().x + n);
        at(line!(), k.fast_divisor(per_block));
    })
    .fails_once("fast_divisor needs a divisor the host can compute before the launch");
}

#[test]
fn a_hilbert_square_whose_side_is_not_a_power_of_two() {
    check::<FloatOut>(|k, _| {
        k.warps(1);
        let _ = at(line!(), k.hilbert_tile(0, 8, 8, 6));
    })
    .fails_once("hilbert_tile: the side of a square is a power of two, not 6");
}

/// Low-precision types are element types of tiles only: a scalar cast to one is refused (the
/// interpreter and the generated code would disagree on what it holds).
#[test]
fn a_low_precision_scalar() {
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        let _ = at(line!(), k.let_i32(n.cast::<tilus::lowp::I4>().cast::<i32>()));
    })
    .fails_once("a scalar expression mixes types: a i4 scalar: the low-precision types are element types of tiles only");
}
