//! Casts.

use super::OutF32;
use crate::common::{at, check};
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
