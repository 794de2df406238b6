//! The quantized matmul (`quant_matmul`) on the CPU interpreter against the exact reference:
//! every weight dequantized on the host (code, zero point, f16 scale, in f64, then rounded to
//! f16 as the kernels multiply it) and the product summed in f64. Types of every kind (signed and unsigned integers of 2 to 8 bits, FP8, FP6,
//! FP4), groups of 32, 64 and 128 and per channel, M below, at and past a block's rows, N past
//! a block's, K of one and of several steps.

use half::f16;
use tilus::lowp::*;
use tilus::prelude::Element;
use tilus_bench::harness::Rng;
use tilus_kernels::quant::{quantize, QuantMatmul, QuantMatmulOp, QuantMatmulRing, Scheme};

use crate::quant_reference::{assert_matches, inputs, reference, reference_exact, seed};

/// Runs the kernel for type `T` at `(m, n, k)` with `scheme` and checks C: within the f16
/// output's rounding of the exact sum (and the f32 sums' error, bounded by the magnitude of
/// the terms), no NaN.
fn check<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    block_m: i32,
    rng: &mut Rng,
) {
    let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
    let group = scheme.group.map_or(0, |g| g as i32);
    let config = QuantMatmul::<T>::new(group).with_block_m(block_m);
    let mut c = vec![f16::NAN; m * n];
    QuantMatmulOp::<T>::interpret(&config, (m, &a), &q, &mut c).unwrap();
    let what = format!("{} {scheme:?} ({m}, {n}, {k})", <T as LowpElement>::DTYPE);
    assert_matches(&what, &c, reference(&a, &q, m), n);
}

#[test]
fn interp_quant_matmul_matches_the_exact_product_for_every_kind_of_weight() {
    let mut rng = Rng::new(seed());
    let g128 = Scheme::grouped(128);
    check::<I4>((1, 16, 256), g128, 4, &mut rng);
    check::<U4>((3, 40, 256), g128, 4, &mut rng);
    check::<I8>((5, 16, 128), Scheme::grouped(64), 4, &mut rng);
    check::<F8E4M3>((2, 24, 256), g128, 2, &mut rng);
    check::<F8E5M2>((1, 16, 128), Scheme::per_channel(), 1, &mut rng);
    check::<F6E3M2>((1, 16, 256), g128, 1, &mut rng);
    check::<F4E2M1>((4, 17, 128), Scheme::grouped(32), 4, &mut rng);
    check::<Int<3>>((1, 16, 256), g128, 1, &mut rng);
    check::<I2>((2, 16, 256), Scheme::grouped(64), 2, &mut rng);
    check::<U2>((1, 16, 512), Scheme::per_channel(), 1, &mut rng);
}

#[test]
fn interp_quant_matmul_refuses_shapes_it_cannot_take_before_running() {
    let q = quantize::<I4>(&vec![0.5; 16 * 128], (16, 128), Scheme::grouped(64));
    let a = vec![f16::ONE; 2 * 128];
    let mut c = vec![f16::NAN; 2 * 16];
    let wrong_group = QuantMatmul::<I4>::new(128);
    let e = QuantMatmulOp::<I4>::interpret(&wrong_group, (2, &a), &q, &mut c).unwrap_err();
    assert!(
        e.to_string()
            .contains("groups of Some(64), a kernel for groups of 128"),
        "{e}"
    );
    let e = QuantMatmulOp::<I4>::interpret(&QuantMatmul::new(64), (3, &a), &q, &mut c).unwrap_err();
    assert!(
        e.to_string()
            .contains("`a` has 256 elements; the shape needs 384"),
        "{e}"
    );
    let e = QuantMatmulOp::<U4>::interpret(&QuantMatmul::new(64), (2, &a), &q, &mut c).unwrap_err();
    assert!(
        e.to_string().contains("weights of i4, a kernel for u4"),
        "{e}"
    );
    assert!(c.iter().all(|v| v.is_nan()), "nothing ran");
}

