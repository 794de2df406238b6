//! Tiles seen with other shapes (`reshape`, `squeeze`, `unsqueeze`, `slice`): the values land
//! where the CPU reference puts them, for f32 and for 16-bit tiles packed two to a register; a
//! reshape whose result a tensor-core instruction fixes gives its source the layout back.

use crate::common::inputs::{fresh_seed, random_f16, random_f32};
use crate::common::interp::{interpret, run};
use crate::common::views::{dot_expected, dot_inputs, expected, DotViews, ShapeViews, COLS, ROWS};
use half::f16;
use tilus::prelude::*;

#[test]
fn views_of_an_f32_tile_hold_the_referenced_elements() {
    let x = random_f32(ROWS * COLS, fresh_seed());
    let mut outs: Vec<Vec<f32>> = expected(&x)
        .iter()
        .map(|v| vec![f32::NAN; v.len()])
        .collect();
    let [o0, o1, o2, o3] = &mut outs[..] else {
        unreachable!()
    };
    run(
        &ShapeViews::<f32>::new(),
        (&x[..], &mut o0[..], &mut o1[..], &mut o2[..], &mut o3[..]),
    )
    .unwrap();
    for (i, (got, want)) in outs.iter().zip(expected(&x)).enumerate() {
        assert_eq!(got, &want, "output {i}");
    }
}

#[test]
fn views_of_a_packed_f16_tile_hold_the_referenced_elements() {
    let x = random_f16(ROWS * COLS, fresh_seed());
    let mut outs: Vec<Vec<f16>> = expected(&x)
        .iter()
        .map(|v| vec![f16::NAN; v.len()])
        .collect();
    let [o0, o1, o2, o3] = &mut outs[..] else {
        unreachable!()
    };
    run(
        &ShapeViews::<f16>::new(),
        (&x[..], &mut o0[..], &mut o1[..], &mut o2[..], &mut o3[..]),
    )
    .unwrap();
    for (i, (got, want)) in outs.iter().zip(expected(&x)).enumerate() {
        let same = got
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "output {i}: {got:?} != {want:?}");
    }
}

/// `c = reshape(x, [16, 8])` is the addend of a `dot`, which fixes its layout (the mma
/// accumulator fragment); the reshape gives `x` (`[128]`, filled with 0.5) the matching layout.
#[test]
fn a_reshape_passes_a_fixed_layout_back_to_its_source() {
    let mut out = vec![f32::NAN; 16 * 8];
    interpret::<(PtrMut<f32>,)>(
        |k, (o,)| {
            k.blocks([1]);
            k.warps(1);
            let a = k.register_tensor::<f16>([16, 16], 1.0);
            let b = k.register_tensor::<f16>([16, 8], 0.25);
            let x = k.register_tensor::<f32>([128], 0.5);
            let c = k.reshape(&x, [16, 8]);
            let d = k.register_tensor::<f32>([16, 8], None::<f64>);
            k.dot(&a, &b, &c, &d);
            let g = k.global_view::<f32>(o, [16, 8]);
            k.store_global(&g, &d, [0, 0]);
        },
        (&mut out[..],),
    )
    .unwrap();
    // 16 products of 1 x 0.25, plus 0.5
    assert!(out.iter().all(|&v| v == 4.5), "{out:?}");
}

/// Slices and reshapes of an mma accumulator (threads and locals interleaved in both
/// dimensions), from a product of random integer operands (exact in f32).
#[test]
fn views_of_a_product_hold_the_referenced_elements() {
    let (a, b) = dot_inputs(fresh_seed());
    let want = dot_expected(&a, &b);
    let mut outs: Vec<Vec<f32>> = want.iter().map(|v| vec![f32::NAN; v.len()]).collect();
    let [o0, o1, o2, o3] = &mut outs[..] else {
        unreachable!()
    };
    run(
        &DotViews,
        (
            &a[..],
            &b[..],
            &mut o0[..],
            &mut o1[..],
            &mut o2[..],
            &mut o3[..],
        ),
    )
    .unwrap();
    for (i, (got, want)) in outs.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "output {i}");
    }
}
