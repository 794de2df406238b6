//! Float scalars: `f32`, `f16` and `bf16` arguments and `let_f32` values in tile expressions,
//! computed as the generated code computes them (f32 arithmetic, 16-bit values rounded where
//! they are stored), against a CPU reference on random data.

use crate::common::arith::{input, FloatAffine};
use crate::common::interp::{interpret, run};
use half::f16;
use tilus::prelude::*;

#[test]
fn float_arguments_and_lets_scale_a_tile_exactly() {
    let n = 1000;
    let x = input(n, 1, 77);
    let (alpha, beta, gamma) = FloatAffine::ARGS;
    let mut out = vec![f32::NAN; n];
    run(
        &FloatAffine,
        (n as i32, alpha, beta, gamma, &x[..], &mut out[..]),
    )
    .unwrap();
    let want = FloatAffine::reference(&x);
    for (i, (&got, &want)) in out.iter().zip(&want).enumerate() {
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "element {i}: {got} vs {want}"
        );
    }
}

/// A scalar conversion to f16 rounds: `h = f32(f16(alpha / 3))`, `out = x + h`.
fn rounded_scalar(k: &mut Kernel, (alpha, dst): Handles<(f32, PtrMut<f32>)>) {
    k.warps(1);
    let h = k.let_f32((alpha / 3.0).cast::<f16>());
    let x = k.register_tensor::<f32>([32], 1.0);
    let y = k.compute(x + h);
    let out = k.global_view::<f32>(dst, [32]);
    k.store_global(&out, &y, [0]);
}

#[test]
fn a_scalar_conversion_to_f16_rounds_it() {
    let alpha = 0.7f32;
    let mut out = [f32::NAN; 32];
    interpret::<(f32, PtrMut<f32>)>(rounded_scalar, (alpha, &mut out[..])).unwrap();
    let want = 1.0 + f16::from_f32(alpha / 3.0).to_f32();
    assert_ne!(want, 1.0 + alpha / 3.0, "the rounding shows");
    assert!(
        out.iter().all(|&v| v.to_bits() == want.to_bits()),
        "{:?}",
        &out[..4]
    );
}

/// Float comparisons steer integer control flow: `if alpha > 0.5 { out = 1 } else { 2 }`.
fn branch_on_a_float(k: &mut Kernel, (alpha, dst): Handles<(f32, PtrMut<f32>)>) {
    k.warps(1);
    let out = k.global_view::<f32>(dst, [32]);
    k.if_else(
        Scalar::from(alpha).gt(0.5),
        |k| {
            let t = k.register_tensor::<f32>([32], 1.0);
            k.store_global(&out, &t, [0]);
        },
        |k| {
            let t = k.register_tensor::<f32>([32], 2.0);
            k.store_global(&out, &t, [0]);
        },
    );
}

#[test]
fn a_float_comparison_picks_the_branch() {
    for (alpha, want) in [(0.75f32, 1.0f32), (0.25, 2.0)] {
        let mut out = [f32::NAN; 32];
        interpret::<(f32, PtrMut<f32>)>(branch_on_a_float, (alpha, &mut out[..])).unwrap();
        assert!(
            out.iter().all(|&v| v == want),
            "alpha {alpha}: {:?}",
            &out[..4]
        );
    }
}

/// Unary minus on scalars: floats flip their sign (negative zero included), integers
/// subtract from zero. `out[0..4] = [-a, -(a * 0.0), -n, -(n * 2)]` as f32.
fn negations(k: &mut Kernel, (a, n, dst): Handles<(f32, i32, PtrMut<f32>)>) {
    k.warps(1);
    let out = k.global_view::<f32>(dst, [4]);
    let values = [-a, -(a * 0.0), (-n).cast::<f32>(), (-(n * 2)).cast::<f32>()];
    for (i, v) in values.into_iter().enumerate() {
        let x = k.let_f32(v);
        let t = k.register_tensor::<f32>([1], 0.0);
        let y = k.compute(t + x);
        k.store_global(&out, &y, [i as i32]);
    }
}

#[test]
fn unary_minus_negates_float_and_integer_scalars() {
    let mut out = [f32::NAN; 4];
    interpret::<(f32, i32, PtrMut<f32>)>(negations, (1.75, 9, &mut out[..])).unwrap();
    // 0 + -0.0 is +0.0 in the tile sum, so the negative zero shows as a plain zero there
    assert_eq!(out, [-1.75, 0.0, -9.0, -18.0]);
}

