//! The host APIs' interpreter entries (`SoftmaxOp::interpret`, `LayerNormOp::interpret`,
//! `RmsNormOp::interpret`, `AddOp::interpret`, `TileCopyOp::interpret`) against f64 host
//! references on fresh random data at ragged shapes, and their shape checks: a call whose
//! buffers do not fit its shape is refused with an error that names the buffer, before anything
//! runs (the output keeps its poison).

use super::ops_reference::{
    self as reference, assert_close, random, NORM_TOLERANCE, SOFTMAX_TOLERANCE,
};
use half::f16;
use tilus_bench::harness::Rng;
use tilus_kernels::copy::{TileCopy, TileCopyOp};
use tilus_kernels::elementwise::{AddOp, VectorAdd, VectorAddF32};
use tilus_kernels::norm::{LayerNorm, LayerNormOp, RmsNorm, RmsNormOp, Softmax, SoftmaxOp};
use tilus_kernels::Error;

/// The shapes: one row shorter than a vector per thread, rows that end inside the tile.
const SHAPES: [(usize, usize); 3] = [(3, 7), (5, 300), (2, 1001)];

#[test]
fn softmax_rows_match_the_f64_reference() {
    tilus_bench::test_cache!();
    let mut rng = Rng::new(41);
    for (rows, cols) in SHAPES {
        let x = random(rows * cols, &mut rng, -6.0, 6.0);
        let mut y = vec![f16::NAN; rows * cols];
        SoftmaxOp::interpret(&Softmax::default(), (rows, cols), &x, &mut y).unwrap();
        let expect = reference::softmax(&x, cols);
        assert_close(
            &format!("softmax {rows}x{cols}"),
            &y,
            &expect,
            SOFTMAX_TOLERANCE,
        );
    }
}

#[test]
fn layer_norm_and_rms_norm_rows_match_the_f64_reference() {
    tilus_bench::test_cache!();
    let mut rng = Rng::new(42);
    for (rows, cols) in SHAPES {
        let x = random(rows * cols, &mut rng, -3.0, 5.0);
        let w = random(cols, &mut rng, 0.5, 1.5);
        let b = random(cols, &mut rng, -1.0, 1.0);
        let eps = 1e-5f32;
        let mut y = vec![f16::NAN; rows * cols];
        LayerNormOp::interpret(
            &LayerNorm::default(),
            (rows, cols),
            eps,
            (&x, &w, &b),
            &mut y,
        )
        .unwrap();
        let expect = reference::layer_norm(&x, (&w, &b), eps);
        assert_close(
            &format!("layer_norm {rows}x{cols}"),
            &y,
            &expect,
            NORM_TOLERANCE,
        );

        let mut y = vec![f16::NAN; rows * cols];
        RmsNormOp::interpret(&RmsNorm::default(), (rows, cols), eps, (&x, &w), &mut y).unwrap();
        let expect = reference::rms_norm(&x, &w, eps);
        assert_close(
            &format!("rms_norm {rows}x{cols}"),
            &y,
            &expect,
            NORM_TOLERANCE,
        );
    }
}

#[test]
fn add_and_tile_copy_are_exact() {
    tilus_bench::test_cache!();
    let mut rng = Rng::new(43);
    for n in [1, 777, 9000] {
        let a = random(n, &mut rng, -4.0, 4.0);
        let b = random(n, &mut rng, -4.0, 4.0);
        let mut c = vec![f16::NAN; n];
        AddOp::<f16>::interpret(&VectorAdd::default(), &a, &b, &mut c).unwrap();
        for i in 0..n {
            assert_eq!(
                c[i],
                f16::from_f64(a[i].to_f64() + b[i].to_f64()),
                "{n}: {i}"
            );
        }
        let (a32, b32): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|v| v.to_f32() / 3.0).collect(),
            b.iter().map(|v| v.to_f32()).collect(),
        );
        let mut c32 = vec![f32::NAN; n];
        AddOp::<f32>::interpret(&VectorAddF32::default(), &a32, &b32, &mut c32).unwrap();
        for i in 0..n {
            assert_eq!(c32[i], a32[i] + b32[i], "{n}: {i}");
        }
    }
    for (rows, cols) in [(100, 72), (65, 64)] {
        let src = random(rows * cols, &mut rng, -4.0, 4.0);
        let mut dst = vec![f16::NAN; rows * cols];
        TileCopyOp::interpret(&TileCopy::default(), (rows, cols), &src, &mut dst).unwrap();
        assert!(src
            .iter()
            .zip(&dst)
            .all(|(s, d)| s.to_bits() == d.to_bits()));
    }
}

