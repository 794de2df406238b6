//! The FP8 GEMM on the CPU interpreter against the exact product of the codes' values: e4m3
//! and e5m2, outputs bf16, f16 and f32, cooperative and ping-pong tiles, edges in M and N,
//! more K steps than the ring has stages (its phases flip), blocks walking several tiles
//! (the interpreter models four multiprocessors), one row and one step; and its refusals.

use super::fp8_reference::{check, codes, scales, Summed::F32};
use super::quant_reference::seed;
use half::{bf16, f16};
use tilus::lowp::{F8E4M3, F8E5M2};
use tilus_bench::harness::Rng;
use tilus_kernels::gemm::fp8::{Fp8GemmOp, MatmulFp8};
use tilus_kernels::gemm::persistent::MatmulPersistent;

const BF16_U: f64 = 1.0 / 256.0;
const F16_U: f64 = 1.0 / 2048.0;
const F32_U: f64 = 1.0 / 16_777_216.0;

fn tile(block_m: i32, block_n: i32, ping_pong: i32) -> MatmulPersistent {
    MatmulPersistent {
        block_m,
        block_n,
        ping_pong,
        ..MatmulPersistent::default()
    }
}

/// e4m3 into bf16 on the default tile (128 × 128): many tiles over four blocks, six K steps through
/// four stages, edges in M and N.
#[test]
fn interp_fp8_e4m3_into_bf16_walks_tiles_and_wraps_the_ring() {
    let mut rng = Rng::new(seed());
    let shape @ (m, n, k) = (300, 520, 656);
    let a = codes::<F8E4M3>(&mut rng, m * k);
    let b = codes::<F8E4M3>(&mut rng, n * k);
    let s = scales(&mut rng);
    let mut c = vec![bf16::NAN; m * n];
    let config = MatmulFp8::<F8E4M3, bf16>::default();
    Fp8GemmOp::interpret(&config, shape, (&a, &b), &s, &mut c).unwrap();
    check(
        "e4m3 -> bf16",
        shape,
        (&a, &b),
        s,
        &c,
        bf16::to_f64,
        (BF16_U, F32),
    )
    .unwrap();
}

/// e5m2 into f16 on ping-pong warp groups (64 × 128) and 256 × 64 tiles, and e4m3 into f32 on
/// 128 × 64 tiles (no deferred stores), one row, one step and odd edges.
#[test]
fn interp_fp8_every_output_type_and_schedule_matches_the_exact_product() {
    let mut rng = Rng::new(seed());
    for (shape, t) in [
        ((77, 200, 400), tile(64, 128, 1)),
        ((65, 260, 144), tile(256, 64, 0)),
    ] {
        let (m, n, k) = shape;
        let a = codes::<F8E5M2>(&mut rng, m * k);
        let b = codes::<F8E5M2>(&mut rng, n * k);
        let s = scales(&mut rng);
        let mut c = vec![f16::NAN; m * n];
        let config = MatmulFp8::<F8E5M2, f16>::new(t);
        Fp8GemmOp::interpret(&config, shape, (&a, &b), &s, &mut c).unwrap();
        check(
            "e5m2 -> f16",
            shape,
            (&a, &b),
            s,
            &c,
            f16::to_f64,
            (F16_U, F32),
        )
        .unwrap();
    }
    for shape in [(1, 8, 16), (257, 130, 272)] {
        let (m, n, k) = shape;
        let a = codes::<F8E4M3>(&mut rng, m * k);
        let b = codes::<F8E4M3>(&mut rng, n * k);
        let s = scales(&mut rng);
        let mut c = vec![f32::NAN; m * n];
        let config = MatmulFp8::<F8E4M3, f32>::new(tile(128, 64, 0));
        Fp8GemmOp::interpret(&config, shape, (&a, &b), &s, &mut c).unwrap();
        check(
            "e4m3 -> f32",
            shape,
            (&a, &b),
            s,
            &c,
            f64::from,
            (F32_U, F32),
        )
        .unwrap();
    }
}

