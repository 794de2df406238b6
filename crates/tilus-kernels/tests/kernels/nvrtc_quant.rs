//! The quantized matmul through the whole compiler, NVRTC included (no GPU needed), at the
//! benchmark's K (8192, 4096) for every kind of weight type and group: it compiles without
//! spills, reads its weights in 16-byte vectors of packed codes (byte by byte for 3- and 6-bit
//! types, whose vectors are not a power of two bytes), and dequantizes with the type's
//! conversion.

use tilus::lowp::*;
use tilus::prelude::Element;
use tilus_kernels::quant::QuantMatmul;

/// `script` traced at K = `k`, planned and compiled by NVRTC, without spills (`what` names it
/// in failures).
fn compiled<S: tilus::Script>(script: &S, k: i64, what: &str) -> tilus::compile::CompiledProgram {
    let program = tilus::trace(script, &[k]).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (program, plan) =
        tilus::passes::compile_program(program).unwrap_or_else(|e| panic!("{what}: {e}"));
    let c = tilus::compile::compile(&program, &plan).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(c.report.spill_stores, 0, "{what}: {:?}", c.report);
    assert_eq!(c.report.serialized_wgmma, None, "{what}: {:?}", c.report);
    c
}

/// The few-rows kernel for type `T` and `group` at K = `k`.
fn build<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    group: i32,
    k: i64,
) -> tilus::compile::CompiledProgram {
    let what = format!("{} group {group} k {k}", <T as LowpElement>::DTYPE);
    compiled(&QuantMatmul::<T>::new(group), k, &what)
}

#[test]
fn nvrtc_quant_matmul_compiles_for_every_kind_of_weight() {
    tilus_bench::test_cache!();
    let c = build::<I4>(128, 8192);
    assert!(
        c.source.contains("tilus_vec<u32, "),
        "i4 weights in vectors\n{}",
        c.source
    );
    build::<U4>(128, 8192);
    build::<I8>(128, 4096);
    let c = build::<F8E4M3>(128, 8192);
    assert!(
        c.source.contains("tilus_f16x2_from_f8e4m3x2("),
        "{}",
        c.source
    );
    build::<F8E5M2>(0, 4096);
    build::<F6E3M2>(128, 8192);
    build::<F4E2M1>(32, 4096);
    build::<Int<3>>(64, 8192);
    build::<I2>(128, 4096);
}

#[test]
fn nvrtc_quant_matmul_on_tensor_cores_compiles_for_every_kind_of_weight() {
    tilus_bench::test_cache!();
    fn tc<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        group: i32,
        k: i64,
        block_m: i32,
    ) -> String {
        let what = format!("tc {} group {group} k {k}", <T as LowpElement>::DTYPE);
        compiled(
            &tilus_kernels::quant::QuantMatmulTc::<T>::new(group).with_block_m(block_m),
            k,
            &what,
        )
        .source
    }
    let s = tc::<I4>(128, 8192, 128);
    assert!(
        s.contains("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
        "{s}"
    );
    tc::<U4>(128, 4096, 16);
    tc::<F8E4M3>(0, 4096, 32);
    tc::<I2>(64, 4096, 64);
    tc::<F6E3M2>(128, 8192, 128);
}

#[test]
fn nvrtc_quant_matmul_on_the_ring_compiles_for_every_kind_of_weight() {
    tilus_bench::test_cache!();
    fn ring<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        group: i32,
        k: i64,
        (block_m, block_n): (i32, i32),
    ) -> String {
        let what = format!("ring {} group {group} k {k}", <T as LowpElement>::DTYPE);
        compiled(
            &tilus_kernels::quant::QuantMatmulRing::<T>::new(group).with_tiles(block_m, block_n),
            k,
            &what,
        )
        .source
    }
    let s = ring::<I4>(128, 8192, (256, 128));
    assert!(
        s.contains("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
        "{s}"
    );
    // int4's codes come by TMA into the producer's own ring; u4's (zero points) by its loads
    assert!(
        s.contains("= global_view<u8>(w_"),
        "the codes' byte view\n{s}"
    );
    assert!(
        s.contains("shared_tensor<u8>[4, 128, 32]"),
        "the codes' ring\n{s}"
    );
    let u = ring::<U4>(128, 4096, (128, 128));
    assert!(!u.contains("shared_tensor<u8>"), "{u}");
    ring::<I8>(64, 4096, (256, 128));
    ring::<F8E4M3>(0, 8192, (256, 128));
    ring::<F6E3M2>(128, 8192, (256, 128));
    ring::<Int<3>>(128, 4096, (256, 64));
    // a whole stage's loads in flight
    let mut s = tilus_kernels::quant::QuantMatmulRing::<I4>::new(128);
    s.in_flight = 4;
    compiled(&s, 8192, "ring i4 in_flight 4");
}