#[test]
fn calls_whose_buffers_do_not_fit_the_shape_are_refused_before_anything_runs() {
    let x = vec![f16::ONE; 4 * 8];
    let w = vec![f16::ONE; 8];
    let mut y = vec![f16::NAN; 4 * 8];
    let refused = |r: tilus_kernels::Result<()>, says: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Shape { .. }), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    };
    refused(
        SoftmaxOp::interpret(&Softmax::default(), (4, 9), &x, &mut y),
        "softmax: `x` has 32 elements; the shape needs 36",
    );
    refused(
        SoftmaxOp::interpret(&Softmax::default(), (0, 8), &x, &mut y),
        "rows = 0",
    );
    refused(
        RmsNormOp::interpret(&RmsNorm::default(), (4, 8), 1e-6, (&x, &w[..7]), &mut y),
        "rms_norm: `w` has 7 elements; the shape needs 8",
    );
    refused(
        LayerNormOp::interpret(
            &LayerNorm::default(),
            (4, 8),
            1e-6,
            (&x, &w, &w),
            &mut y[..31],
        ),
        "layer_norm: `y` has 31 elements",
    );
    refused(
        AddOp::<f16>::interpret(&VectorAdd::default(), &x, &w, &mut y),
        "add: `b` has 8 elements; the shape needs 32",
    );
    refused(
        TileCopyOp::interpret(&TileCopy::default(), (1 << 40, 8), &x, &mut y),
        "does not fit",
    );
    assert!(y.iter().all(|v| v.is_nan()), "an output was written");
}

#[test]
fn the_fused_epilogue_matches_the_f64_reference_and_refuses_a_short_bias() {
    use tilus_kernels::gemm::epilogue::{EpilogueInputs, FusedGemm, GeluTanh, MatmulEpilogue};
    tilus_bench::test_cache!();
    let mut rng = Rng::new(44);
    let (m, n, k) = (130, 136, 128);
    let (alpha, beta) = (0.75f32, -0.5f32);
    let a = random(m * k, &mut rng, -0.25, 0.25);
    let b = random(n * k, &mut rng, -0.25, 0.25);
    let d = random(m * n, &mut rng, -1.0, 1.0);
    let bias = random(n, &mut rng, -1.0, 1.0);
    let mut c = vec![f16::NAN; m * n];
    let config = MatmulEpilogue::<GeluTanh>::default();
    let inputs = EpilogueInputs {
        a: &a[..],
        b: &b[..],
        d: &d[..],
        bias: &bias[..],
    };
    FusedGemm::interpret(&config, (m, n, k), (alpha, beta), inputs, &mut c).unwrap();
    let expect =
        reference::fused_epilogue::<GeluTanh>((m, n, k), (alpha, beta), (&a, &b, &d, &bias));
    assert_close("fused gelu 130x136x128", &c, &expect, (2e-3, 2e-3));

    let mut c = vec![f16::NAN; m * n];
    let short = EpilogueInputs {
        a: &a[..],
        b: &b[..],
        d: &d[..],
        bias: &bias[..n - 1],
    };
    let e = FusedGemm::interpret(&config, (m, n, k), (alpha, beta), short, &mut c).unwrap_err();
    assert!(
        e.to_string()
            .contains("`bias` has 135 elements; the shape needs 136"),
        "{e}"
    );
    assert!(c.iter().all(|v| v.is_nan()));
}

/// The norms' epsilon is added to the variance (or the mean square), not taken from it: with
/// eps = 0.5 it moves every output well past the tolerance, and a row of zeros normalizes to
/// zeros (`0 · rsqrt(0 + eps)`; subtracting eps would give NaN).
#[test]
fn the_norms_add_their_epsilon_to_the_variance() {
    tilus_bench::test_cache!();
    let mut rng = Rng::new(44);
    let (rows, cols) = (3, 96);
    let mut x = random(rows * cols, &mut rng, -1.0, 1.0);
    x[..cols].fill(f16::ZERO);
    let w = random(cols, &mut rng, 0.5, 1.5);
    let b = random(cols, &mut rng, -1.0, 1.0);
    let eps = 0.5f32;
    let mut y = vec![f16::NAN; rows * cols];
    RmsNormOp::interpret(&RmsNorm::default(), (rows, cols), eps, (&x, &w), &mut y).unwrap();
    assert!(
        y[..cols].iter().all(|v| *v == f16::ZERO),
        "{:?}",
        &y[..cols]
    );
    let expect = reference::rms_norm(&x, &w, eps);
    assert_close("rms_norm, eps 0.5", &y, &expect, NORM_TOLERANCE);
    let mut y = vec![f16::NAN; rows * cols];
    LayerNormOp::interpret(
        &LayerNorm::default(),
        (rows, cols),
        eps,
        (&x, &w, &b),
        &mut y,
    )
    .unwrap();
    let expect = reference::layer_norm(&x, (&w, &b), eps);
    assert_close("layer_norm, eps 0.5", &y, &expect, NORM_TOLERANCE);
}