/// The overlapped promotion (two partial products, each step promoted while the next runs)
/// on cooperative 128 × 128 and 128 × 64 and ping-pong 64 × 64 tiles: one step, an odd count (the last in
/// partial 0), an even count past the ring's stages (the last in partial 1); runs of four
/// and eight steps with pairs and an odd step after them, and fewer steps than a run; with
/// fine-grained scales each step's factor travels with its partial. And cooperative warp
/// groups taking turns at each step, past the ring's stages.
#[test]
fn interp_fp8_overlapped_promotion_matches_the_exact_product() {
    use super::fp8_reference::{block_scales, check_blocks};
    use tilus_kernels::gemm::fp8::{Fp8BlocksGemmOp, MatmulFp8Blocks};
    let mut rng = Rng::new(seed());
    let in_runs = |t, pairs| MatmulFp8::<F8E4M3, bf16>::new(t).with_overlap(pairs);
    let overlapped = |t| in_runs(t, 1);
    let in_turns = MatmulFp8::<F8E4M3, bf16>::default().with_turns(true);
    for (shape, config) in [
        ((1, 8, 16), overlapped(tile(128, 64, 0))),
        ((130, 200, 400), overlapped(tile(128, 128, 0))),
        ((77, 130, 272), overlapped(tile(64, 64, 1))),
        // runs of four: one run, then a pair (six steps)
        ((70, 130, 656), in_runs(tile(128, 128, 0), 2)),
        // runs of eight: one run, a pair, an odd last step (eleven steps); and too few
        // steps for a run (three)
        ((65, 72, 1408), in_runs(tile(128, 64, 0), 4)),
        ((65, 72, 384), in_runs(tile(64, 64, 1), 4)),
        // warp group 1 half a run behind: its half run, a run, a pair (eight steps); too few
        // steps for the half run (one)
        (
            (130, 72, 1024),
            in_runs(tile(128, 64, 0), 2).with_turns(true),
        ),
        (
            (130, 72, 128),
            in_runs(tile(128, 64, 0), 2).with_turns(true),
        ),
        // the warp groups' turns at each step (not overlapped)
        ((130, 200, 656), in_turns),
        // pairs of blocks sharing B's tile: a step at a time, and in runs of four; three
        // rows of tiles (the second pair's second block past M), six steps
        ((300, 200, 656), MatmulFp8::new(pair())),
        ((300, 260, 656), in_runs(pair(), 2)),
    ] {
        let (m, n, k) = shape;
        let a = codes::<F8E4M3>(&mut rng, m * k);
        let b = codes::<F8E4M3>(&mut rng, n * k);
        let s = scales(&mut rng);
        let mut c = vec![bf16::NAN; m * n];
        Fp8GemmOp::interpret(&config, shape, (&a, &b), &s, &mut c).unwrap();
        check(
            "overlapped",
            shape,
            (&a, &b),
            s,
            &c,
            bf16::to_f64,
            (BF16_U, F32),
        )
        .unwrap();
    }
    let shape @ (m, n, k) = (100usize, 200usize, 656usize);
    let kb = k.div_ceil(128);
    let a = codes::<F8E4M3>(&mut rng, m * k);
    let b = codes::<F8E4M3>(&mut rng, n * k);
    let sa = block_scales(&mut rng, kb * m);
    let sb = block_scales(&mut rng, n.div_ceil(128) * kb);
    let mut c = vec![bf16::NAN; m * n];
    // runs of four with each step's factor: one run, then a pair; and in pairs of blocks
    // (each block's rows' factors, B's from the pair's shared tile)
    for inner in [in_runs(tile(64, 64, 1), 2), in_runs(pair(), 2)] {
        let config = MatmulFp8Blocks { inner };
        c.fill(bf16::NAN);
        Fp8BlocksGemmOp::interpret(&config, shape, (&a, &b), (&sa, &sb), &mut c).unwrap();
        let bound = (BF16_U, F32);
        check_blocks(
            "overlapped blocks",
            shape,
            (&a, &b),
            (&sa, &sb),
            &c,
            bf16::to_f64,
            bound,
        )
        .unwrap();
    }
}

/// The default tile (128 × 128) in pairs of blocks along M (`cluster_m` 2: B's tile
/// multicast into both).
fn pair() -> MatmulPersistent {
    MatmulPersistent {
        cluster_m: 2,
        ..tile(128, 128, 0)
    }
}

/// Shapes and buffers the FP8 GEMM does not take are refused before anything runs, with the
/// rule: K not a multiple of 16, an empty dimension, buffers of the wrong length; a
/// configuration whose K step is not 128 codes is refused when traced.
#[test]
fn interp_fp8_refuses_what_it_does_not_take() {
    let config = MatmulFp8::<F8E4M3, bf16>::default();
    let (a, b) = (
        vec![F8E4M3::from_f32(1.0); 64],
        vec![F8E4M3::from_f32(1.0); 64],
    );
    let mut c = vec![bf16::NAN; 16];
    let err = |shape, a: &[F8E4M3], b: &[F8E4M3], s: &[f32], c: &mut [bf16]| {
        Fp8GemmOp::interpret(&config, shape, (a, b), s, c)
            .unwrap_err()
            .to_string()
    };
    let e = err((4, 4, 8), &a[..32], &b[..32], &[1.0, 1.0], &mut c);
    assert!(e.contains("multiple of 16"), "{e}");
    let e = err((0, 4, 16), &a[..0], &b[..64], &[1.0, 1.0], &mut c[..0]);
    assert!(e.contains("m = 0"), "{e}");
    let e = err((4, 4, 16), &a[..63], &b, &[1.0, 1.0], &mut c);
    assert!(e.contains("`a`"), "{e}");
    let e = err((4, 4, 16), &a, &b, &[1.0], &mut c);
    assert!(e.contains("`scales`"), "{e}");
    let e = err((4, 4, 16), &a, &b, &[1.0, 1.0], &mut c[..15]);
    assert!(e.contains("`c`"), "{e}");
    assert!(c.iter().all(|v| v.is_nan()), "nothing ran");
    let mut bad = config.clone();
    bad.tile.block_k = 64;
    let e = tilus::trace(&bad, &[16, 64]).unwrap_err().to_string();
    assert!(e.contains("block_k 128"), "{e}");
}