#[test]
fn nvrtc_quant_matmul_on_prepacked_fragments_compiles_for_every_prepackable_weight() {
    use tilus_kernels::quant::QuantMatmulFragments;
    tilus_bench::test_cache!();
    fn frag<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        group: i32,
        k: i64,
        block_m: i32,
    ) -> String {
        let what = format!(
            "fragments {} group {group} k {k}",
            <T as LowpElement>::DTYPE
        );
        compiled(
            &tilus_kernels::quant::QuantMatmulFragments::<T>::new(group, block_m),
            k,
            &what,
        )
        .source
    }
    let s = frag::<I4>(128, 8192, 8);
    // the words by TMA into the stages (with A's tiles), the codes to f16 pairs by the
    // exponent trick and scaled a pair at a time, the product on the tensor cores with the
    // dequantized weights as the register operand
    assert!(s.contains("tma.global_to_shared(g1 -> s"), "{s}");
    // each thread's run of four words in one 16-byte shared load
    assert!(s.contains("tilus_ld_shared_v4("), "{s}");
    assert!(!s.contains("tilus_ld_shared_u32("), "{s}");
    assert!(s.contains("tilus_f16x2_from_field("), "{s}");
    assert!(s.contains("mul.rn.f16x2"), "{s}");
    // the step before's product completes while the step is dequantized: one in flight
    assert!(s.contains("tilus_wgmma_wait_group<1>();"), "{s}");
    // the fragment's first pair is codes 0 and 4 of the thread's first word (the prepack's
    // order): one lop3 for both (no shift), then the pair's one row scale on both halves;
    // the second pair (codes 1 and 5, bits 4 and 20) stays 4 bits up, scaled down by 1/16
    // in the fused multiply-add (no shift either); the third takes the word shifted a byte
    let first = "tilus_mul_f16x2(tilus_f16x2_from_field((u32)(r1[0]), 0xf000fu, 0x64086408u, 0x3c003c00u, 0xe408e408u), ((u32)(u16)(r4[(0) >> 1] >> (((0) & 1) * 16)) * 0x10001u))";
    assert!(s.contains(first), "{first}\n{s}");
    let second =
        "tilus_f16x2_from_field((u32)(r1[0]), 0xf000f0u, 0x64806480u, 0x2c002c00u, 0xd480d480u)";
    assert!(s.contains(second), "{second}\n{s}");
    let third = "tilus_f16x2_from_field(((u32)(r1[0]) >> 8), 0xf000fu, ";
    assert!(s.contains(third), "{third}\n{s}");
    assert!(
        !s.contains("from_field(((u32)(r1[0]) >> 4)"),
        "no shift by half a byte\n{s}"
    );
    assert!(!s.contains("__fmul_rn("), "no f32 products\n{s}");
    assert!(
        s.contains("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"),
        "{s}"
    );
    assert!(!s.contains("tilus_convert"), "no layout conversion\n{s}");
    // zero points subtracted in f16 pairs (whole numbers: exact), no f32 form
    let u4 = frag::<U4>(128, 4096, 16);
    assert!(u4.contains("tilus_mul_f16x2(tilus_sub_f16x2("), "{u4}");
    assert!(!u4.contains("__fsub_rn("), "{u4}");
    frag::<I8>(64, 8192, 64);
    frag::<F8E4M3>(0, 8192, 8);
    // f4e2m1: each pair's sign and exponent-mantissa bits placed as f16 fields (one shift
    // and mask each), times 2^14 (exact), then scaled
    let f4 = frag::<F4E2M1>(128, 4096, 128);
    let placed = "tilus_mul_f16x2(tilus_mul_f16x2(((((u32)(r1[0]) << 12) & 0x80008000u) | (((u32)(r1[0]) << 9) & 0xe000e00u)), 0x74007400u), ";
    assert!(f4.contains(placed), "{placed}\n{f4}");
    assert!(
        !f4.contains("tilus_from_f4e2m1("),
        "no per-code decoder\n{f4}"
    );
    // 2-bit codes: each pair from one word by one lop3 too, the codes of a byte without a
    // shift (those 2 bits up scaled by 1/4)
    let s2 = frag::<I2>(128, 4096, 32);
    assert!(
        s2.contains("from_field((u32)(r1[0]), 0x30003u, 0x64026402u, "),
        "{s2}"
    );
    assert!(
        s2.contains("from_field((u32)(r1[0]), 0xc000cu, 0x64086408u, 0x34003400u, "),
        "{s2}"
    );
    // 3-bit codes from their two planes, each pair by its field conversion, the top bit's
    // times 4 taken into its conversion's constants (scale 4, less 4096), then taken from the
    // low bits' in f16 pairs: no product of its own, no f32 form
    let s3 = frag::<Int<3>>(128, 4096, 16);
    assert!(
        s3.contains("from_field((u32)(r1[0]), 0x30003u, 0x64006400u, "),
        "{s3}"
    );
    assert!(
        s3.contains(", 0x10001u, 0x64006400u, 0x44004400u, 0xec00ec00u)"),
        "{s3}"
    );
    assert!(!s3.contains(", 0x44004400u)"), "no product by 4\n{s3}");
    assert!(s3.contains("tilus_sub_f16x2("), "{s3}");
    assert!(!s3.contains("__fmul_rn("), "{s3}");
    frag::<UInt<3>>(128, 4096, 64);
    // products by mma.sync: A's tile through ldmatrix, no WGMMA and no wait for one, the
    // same dequantized registers (no layout conversion); 8 and 16 rows of A, int8 and int3
    for (bm, bits) in [(8, 4), (16, 4), (16, 8), (8, 3)] {
        let what = format!("fragments by mma.sync, {bits} bits, block_m {bm}");
        let src = match bits {
            4 => compiled(
                &QuantMatmulFragments::<I4>::new(128, bm).with_mma_sync(true),
                8192,
                &what,
            ),
            8 => compiled(
                &QuantMatmulFragments::<I8>::new(128, bm).with_mma_sync(true),
                8192,
                &what,
            ),
            _ => compiled(
                &QuantMatmulFragments::<Int<3>>::new(128, bm).with_mma_sync(true),
                8192,
                &what,
            ),
        }
        .source;
        assert!(
            src.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            "{src}"
        );
        assert!(src.contains("ldmatrix.sync.aligned.m8n8"), "{src}");
        assert!(!src.contains("wgmma.mma_async"), "{src}");
        assert!(!src.contains("tilus_wgmma_wait_group"), "{src}");
        assert!(
            !src.contains("tilus_convert"),
            "no layout conversion\n{src}"
        );
    }
    // 256 rows of A per block: a [64, 256] f32 accumulator, without spills
    frag::<I4>(128, 8192, 256);
    frag::<I8>(128, 8192, 256);
}