/// The tensor-core kernel for type `T` at `(m, n, k)`: as [`check`].
fn check_tc<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    rng: &mut Rng,
) {
    let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
    // the rows of A per block the host API would choose for m
    let block_m = match tilus_kernels::quant::plan((m.clamp(5, 128), n, k), scheme) {
        tilus_kernels::quant::Plan::TensorCores { block_m } => block_m,
        _ => 128,
    };
    let config =
        tilus_kernels::quant::QuantMatmulTc::<T>::new(scheme.group.map_or(0, |g| g as i32))
            .with_block_m(block_m);
    let mut c = vec![f16::NAN; m * n];
    QuantMatmulOp::<T>::interpret_tc(&config, (m, &a), &q, &mut c).unwrap();
    let what = format!(
        "tensor cores {} {scheme:?} ({m}, {n}, {k})",
        <T as LowpElement>::DTYPE
    );
    assert_matches(&what, &c, reference(&a, &q, m), n);
}

#[test]
fn interp_quant_matmul_on_tensor_cores_matches_the_product_of_the_f16_weights() {
    let mut rng = Rng::new(seed());
    check_tc::<I4>((70, 80, 128), Scheme::grouped(64), &mut rng);
    check_tc::<U4>((130, 64, 128), Scheme::grouped(128), &mut rng);
    check_tc::<F8E4M3>((64, 64, 192), Scheme::per_channel(), &mut rng);
    check_tc::<I2>((20, 64, 128), Scheme::grouped(64), &mut rng);
    check_tc::<F6E3M2>((8, 64, 128), Scheme::grouped(128), &mut rng);
    check_tc::<I4>((20, 64, 128), Scheme::grouped(128), &mut rng);
    // groups of 32: steps of 32 (a step of 64 would span two groups' scales)
    check_tc::<F4E2M1>((16, 64, 128), Scheme::grouped(32), &mut rng);
}

/// The ring kernel (the persistent GEMM's ring, W dequantized by its producer) for type `T`
/// at `(m, n, k)`, with tiles of `block_m` rows of A by `block_n` of W: as [`check`].
fn check_ring<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    (block_m, block_n, code_stages): (i32, i32, i32),
    rng: &mut Rng,
) {
    let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
    let group = scheme.group.map_or(0, |g| g as i32);
    let mut config = QuantMatmulRing::<T>::new(group).with_tiles(block_m, block_n);
    config.code_stages = code_stages;
    let mut c = vec![f16::NAN; m * n];
    QuantMatmulOp::<T>::interpret_ring(&config, (m, &a), &q, &mut c).unwrap();
    let what = format!(
        "ring {} {scheme:?} ({m}, {n}, {k}) tiles {block_m}x{block_n}",
        <T as LowpElement>::DTYPE
    );
    assert_matches(&what, &c, reference(&a, &q, m), n);
}

#[test]
fn interp_quant_matmul_on_the_ring_matches_the_product_of_the_f16_weights() {
    let mut rng = Rng::new(seed());
    // more tiles than blocks' first round, ragged M and N, K of several steps
    // (the codes brought by TMA into the producer's own ring, and loaded by its threads)
    check_ring::<I4>((150, 136, 192), Scheme::grouped(64), (128, 64, 4), &mut rng);
    check_ring::<U4>((40, 64, 256), Scheme::grouped(128), (128, 128, 0), &mut rng);
    check_ring::<F8E4M3>((64, 72, 128), Scheme::per_channel(), (256, 64, 2), &mut rng);
    check_ring::<I2>((130, 64, 512), Scheme::grouped(128), (128, 64, 3), &mut rng);
    check_ring::<Int<3>>((129, 64, 128), Scheme::grouped(64), (128, 64, 4), &mut rng);
}

/// The fragment kernel on prepacked weights of type `T` at `(m, n, k)`: as [`check`].
fn check_fragments<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    shape: (usize, usize, usize),
    scheme: Scheme,
    tiles: (i32, i32, i32),
    rng: &mut Rng,
) {
    check_fragments_steps::<T>(shape, scheme, tiles, 1, rng);
}

/// The same with `stage_steps` K steps a stage.
fn check_fragments_steps<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    (block_m, stages, splits): (i32, i32, i32),
    stage_steps: i32,
    rng: &mut Rng,
) {
    let group = scheme.group.map_or(0, |g| g as i32);
    let config = tilus_kernels::quant::QuantMatmulFragments::<T>::new(group, block_m)
        .with_stages(stages)
        .with_splits(splits)
        .with_stage_steps(stage_steps);
    check_fragment_config((m, n, k), scheme, &config, rng);
}

