//! Stream-K on the CPU interpreter against the f64 CPU reference. The interpreter models four
//! multiprocessors, so at these sizes the last two rounds' tiles are shared out by K steps:
//! tiles finished by one block alone, tiles split between two (a partial left, the finisher
//! waiting on its flag), ragged edges in M, N and K, pairs of blocks along M and along N. The flags are zero
//! again afterwards, and a second launch on the same workspace is right too.

use tilus::prelude::f16;
use tilus_bench::harness::{self, Rng};
use tilus_kernels::gemm::persistent::MatmulPersistent;
use tilus_kernels::gemm::stream_k::{flags_len, workspace_elements, workspace_len, MatmulStreamK};

fn check(tile: MatmulPersistent, dims: (usize, usize, usize), seed: u64) {
    check_on(tile, dims, seed, tilus::interp::Options::default());
}

/// [`check`] on the interpreter's options `opts` (its multiprocessors).
fn check_on(
    tile: MatmulPersistent,
    (m, n, k): (usize, usize, usize),
    seed: u64,
    opts: tilus::interp::Options,
) {
    let config = MatmulStreamK { tile };
    let mut rng = Rng::new(seed);
    let a = harness::seed_inputs::<f16>(m * k, k, &mut rng);
    let b = harness::seed_inputs::<f16>(n * k, k, &mut rng);
    let expect = harness::cpu_reference(&a, &b, m, n, k);
    let t = &config.tile;
    let mut w = vec![f32::NAN; workspace_len(t.block_m as usize, t.block_n as usize)];
    let mut flags = vec![0i32; flags_len()];
    for launch in 0..2 {
        let mut c = vec![f16::NAN; m * n];
        tilus::interpret_with(
            &config,
            (
                m as i32,
                n as i32,
                k as i32,
                &a[..],
                &b[..],
                &mut c[..],
                &mut w[..],
                &mut flags[..],
            ),
            &opts,
        )
        .unwrap_or_else(|e| panic!("{config:?} at {m}x{n}x{k}: {e}"));
        let check = harness::compare(&c, &expect);
        assert!(
            check.passed(),
            "{config:?} at {m}x{n}x{k}, launch {launch}: {check:?}"
        );
        assert!(check.rel_err < 1e-3, "{check:?}");
        assert!(
            flags.iter().all(|&f| f == 0),
            "flags left raised: {flags:?}"
        );
    }
    // some block left a partial (the workspace is NaN where none was written)
    assert!(
        w.iter().any(|x| !x.is_nan()),
        "{config:?} at {m}x{n}x{k}: no tile was shared"
    );
}

#[test]
fn stream_k_shares_the_last_rounds_alone_and_in_pairs() {
    tilus_bench::test_cache!();
    let single = MatmulPersistent::default();
    // 10 tiles of 128 x 256 on 4 blocks: one round whole, six tiles shared, 8 K steps each
    check(single.clone(), (640, 512, 512), 1);
    // ragged: 15 tiles, 7 shared, 6 K steps (the last one short)
    check(single, (520, 700, 328), 2);
    let pairs = MatmulPersistent {
        block_n: 128,
        cluster_m: 2,
        stages: 3,
        ..MatmulPersistent::default()
    };
    // pairs of 256 x 128: 9 units on 2 pairs, 3 shared
    check(pairs, (520, 380, 328), 3);
    let pairs_along_n = MatmulPersistent {
        block_n: 128,
        cluster_n: 2,
        stages: 3,
        ..MatmulPersistent::default()
    };
    // pairs of 128 x 256 sharing A: 5 tile rows of 3 units (the last unit's second tile
    // outside C), 15 units on 2 pairs: not whole rounds, the last two rounds' shared
    check(pairs_along_n, (520, 600, 328), 6);
    // 128 x 192: three chunks of C per tile through two staging buffers, so a tile's first
    // chunk reuses the buffer of the tile before's last store; 15 tiles, 3 shared
    let three_chunks = MatmulPersistent {
        block_n: 192,
        stages: 4,
        ..MatmulPersistent::default()
    };
    check(three_chunks, (520, 560, 328), 4);
}

/// Pairs on a device of twelve multiprocessors (six pairs): several shared units are left
/// partial at once, each pair's two blocks in slots of their own (a slot per block, not per
/// unit: two units' partials would overwrite each other).
#[test]
fn stream_k_pairs_keep_their_partials_apart_when_many_units_are_shared() {
    tilus_bench::test_cache!();
    let opts = tilus::interp::Options {
        multiprocessors: 12,
        // a finisher waiting on a flag no one raises fails at once (the interpreter runs the
        // writers first: a rightful wait sees its flag raised)
        max_loop_iterations: 10_000,
        ..Default::default()
    };
    for (cluster_m, cluster_n) in [(2, 1), (1, 2)] {
        let pairs = MatmulPersistent {
            block_n: 128,
            cluster_m,
            cluster_n,
            stages: 3,
            ..MatmulPersistent::default()
        };
        // 128 x 128 tiles, 7 x 5 of them: 20 units in pairs along M, 21 along N, on six
        // pairs (not whole rounds): the last two rounds' 12 units shared, 6 K steps each
        check_on(pairs, (840, 600, 384), 7, opts.clone());
    }
}

/// The finisher's handshake (the partial, `fence_gpu`, the flag raised; the flag seen,
/// `fence_gpu`, the partial read) needs both fences, in single blocks and in pairs: without
/// either, the interpreter reports it.
#[test]
fn every_fence_of_the_shared_tiles_is_needed() {
    use tilus::interp::Fault;
    tilus_bench::test_cache!();
    let pairs = MatmulPersistent {
        block_n: 128,
        cluster_m: 2,
        stages: 3,
        ..MatmulPersistent::default()
    };
    for (tile, (m, n, k)) in [
        (MatmulPersistent::default(), (520, 700, 328)),
        (pairs, (520, 380, 328)),
    ] {
        let config = MatmulStreamK { tile };
        let mut rng = Rng::new(5);
        let a = harness::seed_inputs::<f16>(m * k, k, &mut rng);
        let b = harness::seed_inputs::<f16>(n * k, k, &mut rng);
        let t = &config.tile;
        let w_len = workspace_len(t.block_m as usize, t.block_n as usize);
        let faults = tilus_bench::checks::every_fence_is_needed("stream-K", |opts| {
            let mut w = vec![f32::NAN; w_len];
            let mut flags = vec![0i32; flags_len()];
            let mut c = vec![f16::NAN; m * n];
            let (mi, ni, ki) = (m as i32, n as i32, k as i32);
            let args = (
                mi,
                ni,
                ki,
                &a[..],
                &b[..],
                &mut c[..],
                &mut w[..],
                &mut flags[..],
            );
            tilus::interpret_with(&config, args, opts)
        });
        // each consumer warp group's pair of fences
        let pair = [Fault::MissingAcquireFence, Fault::MissingReleaseFence];
        assert_eq!(faults, pair.repeat(2), "{config:?}");
    }
}

/// The workspace `StreamK` allocates once holds what every configuration of the space needs.
#[test]
fn interp_workspace_of_the_host_type_fits_every_configuration() {
    let configs = tilus_bench::spaces::configs::<MatmulStreamK>();
    assert!(!configs.is_empty());
    for c in configs {
        let t = &c.tile;
        let need = workspace_len(t.block_m as usize, t.block_n as usize);
        assert!(need <= workspace_elements(), "{c:?}: {need}");
    }
}
