//! Flash attention forward through the whole compiler, NVRTC included (no GPU needed): every
//! head dimension, causal and not, f16 and bf16, with the tiles the host API launches and the
//! other keys-per-step and stage counts; no spills, `P` kept in registers (no conversion
//! through shared memory), the scores' exponentials in one instruction each.

use half::{bf16, f16};
use tilus::lowp::F8E4M3;
use tilus_kernels::attention::{AttentionElement, FlashForward, FlashForwardWs};

fn compiled<T: AttentionElement, S: tilus::Script>(config: &S) -> tilus::compile::CompiledProgram {
    let what = format!("{} {config:?}", T::NAME);
    let program = tilus::trace(config, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (program, plan) =
        tilus::passes::compile_program(program).unwrap_or_else(|e| panic!("{what}: {e}"));
    let c = tilus::compile::compile(&program, &plan).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(c.report.spill_stores, 0, "{what}: {:?}", c.report);
    assert_eq!(c.report.serialized_wgmma, None, "{what}: {:?}", c.report);
    // P stays in registers, and the rows' maxima and sums reduce by shuffles in the quads
    // that hold them
    assert!(
        !c.source.contains("through shared"),
        "{what}: a conversion through shared memory"
    );
    assert!(c.source.contains("ex2.approx.ftz.f32"), "{what}");
    c
}

#[test]
fn nvrtc_flash_forward_compiles_at_every_head_dimension_without_spills() {
    tilus_bench::test_cache!();
    for causal in [false, true] {
        for d in [64, 128, 256] {
            compiled::<f16, _>(&FlashForward::<f16>::new(d, causal));
            compiled::<bf16, _>(&FlashForward::<bf16>::new(d, causal));
        }
        compiled::<f16, _>(&FlashForward::<f16>::new(64, causal).with_tiles(64, 3));
        compiled::<f16, _>(&FlashForward::<f16>::new(128, causal).with_tiles(64, 4));
    }
}

/// The warp-specialized kernel: every head dimension, causal and not, f16 and bf16, and each
/// schedule; the producer gives up registers and the consumers take them (`setmaxnreg`).
#[test]
fn nvrtc_flash_forward_ws_compiles_at_every_head_dimension_without_spills() {
    tilus_bench::test_cache!();
    for causal in [false, true] {
        for d in [64, 128, 256] {
            let c = compiled::<f16, _>(&FlashForwardWs::<f16>::new(d, causal));
            assert!(
                c.source.contains("setmaxnreg.dec.sync.aligned.u32 40"),
                "{}",
                c.source
            );
            assert!(
                c.source.contains("setmaxnreg.inc.sync.aligned.u32 232"),
                "{}",
                c.source
            );
            compiled::<bf16, _>(&FlashForwardWs::<bf16>::new(d, causal));
            // the consumers' code once (below d = 256, where it fits without spills) is
            // about half the CUDA of one copy per warp group, which compiles too
            if d < 256 {
                let two = FlashForwardWs::<f16>::new(d, causal).with_one_copy(false);
                let two = compiled::<f16, _>(&two);
                let lines = |c: &tilus::compile::CompiledProgram| c.source.lines().count();
                assert!(
                    lines(&c) * 10 < lines(&two) * 6,
                    "d = {d}: {} lines with one copy, {} with two",
                    lines(&c),
                    lines(&two)
                );
            }
        }
        for (overlap, ping_pong) in [(false, false), (true, true), (false, true)] {
            let c = FlashForwardWs::<f16>::new(128, causal).with_schedule(overlap, ping_pong);
            compiled::<f16, _>(&c);
        }
        compiled::<f16, _>(&FlashForwardWs::<f16>::new(64, causal).with_tiles(128, 4));
        // the persistent grid: its item loop's counters cost a register past the 40 of the
        // producer warp group or the 232 of the consumers (4 bytes spilled at d = 128; the
        // bound keeps it from growing)
        let persistent = FlashForwardWs::<f16>::new(128, causal).with_persistent(true);
        let what = format!("{persistent:?}");
        let program = tilus::trace(&persistent, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
        let (program, plan) = tilus::passes::compile_program(program).unwrap();
        let c = tilus::compile::compile(&program, &plan).unwrap();
        assert!(c.report.spill_stores <= 8, "{what}: {:?}", c.report);
    }
}

/// The decode kernel, its merge and the append: every head dimension, f16 and bf16, a contiguous cache
/// and pages shorter than a step, as long, and longer; one to eight new tokens with groups
/// whose slots fill the 64 rows or not; the merge at each count of splits.
#[test]
fn nvrtc_decode_compiles_at_every_head_dimension_and_layout_without_spills() {
    use tilus_kernels::attention::decode::{DecodeAppend, DecodeAttention, DecodeMerge};
    tilus_bench::test_cache!();
    fn no_spills<S: tilus::Script>(config: &S) {
        let what = format!("{config:?}");
        let program = tilus::trace(config, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
        let (program, plan) = tilus::passes::compile_program(program).unwrap();
        let c = tilus::compile::compile(&program, &plan).unwrap();
        assert_eq!(c.report.spill_stores, 0, "{what}: {:?}", c.report);
        assert_eq!(c.report.serialized_wgmma, None, "{what}: {:?}", c.report);
    }
    // a cache of e4m3 codes, converted in shared memory; at head dimension 256 with pages
    // shorter than a step, the boxes' page lookups beside the accumulator and the next
    // step's scores in flight spill four words (bounded here)
    fn e4m3<T: AttentionElement>(config: &DecodeAttention<T, F8E4M3>) {
        if config.head_dim == 256 && config.box_rows != 0 && config.box_rows < config.block_kv {
            let what = format!("{config:?}");
            let program = tilus::trace(config, &[]).unwrap();
            let (program, plan) = tilus::passes::compile_program(program).unwrap();
            let c = tilus::compile::compile(&program, &plan).unwrap();
            assert!(c.report.spill_stores <= 16, "{what}: {:?}", c.report);
        } else {
            compiled::<T, _>(config);
        }
    }
    for paged in [false, true] {
        no_spills(&DecodeAppend::<bf16>::new(3, paged, 128));
        // into a cache of e4m3 codes: a head at a time, scaled
        for d in [64, 128, 256] {
            no_spills(&DecodeAppend::<f16, F8E4M3>::new(2, paged, d));
        }
    }
    for d in [64, 128, 256] {
        for page in [None, Some(16), Some(64), Some(256)] {
            compiled::<f16, _>(&DecodeAttention::<f16>::new(d, 1, 4, page));
            // a cache of e4m3 codes, converted in shared memory; at head dimension 256 with
            // pages shorter than a step, the boxes' page lookups beside the accumulator
            // spill a word (bounded here)
            e4m3(&DecodeAttention::<f16, F8E4M3>::new(d, 1, 4, page));
        }
        // a warp group of converters beside the products (the default up to 128, Q in
        // registers from global memory), contiguous and paged, then without it, then Q in
        // shared memory
        if d <= 128 {
            for page in [None, Some(16)] {
                let mut converters = DecodeAttention::<bf16, F8E4M3>::new(d, 1, 4, page);
                assert!(converters.converters, "the default here");
                no_spills(&converters);
                no_spills(&converters.clone().with_overlap(true));
                // one warp group converting and multiplying, Q from global memory
                converters.converters = false;
                e4m3(&converters);
            }
            let mut shared = DecodeAttention::<f16, F8E4M3>::new(d, 1, 4, Some(16));
            (shared.q_in_registers, shared.converters) = (false, false);
            e4m3(&shared);
        }
        e4m3(&DecodeAttention::<bf16, F8E4M3>::new(d, 2, 8, Some(32)));
        compiled::<bf16, _>(&DecodeAttention::<bf16>::new(d, 8, 8, Some(32)));
        compiled::<f16, _>(&DecodeAttention::<f16>::new(d, 3, 24, None));
        // one split: the output written in the element type by the kernel itself (below
        // head dimension 256, where the merge kernel takes every split)
        if d <= 128 {
            let direct = DecodeAttention::<bf16>::new(d, 3, 24, Some(16)).with_direct(true);
            compiled::<bf16, _>(&direct);
            let direct = DecodeAttention::<f16, F8E4M3>::new(d, 1, 8, None).with_direct(true);
            compiled::<f16, _>(&direct);
            // the steps overlapped
            let overlapped = DecodeAttention::<f16>::new(d, 1, 4, Some(64)).with_overlap(true);
            compiled::<f16, _>(&overlapped);
            // Q straight from global memory into registers, three stages where its tile was
            for (group, stages) in [(4, 3), (16, 2)] {
                let mut q_regs = DecodeAttention::<bf16>::new(d, 1, group, None).with_merge(8);
                (q_regs.q_in_registers, q_regs.stages) = (true, stages);
                compiled::<bf16, _>(&q_regs);
            }
            // several splits merged by the block that takes the last ticket, up to the
            // most splits a launch has (each warp holds a row's splits)
            for splits in [2, 16, 32] {
                let merged = DecodeAttention::<f16>::new(d, 1, 4, None).with_merge(splits);
                compiled::<f16, _>(&merged);
            }
            let merged = DecodeAttention::<bf16>::new(d, 8, 24, Some(32)).with_merge(5);
            compiled::<bf16, _>(&merged);
        }
        for splits in [1, 2, 32] {
            no_spills(&DecodeMerge::<f16>::new(d, splits));
        }
    }
}

/// A page shorter than a step: each step's values arrive in boxes of 16 rows into a
/// `[64, 128]` stage stored in two column blocks of 64 columns, and the second block of rows
/// 16.. starts a whole block (64 rows of 128 bytes) after the first, not 16 rows after it
/// (the GPU read half of each page's values from the wrong place when it did).
#[test]
fn decode_boxes_of_a_page_land_in_both_column_blocks_of_the_stage() {
    let c = tilus_kernels::attention::decode::DecodeAttention::<f16>::new(128, 1, 4, Some(16));
    let src = tilus::emit(&c, &[]).unwrap();
    let loads: Vec<&str> = src
        .lines()
        .filter(|l| l.contains("tilus_tma_load_2d(("))
        .collect();
    assert!(
        loads.iter().any(|l| l.contains(" + 2048u) + 8192u,")),
        "{}",
        loads.join("\n")
    );
    assert!(!loads.iter().any(|l| l.contains(" + 2048u) + 2048u,")));
}

/// The merge of a split decode reads the slots the decode kernel just wrote: it waits for the
/// grid before it first (and may be launched as its programmatic dependent); the decode
/// kernel does not wait, and lets its dependent be scheduled from its blocks' start.
#[test]
fn the_decode_merge_waits_for_the_decode_kernel_first() {
    use tilus_kernels::attention::decode::{DecodeAttention, DecodeMerge};
    tilus_bench::test_cache!();
    let merge = tilus::build(&DecodeMerge::<f16>::new(128, 16), &[]).unwrap();
    assert!(merge.plan.waits_for_prior_grid);
    let first = tilus_bench::testing::first_statement(&merge.source);
    assert_eq!(
        first,
        Some(r#"asm volatile("griddepcontrol.wait;" ::: "memory");"#)
    );
    let decode = tilus::build(&DecodeAttention::<f16>::new(128, 1, 4, None), &[]).unwrap();
    assert!(!decode.plan.waits_for_prior_grid);
    // the merge is not scheduled early beside the decode kernel's blocks (slower, perf.md)
    assert!(!decode.source.contains("launch_dependents"));
    assert!(!merge.source.contains("launch_dependents"));
}