/// The fragment kernel `config` built at K = 8192 without spills and without ptxas
/// serializing its products (its C751x notes); its source.
fn kept_in_flight<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    config: tilus_kernels::quant::QuantMatmulFragments<T>,
) -> String {
    let what = format!("{config:?} {}", <T as LowpElement>::DTYPE);
    let c = tilus::build(&config, &[8192]).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(c.report.spill_stores, 0, "{what}: {:?}", c.report);
    assert_eq!(c.report.serialized_wgmma, None, "{what}: {:?}", c.report);
    let dir = c.cache_dir.as_ref().expect("the tests' cache is writable");
    let log = std::fs::read_to_string(dir.join("ptxas.log")).unwrap_or_default();
    assert!(!log.contains("are serialized"), "{what}: {log}");
    c.source
}

/// Sums scaled by group: no f16 pair multiplied by a scale (the codes' values go to the
/// products as they are, by the pair conversions), two accumulators without spills and
/// without ptxas serializing the products; groups of 128 at one and two steps a stage, per
/// channel, 3-bit planes and 64 rows of A.
#[test]
fn nvrtc_quant_matmul_on_fragments_with_sums_scaled_by_group_compiles_without_spills() {
    use tilus_kernels::quant::QuantMatmulFragments;
    tilus_bench::test_cache!();
    // (no accumulator read while a product is in flight: ptxas would serialize every WGMMA
    // of the kernel, C7514)
    fn sums<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        config: QuantMatmulFragments<T>,
    ) -> String {
        kept_in_flight(config.with_scale_sums(true))
    }
    let plain = compiled(
        &QuantMatmulFragments::<I4>::new(128, 8).with_stages(8),
        8192,
        "int4, scaled pairs",
    )
    .source;
    assert!(plain.contains("tilus_mul_f16x2("), "{plain}");
    for src in [
        sums(QuantMatmulFragments::<I4>::new(128, 8).with_stages(8)),
        sums(
            QuantMatmulFragments::<I2>::new(128, 8)
                .with_stages(4)
                .with_stage_steps(2),
        ),
        sums(QuantMatmulFragments::<I8>::new(0, 16).with_stages(4)),
        sums(QuantMatmulFragments::<Int<3>>::new(128, 8).with_stages(8)),
        sums(QuantMatmulFragments::<I4>::new(128, 64).with_stages(4)),
        sums(QuantMatmulFragments::<UInt<3>>::new(128, 8).with_stages(8)),
    ] {
        assert!(!src.contains("tilus_mul_f16x2("), "{src}");
        assert!(src.contains("tilus_f16x2_from_field("), "{src}");
        assert!(src.contains("wgmma.mma_async"), "{src}");
    }
    // groups of two rounds: the second round of a group keeps its product in flight, the
    // first waits for every product
    let int4 = sums(QuantMatmulFragments::<I4>::new(128, 8).with_stages(8));
    assert!(int4.contains("tilus_wgmma_wait_group<1>();"), "{int4}");
    assert!(int4.contains("tilus_wgmma_wait_group<0>();"), "{int4}");
    // with zero points the product by one stays (it is not folded past the subtraction):
    // pairs all the same, none converted one by one
    let u4 = sums(QuantMatmulFragments::<U4>::new(128, 8).with_stages(8));
    assert!(u4.contains("tilus_f16x2_from_field("), "{u4}");
    // (the helper's definition and the output's conversion; one by one, 128 a step)
    assert!(u4.matches("tilus_cvt_f16(").count() <= 2, "{u4}");
}

