//! v0 on the CPU interpreter, against the f64 CPU reference: every configuration of its space
//! that compiles (each TMA swizzle) and a taller tile, at shapes that are multiples of the tile
//! and shapes that are not (n and k are compile-time constants; k stays a multiple of 8 for
//! TMA's 16-byte row stride), with K over several steps so that the barrier's phase flips more
//! than once. Plus a differential test against the GPU (ignored without one).

use half::f16;
use hopper_matmul::v0::MatmulTma;
use tilus_bench::harness::{self, Rng};

/// Random inputs as the seed draws them, the interpreter's output and the reference.
fn interpret(config: &MatmulTma, m: usize, n: usize, k: usize, seed: u64) -> (Vec<f16>, Vec<f16>) {
    let mut rng = Rng::new(seed);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut c = vec![f16::NAN; m * n];
    let report = tilus::interpret(
        config,
        (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]),
    )
    .unwrap_or_else(|e| panic!("{config:?} at {m}x{n}x{k}: {e}"));
    let bm = config.block_m as usize;
    let bn = config.block_n as usize;
    assert_eq!(report.blocks as usize, m.div_ceil(bm) * n.div_ceil(bn));
    (c, harness::cpu_reference(&a, &b, m, n, k))
}

fn check(config: MatmulTma, m: usize, n: usize, k: usize, seed: u64) {
    let (c, expect) = interpret(&config, m, n, k, seed);
    let check = harness::compare(&c, &expect);
    assert!(check.passed(), "{config:?} at {m}x{n}x{k}: {check:?}");
    assert!(check.rel_err < 1e-3, "{check:?}");
}

#[test]
fn default_config_at_one_tile() {
    tilus_bench::test_cache!();
    check(MatmulTma::default(), 64, 128, 64, 1);
}

/// Every configuration of the space that fits the register file (each TMA swizzle: block_k
/// 16, 32 and 64, rows of 32, 64 and 128 bytes; one and two warps' rows of 64) and a tile
/// taller than it is wide, outside the space.
pub fn forms() -> Vec<MatmulTma> {
    [
        (64, 128, 16),
        (64, 128, 32),
        (64, 128, 64),
        (128, 128, 16),
        (128, 128, 32),
        (128, 64, 64),
    ]
    .into_iter()
    .map(|(block_m, block_n, block_k)| MatmulTma {
        block_m,
        block_n,
        block_k,
    })
    .collect()
}

#[test]
fn every_form_is_exact_at_multiples_and_ragged_shapes() {
    tilus_bench::test_cache!();
    for (i, config) in forms().into_iter().enumerate() {
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

#[test]
fn blocks_run_one_after_another_give_the_same_bits() {
    tilus_bench::test_cache!();
    let config = MatmulTma::default();
    let (m, n, k) = (130, 136, 80);
    let mut rng = Rng::new(7);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut par = vec![f16::NAN; m * n];
    let mut seq = vec![f16::NAN; m * n];
    tilus::interpret(
        &config,
        (m as i32, n as i32, k as i32, &a[..], &b[..], &mut par[..]),
    )
    .unwrap();
    let opts = tilus::interp::Options {
        parallel: false,
        batch: 1,
        ..Default::default()
    };
    tilus::interpret_with(
        &config,
        (m as i32, n as i32, k as i32, &a[..], &b[..], &mut seq[..]),
        &opts,
    )
    .unwrap();
    assert_eq!(
        par.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        seq.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn an_interpreter_bound_script_reuses_its_plan_and_rejects_bad_arguments() {
    tilus_bench::test_cache!();
    let interp = tilus::Interpreter::new(MatmulTma::default());
    let (m, n, k) = (64usize, 128usize, 64usize);
    let mut rng = Rng::new(8);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut c = vec![f16::NAN; m * n];
    for _ in 0..2 {
        interp
            .run((m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]))
            .unwrap();
    }
    let check = harness::compare(&c, &harness::cpu_reference(&a, &b, m, n, k));
    assert!(check.passed(), "{check:?}");
    // a K whose rows are not 16-byte aligned breaks TMA's stride rule, as on the GPU
    let k2 = 20;
    let a2 = vec![f16::ZERO; m * k2];
    let b2 = vec![f16::ZERO; n * k2];
    match interp.run((m as i32, n as i32, k2 as i32, &a2[..], &b2[..], &mut c[..])) {
        Err(tilus::Error::Script(d)) => {
            assert!(d[0].message.contains("multiples of 16 bytes"), "{d:?}")
        }
        other => panic!("expected the verifier's stride rule, got {other:?}"),
    }
    // a buffer too small for its view
    match interp.run((m as i32, n as i32, k as i32, &a[..10], &b[..], &mut c[..])) {
        Err(tilus::Error::Argument { arg, message }) => {
            assert_eq!(arg, "a_ptr");
            assert!(message.contains("holds 10 elements"), "{message}");
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
}

/// The interpreter and the GPU on the same inputs: the same kernel, so the same products, up
/// to the order in which the tensor cores add them up.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_interpreter_agrees_with_the_gpu() {
    tilus_bench::test_cache!();
    use tilus::runtime::Device;
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    for (config, (m, n, k), seed) in [
        (MatmulTma::default(), (256, 256, 256), 11),
        (MatmulTma::default(), (130, 136, 80), 12),
        (
            MatmulTma {
                block_m: 128,
                block_n: 128,
                block_k: 32,
            },
            (200, 264, 192),
            13,
        ),
        (
            MatmulTma {
                block_m: 64,
                block_n: 128,
                block_k: 16,
            },
            (100, 72, 48),
            14,
        ),
    ] {
        let mut rng = Rng::new(seed);
        let a = harness::seed_inputs(m * k, k, &mut rng);
        let b = harness::seed_inputs(n * k, k, &mut rng);
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

#[test]
fn an_empty_problem_runs_nothing_as_on_the_gpu() {
    tilus_bench::test_cache!();
    let (n, k) = (128usize, 64usize);
    let b = vec![f16::ZERO; n * k];
    let report = tilus::interpret(
        &MatmulTma::default(),
        (0, n as i32, k as i32, &[][..], &b[..], &mut [][..]),
    )
    .unwrap();
    assert_eq!(report.blocks, 0);
}

/// `with` replaces the named hyperparameters of the default and refuses an unknown name.
#[test]
fn with_replaces_the_named_hyperparameters_only() {
    let c = MatmulTma::with(&[("block_m".into(), 128), ("block_k".into(), 32)]).unwrap();
    assert_eq!(
        (c.block_m, c.block_n, c.block_k),
        (128, MatmulTma::default().block_n, 32)
    );
    assert!(MatmulTma::with(&[("block_q".into(), 1)]).is_err());
}