/// The fragment kernel `config` on prepacked weights of type `T` at `(m, n, k)`.
fn check_fragment_config<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    config: &tilus_kernels::quant::QuantMatmulFragments<T>,
    rng: &mut Rng,
) {
    let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
    let p = tilus_kernels::quant::prepack(&q).unwrap();
    let mut c = vec![f16::NAN; m * n];
    QuantMatmulOp::<T>::interpret_fragments(config, (m, &a), &p, &mut c).unwrap();
    let what = format!(
        "fragments {} {scheme:?} ({m}, {n}, {k}) {config:?}",
        <T as LowpElement>::DTYPE
    );
    // (sums scaled by group never round a weight to f16)
    let want = match config.scale_sums {
        true => reference_exact(&a, &q, m),
        false => reference(&a, &q, m),
    };
    assert_matches(&what, &c, want, n);
}

#[test]
fn interp_quant_matmul_on_prepacked_fragments_matches_the_product_of_the_f16_weights() {
    let mut rng = Rng::new(seed());
    // steps not a multiple of the stages, ragged N (the prepack's padding), M below a block
    check_fragments::<I4>((1, 72, 320), Scheme::grouped(64), (8, 2, 1), &mut rng);
    check_fragments::<U4>((5, 64, 256), Scheme::grouped(128), (8, 4, 1), &mut rng);
    check_fragments::<I8>((16, 130, 192), Scheme::per_channel(), (16, 3, 1), &mut rng);
    check_fragments::<F8E4M3>((3, 64, 128), Scheme::grouped(64), (8, 1, 1), &mut rng);
    check_fragments::<F4E2M1>((20, 64, 192), Scheme::grouped(64), (32, 2, 1), &mut rng);
    check_fragments::<I2>((2, 64, 128), Scheme::grouped(128), (8, 2, 1), &mut rng);
    // (1-bit codes: each f16 pair 16 codes apart in the thread's one word)
    check_fragments::<Int<1>>((4, 72, 256), Scheme::grouped(64), (8, 3, 1), &mut rng);
    // 3-bit codes in two planes (the low two bits, the top bit), signed and with zero points
    check_fragments::<Int<3>>((3, 72, 320), Scheme::grouped(64), (8, 2, 1), &mut rng);
    check_fragments::<UInt<3>>((17, 64, 256), Scheme::grouped(128), (32, 3, 2), &mut rng);
    // K split across blocks: 4 of 2 steps each (groups straddling none), the turns passed
    // through three partial sums; 2 of 3 steps with zero points; a count that does not
    // divide the steps (3 of 8: 2 are taken), with two row blocks of A
    check_fragments::<I4>((3, 130, 512), Scheme::grouped(128), (8, 3, 4), &mut rng);
    check_fragments::<U4>((5, 64, 384), Scheme::grouped(64), (8, 2, 2), &mut rng);
    check_fragments::<I8>((20, 64, 512), Scheme::per_channel(), (16, 4, 3), &mut rng);
    // 256 rows of A per block (what the host API takes past 128 rows), two row blocks; the
    // splits asked for are not taken there
    check_fragments::<I4>((300, 64, 256), Scheme::grouped(128), (256, 2, 4), &mut rng);
}

/// Two K steps per stage: each stage's words one box of both steps' rows, A's two tiles, the
/// steps' products committed together; the ring wraps (rounds past the stages, phases
/// flipping twice or more), splits share the rounds, zero points and FP8 take it; groups of
/// 64 and 1-bit words keep one step a stage.
#[test]
fn interp_quant_matmul_on_fragments_with_two_steps_a_stage_matches() {
    let mut rng = Rng::new(seed());
    fn run<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        shape: (usize, usize, usize),
        scheme: Scheme,
        tiles: (i32, i32, i32),
        rng: &mut Rng,
    ) {
        check_fragments_steps::<T>(shape, scheme, tiles, 2, rng);
    }
    let (g128, g64) = (Scheme::grouped(128), Scheme::grouped(64));
    // 16 steps: 8 rounds over 3 stages (two passes and two rounds left over)
    run::<I4>((3, 72, 1024), g128, (8, 3, 1), &mut rng);
    run::<U4>((9, 64, 512), Scheme::grouped(256), (16, 2, 2), &mut rng);
    run::<I8>((1, 64, 768), Scheme::per_channel(), (8, 2, 1), &mut rng);
    run::<F8E4M3>((17, 64, 512), g128, (32, 2, 1), &mut rng);
    run::<I2>((2, 130, 512), g128, (8, 2, 2), &mut rng);
    run::<F4E2M1>((4, 64, 512), g128, (8, 4, 1), &mut rng);
    run::<I4>((2, 64, 384), g64, (8, 2, 1), &mut rng);
    run::<Int<1>>((2, 64, 512), g128, (8, 2, 1), &mut rng);
}

