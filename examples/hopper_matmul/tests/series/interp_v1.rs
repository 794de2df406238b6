//! v1 (WGMMA from shared memory) on the CPU interpreter, against the f64 CPU reference: every
//! configuration of its space that compiles (every swizzle, block_k 16, 32, 64, and both
//! warp-group row counts), at shapes that are multiples of the tile and shapes that are not,
//! with K over several steps so that the barrier's phase flips more than once. Plus a
//! differential test against the GPU (ignored without one).

use half::f16;
use hopper_matmul::v1::MatmulWgmma;
use tilus_bench::harness::{self, Rng};

fn inputs(m: usize, n: usize, k: usize, seed: u64) -> (Vec<f16>, Vec<f16>) {
    let mut rng = Rng::new(seed);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    (a, b)
}

fn check(config: MatmulWgmma, m: usize, n: usize, k: usize, seed: u64) {
    let (a, b) = inputs(m, n, k, seed);
    let mut c = vec![f16::NAN; m * n];
    tilus::interpret(
        &config,
        (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]),
    )
    .unwrap_or_else(|e| panic!("{config:?} at {m}x{n}x{k}: {e}"));
    let check = harness::compare(&c, &harness::cpu_reference(&a, &b, m, n, k));
    assert!(check.passed(), "{config:?} at {m}x{n}x{k}: {check:?}");
    assert!(check.rel_err < 1e-3, "{check:?}");
}

/// Every configuration of the space that fits the register file: the three block tiles that
/// do (one and two warp groups' rows, 128 and 256 columns; 128 × 256 is rejected,
/// `nvrtc_space_v1`), each with every swizzle (block_k 16, 32, 64).
pub fn forms() -> Vec<MatmulWgmma> {
    MatmulWgmma::configs()
        .into_iter()
        .filter(|c| (c.block_m, c.block_n) != (128, 256))
        .collect()
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    let forms = forms();
    assert_eq!(forms.len(), 9);
    for (i, config) in forms.into_iter().enumerate() {
        let (bm, bn, bk) = (
            config.block_m as usize,
            config.block_n as usize,
            config.block_k as usize,
        );
        // two tile rows and columns, four K steps: the barrier completes four times, its
        // phase flipping each step
        check(config.clone(), 2 * bm, 2 * bn, 4 * bk, 10 + i as u64);
        // ragged in M, N and K: three K steps, the last one 8 wide
        check(config.clone(), bm + 36, bn + 8, 2 * bk + 8, 20 + i as u64);
        // the seed's ragged shapes
        check(config.clone(), 100, 72, 48, 30 + i as u64);
        check(config, 130, 136, 80, 40 + i as u64);
    }
}

/// The interpreter and the GPU on the same inputs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_interpreter_agrees_with_the_gpu() {
    tilus_bench::test_cache!();
    use tilus::runtime::Device;
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    for (config, (m, n, k), seed) in [
        (MatmulWgmma::default(), (256, 256, 256), 11),
        (MatmulWgmma::default(), (130, 136, 80), 12),
        (
            MatmulWgmma {
                block_m: 64,
                block_n: 128,
                block_k: 16,
            },
            (200, 264, 192),
            13,
        ),
        (
            MatmulWgmma {
                block_m: 64,
                block_n: 256,
                block_k: 32,
            },
            (100, 72, 48),
            14,
        ),
    ] {
        let (a, b) = inputs(m, n, k, seed);
        let da = stream.clone_htod(&a).unwrap();
        let db = stream.clone_htod(&b).unwrap();
        let mut dc = stream.clone_htod(&vec![f16::NAN; m * n]).unwrap();
        let jit = tilus::Jit::new(config.clone(), &device);
        jit.launch(&stream, (m as i32, n as i32, k as i32, &da, &db, &mut dc))
            .unwrap();
        let gpu = stream.clone_dtoh(&dc).unwrap();
        let mut cpu = vec![f16::NAN; m * n];
        jit.interpret((m as i32, n as i32, k as i32, &a[..], &b[..], &mut cpu[..]))
            .unwrap();
        let check = harness::compare(&cpu, &gpu);
        let same = cpu
            .iter()
            .zip(&gpu)
            .filter(|(x, y)| x.to_bits() == y.to_bits())
            .count();
        let ulps = cpu
            .iter()
            .zip(&gpu)
            .map(|(x, y)| (x.to_bits() as i32 - y.to_bits() as i32).unsigned_abs())
            .max()
            .unwrap_or(0);
        println!(
            "{config:?} {m}x{n}x{k}: {same}/{} bit-identical, max {ulps} ulp apart, {check:?}",
            m * n
        );
        assert!(check.passed(), "{config:?} {m}x{n}x{k}: {check:?}");
        assert!(ulps <= 2, "{config:?} {m}x{n}x{k}: {ulps} ulp apart");
    }
}

/// `with` replaces the named hyperparameters of the default and refuses an unknown name.
#[test]
fn with_replaces_the_named_hyperparameters_only() {
    let c = MatmulWgmma::with(&[("block_n".into(), 64), ("block_k".into(), 32)]).unwrap();
    assert_eq!(
        (c.block_m, c.block_n, c.block_k),
        (MatmulWgmma::default().block_m, 64, 32)
    );
    assert!(MatmulWgmma::with(&[("block_q".into(), 1)]).is_err());
}