/// A tile order under test: `(linear, tiles_m, tiles_n)` to `(row, col)`.
type Order = fn(&mut Kernel, Val, Val, Val) -> (Val, Val);

/// A grid of `tiles_m × tiles_n` blocks, each writing the tile an order gives it.
#[derive(Clone, Debug, Hash)]
struct TileOrder(Order);

impl Script for TileOrder {
    type Args = (i32, i32, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (tm, tn, out): Handles<Self::Args>) {
        k.blocks([tm * tn]);
        k.warps(1);
        let b = k.let_i32(k.block_idx().x);
        let (row, col) = (self.0)(k, b, tm, tn);
        let g = k.global_view::<i32>(out, [tm * tn * 2]);
        k.single_thread(|k| {
            k.atomic_exchange_scalar(&g, [b * 2], row);
            k.atomic_exchange_scalar(&g, [b * 2 + 1], col);
        });
    }
}

/// The tiles `order` gives the blocks of a `tm × tn` grid, as `[row, col]` pairs in block
/// order.
fn tile_order((tm, tn): (usize, usize), order: Order) -> Vec<i32> {
    let mut out = vec![-1i32; tm * tn * 2];
    run(&TileOrder(order), (tm as i32, tn as i32, &mut out[..])).unwrap();
    out
}

/// `grouped_tile` visits every tile once, `group` tile rows at a time column by column, the
/// last group as high as the rows left (here 7 rows in groups of 3: 3, 3, 1).
#[test]
fn grouped_tiles_cover_the_grid_once_in_super_tile_order() {
    let (tm, tn, group) = (7usize, 5usize, 3);
    let out = tile_order((tm, tn), |k, b, tm, tn| k.grouped_tile(b, tm, tn, 3));
    let mut want = vec![];
    for first in (0..tm).step_by(group) {
        let h = group.min(tm - first);
        for c in 0..tn {
            for r in first..first + h {
                want.extend([r as i32, c as i32]);
            }
        }
    }
    assert_eq!(out, want);
}

/// `hilbert_tile` visits every tile once: whole `side × side` squares along a Hilbert curve
/// (each step to a neighbouring tile), band by band and square by square, and what is not a
/// whole square column by column (here 19 × 13 tiles in squares of 4: three squares and a
/// column per band, a last band of 3 rows).
#[test]
fn hilbert_tiles_cover_the_grid_once_along_the_curve() {
    let (tm, tn, side) = (19usize, 13usize, 4usize);
    let out = tile_order((tm, tn), |k, b, tm, tn| k.hilbert_tile(b, tm, tn, 4));
    let got: Vec<(usize, usize)> = out
        .chunks(2)
        .map(|p| (p[0] as usize, p[1] as usize))
        .collect();
    // every tile once
    let mut seen = vec![false; tm * tn];
    for &(r, c) in &got {
        assert!(r < tm && c < tn, "({r}, {c}) is outside the grid");
        assert!(!seen[r * tn + c], "({r}, {c}) twice");
        seen[r * tn + c] = true;
    }
    // band by band, piece by piece: the host's reference of the order
    let mut want = vec![];
    for band in (0..tm).step_by(side) {
        let rows = side.min(tm - band);
        for piece in (0..tn).step_by(side) {
            let cols = side.min(tn - piece);
            if rows == side && cols == side {
                let start = want.len();
                for d in 0..side * side {
                    let (r, c) = reference_hilbert(side, d);
                    want.push((band + r, piece + c));
                }
                // along the curve: each step to a neighbouring tile
                for w in want[start..].windows(2) {
                    let dist = w[0].0.abs_diff(w[1].0) + w[0].1.abs_diff(w[1].1);
                    assert_eq!(dist, 1, "{w:?}");
                }
            } else {
                for c in 0..cols {
                    for r in 0..rows {
                        want.push((band + r, piece + c));
                    }
                }
            }
        }
    }
    assert_eq!(got, want);
}

/// The Hilbert curve's point `(row, column)` at distance `d` in a `side × side` square (the
/// textbook conversion, on the host).
fn reference_hilbert(side: usize, d: usize) -> (usize, usize) {
    let (mut x, mut y, mut t) = (0usize, 0usize, d);
    let mut s = 1;
    while s < side {
        let rx = 1 & (t / 2);
        let ry = 1 & (t ^ rx);
        if ry == 0 {
            if rx == 1 {
                x = s - 1 - x;
                y = s - 1 - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
        x += s * rx;
        y += s * ry;
        t /= 4;
        s *= 2;
    }
    (y, x)
}