/// Four K steps a stage (eight asked: four taken), each stage's operands one TMA box where their steps lie
/// at a constant stride (A's where K is a multiple of 64, W's words where a step is whole
/// 1024-byte patterns), the scales a copy per group: stages holding two, four and eight
/// groups or lying in one, rings that wrap, splits, zero points, K off 64 (A a copy a step),
/// 3-bit planes (words a copy a step); against the product of the f16 weights, and the
/// copies counted.
#[test]
fn interp_quant_matmul_on_fragments_with_steps_a_stage_copies_each_operand_once() {
    use tilus_kernels::quant::QuantMatmulFragments;
    let mut rng = Rng::new(seed());
    let (g128, g64) = (Scheme::grouped(128), Scheme::grouped(64));
    fn steps<T>(
        per: i32,
        (block_m, stages, splits): (i32, i32, i32),
        group: i32,
    ) -> QuantMatmulFragments<T> {
        QuantMatmulFragments::new(group, block_m)
            .with_stages(stages)
            .with_splits(splits)
            .with_stage_steps(per)
    }
    // 16 steps: 4 rounds of 4 over 3 stages (a pass and a round left over); two groups a
    // stage
    check_fragment_config(
        (3, 130, 1024),
        g128,
        &steps::<I4>(4, (8, 3, 1), 128),
        &mut rng,
    );
    // four groups of 64 a stage, four rounds in two stages, zero points
    check_fragment_config((5, 64, 1024), g64, &steps::<U4>(4, (8, 2, 1), 64), &mut rng);
    // a stage in one group of 512; K split in two
    check_fragment_config(
        (2, 72, 2048),
        Scheme::grouped(512),
        &steps::<I8>(4, (16, 2, 2), 512),
        &mut rng,
    );
    // per channel, FP8, 32 rows of A
    check_fragment_config(
        (20, 64, 512),
        Scheme::per_channel(),
        &steps::<F8E4M3>(4, (32, 2, 1), 0),
        &mut rng,
    );
    // K off 64 (1000: the last step's columns past K zeros; per channel, as K is no
    // multiple of a group): A a copy a step
    check_fragment_config(
        (4, 64, 1000),
        Scheme::per_channel(),
        &steps::<I2>(4, (8, 2, 1), 0),
        &mut rng,
    );
    // 3-bit planes: a step's words are not whole patterns, a copy a step
    check_fragment_config(
        (3, 72, 1024),
        g128,
        &steps::<Int<3>>(4, (8, 2, 1), 128),
        &mut rng,
    );
    check_fragment_config(
        (6, 64, 512),
        g64,
        &steps::<UInt<3>>(2, (8, 3, 2), 64),
        &mut rng,
    );

    // the copies: a stage's A and words one box each, a copy per group of scales
    let (m, n, k) = (3usize, 130usize, 1024usize);
    let (tiles_n, tiles_k) = (3u64, 16u64);
    // (steps asked, taken, group, A's copies and the words' a stage)
    for (asked, per, group, a_copies, word_copies) in [
        (1, 1, 128, 1, 1),
        (4, 4, 128, 1, 1),
        (4, 4, 64, 1, 1),
        (4, 4, 256, 1, 1),
        // (at most four steps a stage)
        (8, 4, 128, 1, 1),
    ] {
        let scheme = Scheme::grouped(group as usize);
        let (a, q) = inputs::<I4>(&mut rng, (m, n, k), scheme);
        let p = tilus_kernels::quant::prepack(&q).unwrap();
        let config = steps::<I4>(asked, (8, 2, 1), group);
        let mut c = vec![f16::NAN; m * n];
        let dims = (m as i32, n as i32, k as i32);
        let report = tilus::interpret(
            &config,
            (
                dims.0,
                dims.1,
                dims.2,
                &a[..],
                &p.words[..],
                &p.scales[..],
                &p.scales[..],
                &mut c[..],
            ),
        )
        .unwrap();
        let rounds = tiles_k / per as u64;
        let groups = (per as u64 * 64).div_ceil(group as u64);
        let per_stage = a_copies + word_copies + groups;
        let what = format!("{per} steps a stage, groups of {group}");
        assert_eq!(report.tma_copies, tiles_n * rounds * per_stage, "{what}");
        assert_eq!(report.mma_instructions, 4 * tiles_n * tiles_k, "{what}");
        assert_matches(&what, &c, reference(&a, &q, m), n);
    }
}