/// Two warp groups, each a [64, 256] accumulator and its own words, with a producer warp:
/// without spills, the producer's copies of both tiles and a stage given back per step.
#[test]
fn nvrtc_quant_matmul_on_fragments_with_two_warp_groups_compiles_without_spills() {
    tilus_bench::test_cache!();
    fn wide<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        group: i32,
        block_m: i32,
    ) -> String {
        let what = format!("wide fragments {} group {group}", <T as LowpElement>::DTYPE);
        let config = tilus_kernels::quant::QuantMatmulFragments::<T>::new(group, block_m)
            .with_warp_groups(2);
        compiled(&config, 8192, &what).source
    }
    let s = wide::<I4>(128, 256);
    assert!(s.contains("mbarrier_arrive"), "{s}");
    assert!(s.contains("tilus_wgmma_wait_group<1>();"), "{s}");
    assert!(
        s.contains("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"),
        "{s}"
    );
    wide::<I8>(128, 256);
    wide::<U4>(128, 128);
    wide::<F8E4M3>(0, 64);
}

/// Every `stride`-th point of `S`'s tuning space through NVRTC at K = `k`: the sample takes
/// every value of every axis (checked), and each point compiles without spills within the
/// shared memory a block may take, or is refused before any code is emitted for a reason
/// `refused` accepts. Returns the points built.
fn covering_sample<S: tilus::tune::Tunable + tilus::Script>(
    stride: usize,
    k: i64,
    refused: impl Fn(&S, &str) -> bool,
) -> usize {
    use std::collections::{BTreeMap, BTreeSet};
    let space = S::space().bindings();
    let values = |points: &mut dyn Iterator<Item = &tilus::tune::Binding>| {
        let mut seen: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
        for b in points {
            for (axis, v) in &b.0 {
                seen.entry(axis.clone()).or_default().insert(*v);
            }
        }
        seen
    };
    assert_eq!(
        values(&mut space.iter().step_by(stride)),
        values(&mut space.iter()),
        "the sample misses a value of an axis"
    );
    let mut built = 0;
    for b in space.iter().step_by(stride) {
        let config = S::from_binding(b).unwrap();
        match tilus::build(&config, &[k]) {
            Ok(c) => {
                let what = format!("{config:?}: {:?}", c.report);
                assert_eq!(c.report.spill_stores, 0, "{what}");
                assert_eq!(c.report.serialized_wgmma, None, "{what}");
                assert!(c.plan.smem_bytes <= 227 * 1024, "{what}");
                built += 1;
            }
            Err(e) => assert!(refused(&config, &e.to_string()), "{config:?}: {e}"),
        }
    }
    built
}

