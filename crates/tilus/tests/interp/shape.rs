//! Tiles seen with other shapes (`reshape`, `squeeze`, `unsqueeze`, `slice`): the values land
//! where the CPU reference puts them, for f32 and for 16-bit tiles packed two to a register; a
//! reshape whose result a tensor-core instruction fixes gives its source the layout back.

use crate::common::inputs::{fresh_seed, random_f16, random_f32};
use crate::common::interp::{interpret, run};
use crate::common::scripts::global::small_ints;
use crate::common::views::{
    column_slice_expected, dot_expected, dot_inputs, expected, loaded_expected, ColumnSlice,
    DotViews, LoadedViews, Relabelled, ShapeViews, COLS, LOADED, RELABEL_COLS, RELABEL_ROWS, ROWS,
};
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

/// A slice of a tile from `load_global` in an expression, and a reshape of it reduced across
/// warps, on random small integers (exact in any order).
#[test]
fn views_of_a_loaded_tile_feed_arithmetic_and_reductions() {
    let (rows, cols) = LOADED;
    let x = small_ints(rows * cols, fresh_seed());
    let (want_twice, want_sums) = loaded_expected(&x);
    let mut twice = vec![f32::NAN; want_twice.len()];
    let mut sums = vec![f32::NAN; 2];
    run(&LoadedViews, (&x[..], &mut twice[..], &mut sums[..])).unwrap();
    assert_eq!(twice, want_twice);
    assert_eq!(sums, want_sums);
}

/// What the diagnostic of a slice the layout refuses suggests: columns 8..24 of a tile whose
/// threads run along the columns, through a scratch buffer (`store_global`, `sync`,
/// `load_global` of the part, which gets a layout of its own).
#[test]
fn a_slice_the_layout_refuses_goes_through_memory() {
    let x = random_f32(4 * 32, fresh_seed());
    let (mut scratch, mut out) = (vec![f32::NAN; 4 * 32], vec![f32::NAN; 4 * 16]);
    interpret::<(Ptr<f32>, PtrMut<f32>, PtrMut<f32>)>(
        |k, (src, tmp, dst)| {
            k.blocks([1]);
            k.warps(1);
            let g = k.global_view::<f32>(src, [4, 32]);
            let x = k.load_global(&g, [0, 0], [4, 32]);
            let s = k.global_view::<f32>(tmp, [4, 32]);
            k.store_global(&s, &x, [0, 0]);
            k.sync();
            let part = k.load_global(&s, [0, 8], [4, 16]);
            let o = k.global_view::<f32>(dst, [4, 16]);
            k.store_global(&o, &part, [0, 0]);
        },
        (&x[..], &mut scratch[..], &mut out[..]),
    )
    .unwrap();
    let want: Vec<f32> = (0..4)
        .flat_map(|r| x[r * 32 + 8..r * 32 + 24].to_vec())
        .collect();
    assert_eq!(out, want);
}

/// A column slice that the default layout could not keep: the slice gives its unconstrained
/// source a layout it can (columns in blocks of 8 in each thread's registers).
#[test]
fn a_slice_gives_an_unconstrained_source_a_layout_it_can_keep() {
    let x = random_f32(ROWS * COLS, fresh_seed());
    let mut out = vec![f32::NAN; ROWS * 16];
    run(&ColumnSlice, (&x[..], &mut out[..])).unwrap();
    assert_eq!(out, column_slice_expected(&x));
}

/// A relabelled tile holds each thread's registers at their new coordinates: a row per
/// thread relabelled as a column per thread is the transpose.
#[test]
fn a_relabelled_tile_holds_each_threads_registers_at_their_new_coordinates() {
    let (r, c) = (RELABEL_ROWS, RELABEL_COLS);
    let x = random_f16(r * c, fresh_seed());
    let mut y = vec![f16::NAN; r * c];
    run(&Relabelled { threads: r as i64 }, (&x[..], &mut y[..])).unwrap();
    for t in 0..r {
        for j in 0..c {
            assert_eq!(y[j * r + t].to_bits(), x[t * c + j].to_bits(), "({t}, {j})");
        }
    }
}
