//! Split-K (the partials, then their sum) on the CPU interpreter against the f64 CPU
//! reference: small M (one row, a few, a ragged tile), K split into ranges that divide it
//! and ranges whose last one is shorter or empty.

use half::f16;
use tilus_bench::harness::{self, Rng};
use tilus_kernels::gemm::split_k::{counters_len, workspace_len, MatmulSplitK, SplitKReduce};

/// One split-K call on the interpreter: the partials (and the sum by the last split's blocks,
/// or by the second kernel), on `counters` (which the call must leave at zero). Returns C.
fn call(
    config: &MatmulSplitK,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[f16], &[f16]),
    counters: &mut [i32],
) -> Vec<f16> {
    let mut w = vec![f32::NAN; workspace_len(m, n, config.splits as usize)];
    let mut c = vec![f16::NAN; m * n];
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let args = (mi, ni, ki, a, b, &mut w[..], &mut *counters, &mut c[..]);
    tilus::interpret(config, args).unwrap_or_else(|e| panic!("{config:?} at {m}x{n}x{k}: {e}"));
    if config.serial == 0 {
        assert!(
            c.iter().all(|x| x.is_nan()),
            "the partials alone write no C"
        );
        tilus::interpret(&SplitKReduce, (mi, ni, config.splits, &w[..], &mut c[..]))
            .unwrap_or_else(|e| panic!("the sum at {m}x{n}x{k}: {e}"));
    }
    assert!(counters.iter().all(|&x| x == 0), "{config:?}: {counters:?}");
    c
}

fn check(config: &MatmulSplitK, (m, n, k): (usize, usize, usize), seed: u64) {
    let mut rng = Rng::new(seed);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut counters = vec![0i32; counters_len(m, n)];
    let expect = harness::cpu_reference(&a, &b, m, n, k);
    // twice: a call leaves the counters as it found them, for the next
    for _ in 0..2 {
        let c = call(config, (m, n, k), (&a, &b), &mut counters);
        let check = harness::compare(&c, &expect);
        assert!(check.passed(), "{config:?} at {m}x{n}x{k}: {check:?}");
        assert!(check.rel_err < 1e-3, "{check:?}");
    }
}

/// The two forms compute the same sums in the same order: the same bits.
fn same_bits(config: MatmulSplitK, (m, n, k): (usize, usize, usize)) {
    let mut rng = Rng::new(9);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut counters = vec![0i32; counters_len(m, n)];
    let mut bits = |serial| {
        let config = MatmulSplitK {
            serial,
            ..config.clone()
        };
        let c = call(&config, (m, n, k), (&a, &b), &mut counters);
        c.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let (two_kernels, one) = (bits(0), bits(1));
    assert_eq!(two_kernels, one);
}

#[test]
fn partials_and_their_sum_are_exact_at_small_m() {
    tilus_bench::test_cache!();
    for serial in [0, 1] {
        let config = |block_n, splits| MatmulSplitK {
            block_n,
            block_k: 64,
            stages: 4,
            splits,
            serial,
        };
        // 8 K steps in 2 or 4 ranges
        check(&config(128, 2), (1, 256, 512), 1);
        check(&config(128, 4), (16, 200, 512), 2);
        // 3 K steps (the last one partial) in 4 ranges: the last range is empty
        check(&config(256, 4), (70, 256, 136), 3);
        // 5 K steps in 2 ranges of 3 and 2
        check(&config(128, 2), (64, 128, 320), 4);
    }
    let config = MatmulSplitK {
        block_n: 64,
        block_k: 64,
        stages: 8,
        splits: 4,
        serial: 0,
    };
    same_bits(config, (16, 192, 512));
}

/// The serial sum's handshake (each split's partial, `fence_gpu`, its count; the last split
/// sees the count, `fence_gpu`, then reads the partials) needs both fences: without either, the
/// interpreter reports it.
#[test]
fn every_fence_of_the_serial_sum_is_needed() {
    use tilus::interp::Fault;
    tilus_bench::test_cache!();
    let config = MatmulSplitK {
        block_n: 64,
        block_k: 64,
        stages: 2,
        splits: 3,
        serial: 1,
    };
    let (m, n, k) = (5usize, 128usize, 320usize);
    let mut rng = Rng::new(11);
    let a = harness::seed_inputs::<f16>(m * k, k, &mut rng);
    let b = harness::seed_inputs::<f16>(n * k, k, &mut rng);
    let faults = tilus_bench::checks::every_fence_is_needed("split-K", |opts| {
        let mut w = vec![f32::NAN; workspace_len(m, n, config.splits as usize)];
        let mut counters = vec![0i32; counters_len(m, n)];
        let mut c = vec![f16::NAN; m * n];
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let args = (
            mi,
            ni,
            ki,
            &a[..],
            &b[..],
            &mut w[..],
            &mut counters[..],
            &mut c[..],
        );
        tilus::interpret_with(&config, args, opts)
    });
    assert_eq!(
        faults,
        vec![Fault::MissingReleaseFence, Fault::MissingAcquireFence]
    );
}