/// Covering samples of the quantized kernels' tuning spaces (int4, groups of 128, K = 8192),
/// each point compiled or refused for its reason: the fragment kernel's every seventh
/// point (`mma_sync` past 16 rows of A or with two warp groups is refused, `scale_sums` with
/// two warp groups, with `mma_sync`, past 64 rows of A (32 at two steps a stage), where a
/// group is not whole stages (four steps a stage) or over stages that are not whole pairs
/// of groups, and a
/// block past the shared memory or registers it may have), the few-rows kernel's and the
/// ring's every fifth.
#[test]
fn nvrtc_quant_spaces_compile_on_covering_samples() {
    use tilus_kernels::quant::{QuantMatmulFragments, QuantMatmulRing};
    tilus_bench::test_cache!();
    let built = covering_sample::<QuantMatmulFragments<I4>>(7, 8192, |c, e| {
        let why = if c.mma_sync && c.block_m > 16 {
            "8 or 16 rows of A"
        } else if c.mma_sync && c.warp_groups == 2 {
            "one warp group only"
        } else if c.scale_sums && c.warp_groups == 2 {
            "scale_sums takes one warp group"
        } else if c.scale_sums && c.mma_sync {
            "by WGMMA"
        } else if c.scale_sums && e.contains("three accumulators") {
            "rows of A per block"
        } else if c.scale_sums && e.contains("not whole rounds") {
            "not whole rounds"
        } else if c.scale_sums && e.contains("scale_sums") {
            "whole pairs of groups"
        } else {
            "more than the"
        };
        e.contains(why)
    });
    assert!(built >= 10, "{built} fragment kernels built");
    let built = covering_sample::<QuantMatmul<I4>>(5, 8192, |_, _| false);
    assert!(built >= 10, "{built} few-rows kernels built");
    let built = covering_sample::<QuantMatmulRing<I4>>(5, 8192, |_, e| e.contains("more than the"));
    assert!(built >= 3, "{built} ring kernels built");
}

/// Four steps a stage: A's and W's steps one three-dimensional TMA box each, no spills, and
/// ptxas keeps the products in flight (each step's product a commit group of its own, its
/// operand pinned before the fence); so do odd counts of stages and the host's counts.
#[test]
fn nvrtc_quant_matmul_on_fragments_with_steps_a_stage_keeps_products_in_flight() {
    use tilus_kernels::quant::QuantMatmulFragments;
    tilus_bench::test_cache!();
    let four = kept_in_flight(
        QuantMatmulFragments::<I4>::new(128, 8)
            .with_stages(2)
            .with_stage_steps(4),
    );
    assert!(four.matches("tilus_tma_load_3d(").count() >= 2, "{four}");
    assert!(four.contains("tilus_wgmma_wait_group<4>();"), "{four}");
    kept_in_flight(
        QuantMatmulFragments::<I2>::new(128, 16)
            .with_stages(4)
            .with_stage_steps(2),
    );
    // over an odd count of stages (the loop's body two passes)
    for stages in [3, 5] {
        kept_in_flight(QuantMatmulFragments::<I4>::new(128, 8).with_stages(stages));
    }
    kept_in_flight(
        QuantMatmulFragments::<I2>::new(128, 8)
            .with_stages(3)
            .with_stage_steps(2),
    );
    for bits_bm in [(8, 8), (4, 16), (2, 8)] {
        let stages = tilus_kernels::quant::fragment_stages(bits_bm.0, bits_bm.1);
        match bits_bm.0 {
            8 => {
                kept_in_flight(QuantMatmulFragments::<I8>::new(128, bits_bm.1).with_stages(stages))
            }
            4 => {
                kept_in_flight(QuantMatmulFragments::<I4>::new(128, bits_bm.1).with_stages(stages))
            }
            _ => {
                kept_in_flight(QuantMatmulFragments::<I2>::new(128, bits_bm.1).with_stages(stages))
            }
        };
    }
}