/// Sums scaled by group: the codes' exact values multiplied, two accumulators taking the
/// groups in turn, each scaled into the total once its products complete; against the
/// product of the exact dequantized weights. Rings that wrap over whole pairs of groups
/// (groups of one and of two rounds), passes of one with rounds left over, groups of two
/// steps a stage, per channel (the scale at the end), splits sharing whole groups, zero
/// points, every kind of code; the plans it cannot take refuse it.
#[test]
fn interp_quant_matmul_on_fragments_with_sums_scaled_by_group_matches_the_exact_product() {
    use tilus_kernels::quant::QuantMatmulFragments;
    let mut rng = Rng::new(seed());
    fn sums<T>(group: i32, (block_m, stages, splits): (i32, i32, i32)) -> QuantMatmulFragments<T> {
        QuantMatmulFragments::new(group, block_m)
            .with_stages(stages)
            .with_splits(splits)
            .with_scale_sums(true)
    }
    let (g128, g64) = (Scheme::grouped(128), Scheme::grouped(64));
    // 16 steps, groups of two rounds, 4 stages: four passes
    check_fragment_config((1, 72, 1024), g128, &sums::<I4>(128, (8, 4, 1)), &mut rng);
    // groups of one round, 2 stages, zero points
    check_fragment_config((5, 130, 512), g64, &sums::<U4>(64, (8, 2, 1)), &mut rng);
    // one pass of 3 stages and 2 rounds left over (groups of one round)
    check_fragment_config((3, 72, 320), g64, &sums::<Int<3>>(64, (8, 3, 1)), &mut rng);
    // one pass of 4 stages, groups of two rounds: the last group in the rounds left over
    check_fragment_config((2, 64, 384), g128, &sums::<I2>(128, (8, 4, 1)), &mut rng);
    let per_channel = Scheme::per_channel();
    check_fragment_config(
        (16, 64, 256),
        per_channel,
        &sums::<I8>(0, (16, 3, 1)),
        &mut rng,
    );
    check_fragment_config(
        (20, 64, 512),
        per_channel,
        &sums::<F8E4M3>(0, (32, 2, 2)),
        &mut rng,
    );
    // splits of 4 rounds each over groups of two
    check_fragment_config(
        (3, 64, 1024),
        g128,
        &sums::<F4E2M1>(128, (8, 4, 4)),
        &mut rng,
    );
    check_fragment_config(
        (17, 64, 512),
        g128,
        &sums::<UInt<3>>(128, (32, 4, 2)),
        &mut rng,
    );
    // two steps a stage: a group of 128 one round
    let two_steps = sums::<I4>(128, (8, 2, 1)).with_stage_steps(2);
    check_fragment_config((4, 72, 1024), g128, &two_steps, &mut rng);
    check_fragment_config((2, 64, 512), g64, &sums::<Int<1>>(64, (8, 4, 1)), &mut rng);
    // 3 stages over groups of two rounds, passed over more than once; mma.sync; two warp
    // groups
    let odd = sums::<I4>(128, (8, 3, 1));
    let sync = sums::<I4>(128, (8, 2, 1)).with_mma_sync(true);
    let wide = sums::<I4>(128, (8, 2, 1)).with_warp_groups(2);
    for (config, why) in [
        (odd, "whole pairs of groups"),
        (sync, "by WGMMA"),
        (wide, "one warp group"),
    ] {
        let e = tilus::trace(&config, &[1024]).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|e| e.contains(why)), "{e:?}");
    }
}

