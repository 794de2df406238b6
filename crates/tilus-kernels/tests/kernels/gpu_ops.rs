//! The host APIs on the GPU (`SoftmaxOp`, `LayerNormOp`, `RmsNormOp`, `AddOp`, `TileCopyOp`,
//! each autotuned on its first call) against the f64 host references on fresh random data, at
//! a ragged shape and an LLM-sized one; a refused call launches nothing.

use super::ops_reference::{
    self as reference, assert_close, random, NORM_TOLERANCE, SOFTMAX_TOLERANCE,
};
use half::f16;
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::copy::TileCopyOp;
use tilus_kernels::elementwise::AddOp;
use tilus_kernels::norm::{LayerNormOp, RmsNormOp, SoftmaxOp};

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_op_matches_its_reference_on_the_gpu() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let s = device.stream().clone();
    let mut rng = Rng::new(51);
    let (softmax, layer_norm, rms_norm) = (
        SoftmaxOp::new(&device).unwrap(),
        LayerNormOp::new(&device).unwrap(),
        RmsNormOp::new(&device).unwrap(),
    );
    for (rows, cols) in [(37, 1000), (64, 8192)] {
        let n = rows * cols;
        let x = random(n, &mut rng, -3.0, 5.0);
        let w = random(cols, &mut rng, 0.5, 1.5);
        let b = random(cols, &mut rng, -1.0, 1.0);
        let (dx, dw, db) = (
            s.clone_htod(&x).unwrap(),
            s.clone_htod(&w).unwrap(),
            s.clone_htod(&b).unwrap(),
        );
        let eps = 1e-5f32;
        let what = |op: &str| format!("{op} {rows}x{cols}");

        let mut dy = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        softmax.run(&s, (rows, cols), &dx, &mut dy).unwrap();
        let y = s.clone_dtoh(&dy).unwrap();
        assert_close(
            &what("softmax"),
            &y,
            &reference::softmax(&x, cols),
            SOFTMAX_TOLERANCE,
        );

        let mut dy = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        layer_norm
            .run(&s, (rows, cols), eps, (&dx, &dw, &db), &mut dy)
            .unwrap();
        let y = s.clone_dtoh(&dy).unwrap();
        let expect = reference::layer_norm(&x, (&w, &b), eps);
        assert_close(&what("layer_norm"), &y, &expect, NORM_TOLERANCE);

        let mut dy = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        rms_norm
            .run(&s, (rows, cols), eps, &dx, &dw, &mut dy)
            .unwrap();
        let y = s.clone_dtoh(&dy).unwrap();
        assert_close(
            &what("rms_norm"),
            &y,
            &reference::rms_norm(&x, &w, eps),
            NORM_TOLERANCE,
        );

        // a refused call launches nothing: the output keeps its poison
        let mut dy = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        assert!(rms_norm
            .run(&s, (rows, cols + 1), eps, &dx, &dw, &mut dy)
            .is_err());
        assert!(s.clone_dtoh(&dy).unwrap().iter().all(|v| v.is_nan()));
    }

    let add = AddOp::<f16>::new(&device).unwrap();
    let copy = TileCopyOp::new(&device).unwrap();
    for (rows, cols) in [(1000, 72), (4096, 4096)] {
        let n = rows * cols;
        let (a, b) = (
            random(n, &mut rng, -4.0, 4.0),
            random(n, &mut rng, -4.0, 4.0),
        );
        let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        let mut dc = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        add.run(&s, &da, &db, &mut dc).unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        assert!((0..n).all(|i| c[i] == f16::from_f64(a[i].to_f64() + b[i].to_f64())));
        let mut dc = s.clone_htod(&vec![f16::NAN; n]).unwrap();
        copy.run(&s, (rows, cols), &da, &mut dc).unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        assert!(a.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_fused_epilogue_matches_its_reference_on_the_gpu() {
    use tilus_kernels::gemm::epilogue::{EpilogueInputs, FusedGemm, Relu};
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let s = device.stream().clone();
    let gemm = FusedGemm::<Relu>::new(&device).unwrap();
    let mut rng = Rng::new(52);
    for (m, n, k) in [(300, 520, 256), (1024, 1024, 512)] {
        let (alpha, beta) = (1.25f32, 0.5f32);
        let a = random(m * k, &mut rng, -0.25, 0.25);
        let b = random(n * k, &mut rng, -0.25, 0.25);
        let d = random(m * n, &mut rng, -1.0, 1.0);
        let bias = random(n, &mut rng, -1.0, 1.0);
        let up = |v: &Vec<f16>| s.clone_htod(v).unwrap();
        let (da, db, dd, dbias) = (up(&a), up(&b), up(&d), up(&bias));
        let mut dc = s.clone_htod(&vec![f16::NAN; m * n]).unwrap();
        let inputs = EpilogueInputs {
            a: &da,
            b: &db,
            d: &dd,
            bias: &dbias,
        };
        gemm.run(&s, (m, n, k), (alpha, beta), inputs, &mut dc)
            .unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        let expect =
            reference::fused_epilogue::<Relu>((m, n, k), (alpha, beta), (&a, &b, &d, &bias));
        assert_close(
            &format!("fused relu {m}x{n}x{k}"),
            &c,
            &expect,
            (2e-3, 2e-3),
        );
    }
}