/// Fine-grained scales (one per 1 × 128 block of A, per 128 × 128 block of B), each block's
/// its own: e4m3 into bf16 on the default tile (blocks of N and K partly filled, tiles
/// walked, the ring wrapped), e5m2 into f32 on 128 × 64 tiles and ping-pong 64 × 128; a tile
/// wider than a block of B's scales is refused when traced, scales of the wrong length
/// before anything runs.
#[test]
fn interp_fp8_blocks_apply_each_blocks_scales() {
    use super::fp8_reference::{block_scales, check_blocks};
    use tilus_kernels::gemm::fp8::{Fp8BlocksGemmOp, MatmulFp8Blocks};
    let mut rng = Rng::new(seed());
    let scales = |rng: &mut Rng, (m, n, k): (usize, usize, usize)| {
        let kb = k.div_ceil(128);
        (
            block_scales(rng, kb * m),
            block_scales(rng, n.div_ceil(128) * kb),
        )
    };
    let shape @ (m, n, k) = (300, 330, 656);
    let a = codes::<F8E4M3>(&mut rng, m * k);
    let b = codes::<F8E4M3>(&mut rng, n * k);
    let (sa, sb) = scales(&mut rng, shape);
    let mut c = vec![bf16::NAN; m * n];
    let config = MatmulFp8Blocks::<F8E4M3, bf16>::default();
    Fp8BlocksGemmOp::interpret(&config, shape, (&a, &b), (&sa, &sb), &mut c).unwrap();
    check_blocks(
        "blocks e4m3 -> bf16",
        shape,
        (&a, &b),
        (&sa, &sb),
        &c,
        bf16::to_f64,
        (BF16_U, F32),
    )
    .unwrap();
    for t in [tile(128, 64, 0), tile(64, 128, 1)] {
        let shape @ (m, n, k) = (77, 200, 400);
        let a = codes::<F8E5M2>(&mut rng, m * k);
        let b = codes::<F8E5M2>(&mut rng, n * k);
        let (sa, sb) = scales(&mut rng, shape);
        let mut c = vec![f32::NAN; m * n];
        let config = MatmulFp8Blocks::<F8E5M2, f32>::new(t);
        Fp8BlocksGemmOp::interpret(&config, shape, (&a, &b), (&sa, &sb), &mut c).unwrap();
        check_blocks(
            "blocks e5m2 -> f32",
            shape,
            (&a, &b),
            (&sa, &sb),
            &c,
            f64::from,
            (F32_U, F32),
        )
        .unwrap();
    }
    let wide = MatmulFp8Blocks::<F8E4M3, bf16>::new(tile(64, 256, 1));
    let e = tilus::trace(&wide, &[256, 256]).unwrap_err().to_string();
    assert!(e.contains("block_n 64 or 128"), "{e}");
    let config = MatmulFp8Blocks::<F8E4M3, bf16>::default();
    let (a, b) = (
        vec![F8E4M3::from_f32(1.0); 4 * 256],
        vec![F8E4M3::from_f32(1.0); 4 * 256],
    );
    let mut c = vec![bf16::NAN; 16];
    let e = Fp8BlocksGemmOp::interpret(
        &config,
        (4, 4, 256),
        (&a, &b),
        (&[1.0; 7], &[1.0; 2]),
        &mut c,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`a_scales`"), "{e}");
    let e = Fp8BlocksGemmOp::interpret(
        &config,
        (4, 4, 256),
        (&a, &b),
        (&[1.0; 8], &[1.0; 1]),
        &mut c,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`b_scales`"), "{e}");
    assert!(c.iter().all(|v| v.is_nan()), "nothing ran");
}

/// The tensor maps' L2 promotion (the host encodes it; the interpreter has no L2): v6's
/// 16-bit operands widen a miss to 128 bytes, FP8's keep the default 256 (each measured the
/// faster, docs/perf.md).
#[test]
fn sixteen_bit_operands_widen_misses_to_128_bytes_and_fp8_to_256() {
    use tilus::ir::L2Promotion;
    fn promotions<S: tilus::Script>(script: &S, consts: &[i64]) -> Vec<L2Promotion> {
        let program = tilus::trace(script, consts).unwrap();
        let (program, _) = tilus::passes::compile_program(program).unwrap();
        program.tensor_maps.iter().map(|m| m.l2_promotion).collect()
    }
    let v6 = promotions(&MatmulPersistent::default(), &[2048, 1000]);
    let fp8 = promotions(&MatmulFp8::<F8E4M3, bf16>::default(), &[4096, 4096]);
    for (what, maps, want) in [
        ("v6", v6, L2Promotion::B128),
        ("fp8", fp8, L2Promotion::B256),
    ] {
        assert!(maps.len() >= 3, "{what}: A, B and C's maps: {maps:?}");
        assert!(maps.iter().all(|&p| p == want), "{what}: {maps:?}");
    }
}
