//! The FP8 GEMM through the whole compiler, NVRTC included (no GPU needed): each tile shape of
//! its search space compiles without spilling and without ptxas serializing its products in
//! e4m3 into bf16 (at every stage count it
//! searches for the default tile), and e5m2 into f16 and f32, within the shared memory a block
//! may take; its WGMMA is the FP8 one, 32 of K an instruction. The same with fine-grained
//! scales. Overlapped runs of four and eight steps compile the same way.

use half::{bf16, f16};
use tilus::lowp::{F8E4M3, F8E5M2};
use tilus::tune::Tunable;
use tilus_kernels::gemm::fp8::MatmulFp8;

fn compiles<S: tilus::Script>(config: &S, consts: &[i64]) -> String {
    let c = tilus::build(config, consts).unwrap_or_else(|e| panic!("{config:?}: {e}"));
    let what = format!("{config:?}: {:?}", c.report);
    assert_eq!(c.report.spill_stores, 0, "{what}");
    assert_eq!(c.report.serialized_wgmma, None, "{what}");
    assert_eq!(c.report.stack_frame, 0, "{what}");
    assert!(c.plan.smem_bytes <= 227 * 1024, "{what}");
    // ptxas serializes every WGMMA of a kernel where an instruction touches a product in
    // flight (C7514/C7515), an operand fence included: the promoted loops must not
    let dir = c.cache_dir.as_ref().expect("the tests' cache is writable");
    let log = std::fs::read_to_string(dir.join("ptxas.log")).unwrap_or_default();
    assert!(!log.contains("are serialized"), "{what}: {log}");
    c.source
}

#[test]
fn nvrtc_fp8_compiles_every_tile_without_spills() {
    tilus_bench::test_cache!();
    let space = MatmulFp8::<F8E4M3, bf16>::space().bindings();
    let mut seen = std::collections::HashSet::new();
    for b in space {
        let config = MatmulFp8::<F8E4M3, bf16>::from_binding(&b).unwrap();
        let t = &config.tile;
        // every tile at four stages, and the default tile at every stage count
        let default = (t.block_m, t.block_n) == (128, 128) && t.ping_pong == 0;
        if t.group_m != 8 || !(t.stages == 4 || default) {
            continue;
        }
        let src = compiles(&config, &[4096, 4096]);
        seen.insert((t.block_m, t.block_n, t.ping_pong, t.stages, config.overlap));
        assert!(src.contains(".e4m3.e4m3"), "{config:?}: an FP8 WGMMA");
        assert!(src.contains("k32"), "{config:?}: 32 of K an instruction");
    }
    assert_eq!(seen.len(), 9 + 2, "{seen:?}");
    // longer overlapped runs (four and eight steps) on the default tile, straight-line code
    // with a product in flight at each promotion
    // (and warp group 1 half a run behind)
    for (pairs, turns) in [(2, false), (4, false), (2, true)] {
        let config = MatmulFp8::<F8E4M3, bf16>::default()
            .with_overlap(pairs)
            .with_turns(turns);
        compiles(&config, &[4096, 4096]);
    }
    compiles(&MatmulFp8::<F8E5M2, f16>::default(), &[1000, 272]);
    compiles(&MatmulFp8::<F8E5M2, f32>::default(), &[520, 656]);
}

/// With fine-grained scales (each step's scales loaded beside the accumulator, the step's
/// product and the held result): every tile of the space at four stages, without spills.
#[test]
fn nvrtc_fp8_blocks_compile_every_tile_without_spills() {
    tilus_bench::test_cache!();
    use tilus_kernels::gemm::fp8::MatmulFp8Blocks;
    let mut tiles = 0;
    for b in MatmulFp8Blocks::<F8E4M3, bf16>::space().bindings() {
        let config = MatmulFp8Blocks::<F8E4M3, bf16>::from_binding(&b).unwrap();
        let t = &config.inner.tile;
        if t.group_m != 8 || t.stages != 4 {
            continue;
        }
        compiles(&config, &[4096, 4096]);
        tiles += 1;
    }
    assert_eq!(tiles, 9);
    compiles(&MatmulFp8Blocks::<F8E5M2, f32>::default(), &[520, 656]);
}