/// Products by `mma.sync` (each warp its 16 rows of W against A's tile through `ldmatrix`),
/// a stage refilled once every warp has read it: rings that wrap (8 steps in 3 stages, 5
/// in 2), one stage, splits, zero points, two steps a stage, 8 and 16 rows of A per block,
/// every kind of code the prepack takes; two warp groups and 32 rows of A refuse it.
#[test]
fn interp_quant_matmul_on_fragments_by_mma_sync_matches_the_product_of_the_f16_weights() {
    use tilus_kernels::quant::QuantMatmulFragments;
    let mut rng = Rng::new(seed());
    fn sync<T>(group: i32, (block_m, stages, splits): (i32, i32, i32)) -> QuantMatmulFragments<T> {
        QuantMatmulFragments::new(group, block_m)
            .with_stages(stages)
            .with_splits(splits)
            .with_mma_sync(true)
    }
    let (g128, g64) = (Scheme::grouped(128), Scheme::grouped(64));
    check_fragment_config((1, 72, 512), g64, &sync::<I4>(64, (8, 3, 1)), &mut rng);
    check_fragment_config((5, 130, 320), g64, &sync::<U4>(64, (8, 2, 1)), &mut rng);
    let per_channel = Scheme::per_channel();
    check_fragment_config(
        (16, 64, 256),
        per_channel,
        &sync::<I8>(0, (16, 1, 1)),
        &mut rng,
    );
    check_fragment_config(
        (3, 64, 256),
        g128,
        &sync::<F8E4M3>(128, (8, 2, 1)),
        &mut rng,
    );
    check_fragment_config(
        (20, 64, 192),
        g64,
        &sync::<F4E2M1>(64, (16, 2, 1)),
        &mut rng,
    );
    check_fragment_config((2, 64, 512), g128, &sync::<I2>(128, (8, 3, 2)), &mut rng);
    check_fragment_config((4, 72, 256), g64, &sync::<Int<1>>(64, (8, 3, 1)), &mut rng);
    check_fragment_config((3, 72, 320), g64, &sync::<Int<3>>(64, (8, 2, 1)), &mut rng);
    check_fragment_config((13, 130, 512), g128, &sync::<I4>(128, (16, 3, 2)), &mut rng);
    let two_steps = sync::<I4>(128, (8, 3, 1)).with_stage_steps(2);
    check_fragment_config((3, 72, 1024), g128, &two_steps, &mut rng);
    // one warp group only, 8 or 16 rows of A per block
    let wide = sync::<I4>(128, (8, 2, 1)).with_warp_groups(2);
    let tall = sync::<I4>(128, (32, 2, 1));
    for (config, why) in [(wide, "one warp group only"), (tall, "8 or 16 rows of A")] {
        let e = tilus::trace(&config, &[256]).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|e| e.contains(why)), "{e:?}");
    }
}

/// Two warp groups per block, each its own tile of W against the shared tile of A, the ring
/// filled by a producer warp: rings that wrap (5 steps in 2 stages, 8 in 3), a block whose
/// second tile lies wholly past N (its copies zeros, its stores none), one stage (each
/// product complete before the next), zero points, 256 and 64 rows of A per block.
#[test]
fn interp_quant_matmul_on_fragments_with_two_warp_groups_matches_the_product_of_the_f16_weights() {
    use tilus_kernels::quant::QuantMatmulFragments;
    let mut rng = Rng::new(seed());
    fn wide<T>(group: i32, (block_m, stages): (i32, i32)) -> QuantMatmulFragments<T> {
        QuantMatmulFragments::new(group, block_m)
            .with_stages(stages)
            .with_warp_groups(2)
    }
    let grouped = |g: usize| Scheme::grouped(g);
    check_fragment_config((1, 72, 320), grouped(64), &wide::<I4>(64, (8, 2)), &mut rng);
    check_fragment_config(
        (5, 130, 512),
        grouped(64),
        &wide::<U4>(64, (8, 3)),
        &mut rng,
    );
    check_fragment_config(
        (20, 64, 256),
        Scheme::per_channel(),
        &wide::<I8>(0, (16, 1)),
        &mut rng,
    );
    check_fragment_config(
        (3, 200, 128),
        grouped(128),
        &wide::<F8E4M3>(128, (8, 2)),
        &mut rng,
    );
    check_fragment_config(
        (300, 130, 256),
        grouped(128),
        &wide::<I4>(128, (256, 3)),
        &mut rng,
    );
    // what the host API takes past 128 rows of A where 256 per block leaves the machine
    // idle: 64 rows per block, three row blocks, the ring wrapping twice
    check_fragment_config(
        (150, 64, 768),
        grouped(128),
        &wide::<I4>(128, (64, 4)),
        &mut rng,
    );
    // 3-bit codes in two planes, each warp group its own planes' rows
    check_fragment_config(
        (70, 130, 384),
        grouped(128),
        &wide::<Int<3>>(128, (64, 2)),
        &mut rng,
    );
}

/// Each K step of each tile is copied once and multiplied once, however the steps are split
/// across blocks: A's tile, W's words and the scales by TMA (three copies), four WGMMAs of
/// k = 16, at three tiles of W, one or two of A's rows and eight steps shared by 1, 2 and 4
/// blocks; with two warp groups, A's tile once per step for both tiles of a block.
#[test]
fn interp_quant_matmul_on_fragments_copies_and_multiplies_each_step_once() {
    let mut rng = Rng::new(seed());
    let (m, n, k) = (9usize, 130usize, 512usize);
    let (a, q) = inputs::<I4>(&mut rng, (m, n, k), Scheme::grouped(128));
    let p = tilus_kernels::quant::prepack(&q).unwrap();
    let (tiles_n, tiles_k) = (3u64, 8u64);
    // (128 rows of A per block: one row block, still split)
    for (block_m, splits) in [(8, 1), (8, 2), (8, 4), (128, 2)] {
        let config = tilus_kernels::quant::QuantMatmulFragments::<I4>::new(128, block_m)
            .with_stages(3)
            .with_splits(splits);
        let tiles_m = m.div_ceil(block_m as usize) as u64;
        let mut c = vec![f16::NAN; m * n];
        let dims = (m as i32, n as i32, k as i32);
        let args = (dims.0, dims.1, dims.2, &a[..], &p.words[..], &p.scales[..]);
        let report = tilus::interpret(
            &config,
            (
                args.0,
                args.1,
                args.2,
                args.3,
                args.4,
                args.5,
                args.5,
                &mut c[..],
            ),
        )
        .unwrap();
        let steps = tiles_n * tiles_m * tiles_k;
        assert_eq!(
            report.blocks,
            tiles_n * tiles_m * splits as u64,
            "splits {splits}"
        );
        assert_eq!(report.tma_copies, 3 * steps, "splits {splits}");
        assert_eq!(report.mma_instructions, 4 * steps, "splits {splits}");
        assert_matches(&format!("splits {splits}"), &c, reference(&a, &q, m), n);
    }
    // two warp groups: a block per two tiles of W (the last block's second tile past N,
    // copied as zeros), A's tile once per step for both, each tile's words and scales; five
    // tiles of W (three blocks, where a block of 66 rows or 32 would make four or nine)
    let n = 300usize;
    let tiles_n = 5u64;
    let (a, q) = inputs::<I4>(&mut rng, (m, n, k), Scheme::grouped(128));
    let p = tilus_kernels::quant::prepack(&q).unwrap();
    for block_m in [8, 16] {
        let config = tilus_kernels::quant::QuantMatmulFragments::<I4>::new(128, block_m)
            .with_stages(3)
            .with_warp_groups(2);
        let tiles_m = m.div_ceil(block_m as usize) as u64;
        let mut c = vec![f16::NAN; m * n];
        let dims = (m as i32, n as i32, k as i32);
        let (w, s) = (&p.words[..], &p.scales[..]);
        let args = (dims.0, dims.1, dims.2, &a[..], w, s, s, &mut c[..]);
        let report = tilus::interpret(&config, args).unwrap();
        let blocks = tiles_n.div_ceil(2) * tiles_m;
        let what = format!("two warp groups, block_m {block_m}");
        assert_eq!(report.blocks, blocks, "{what}");
        assert_eq!(report.tma_copies, 5 * blocks * tiles_k, "{what}");
        assert_eq!(report.mma_instructions, 8 * blocks * tiles_k, "{what}");
        assert_matches(&what, &c, reference(&a, &q, m), n);
    }
}
