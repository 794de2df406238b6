//! The generated CUDA, family by family: what the emitter writes for a construct, and that
//! NVRTC compiles it (without spills). No GPU is needed; the GPU runs of the same scripts are
//! in `runtime/gpu.rs`.

use crate::common::build;
use crate::common::scripts::{Branches, Epilogue, EpilogueBug, Groups, OneTile, TileCopy, FILE};
use crate::common::staged::{StagedMatmul, StagedSum};
use crate::common::views::{DotViews, ShapeViews};
use half::f16;

// ------------------------------------------------------------------------------------------
// memory and tma: TMA of f32 tiles with and without a swizzle, the generic shared load.
// ------------------------------------------------------------------------------------------

#[test]
fn tile_copy_compiles_with_the_generic_load_and_each_swizzle() {
    let src = tilus::emit(&TileCopy { rows: 16, cols: 32 }, &[]).unwrap();
    assert!(
        src.contains("tilus_ld_shared_u32("),
        "f32 tiles use the generic shared load"
    );
    assert!(
        !src.contains("ldmatrix.sync"),
        "ldmatrix is for 16-bit tiles"
    );
    assert!(
        src.contains("tilus_swizzle("),
        "128-byte rows take the 128B swizzle"
    );
    let wide = tilus::emit(&TileCopy { rows: 8, cols: 48 }, &[]).unwrap();
    assert!(
        !wide.contains("tilus_swizzle("),
        "192-byte rows are wider than any swizzle span"
    );
    for (rows, cols) in [(16, 32), (8, 48), (32, 16)] {
        let c = build(&TileCopy { rows, cols }, &[]);
        assert_eq!(c.report.spill_stores, 0);
    }
}

// ------------------------------------------------------------------------------------------
// staged tiles (`sa.at(s)`): TMA, loads and wgmma descriptors at the stage's address.
// ------------------------------------------------------------------------------------------

#[test]
fn stages_are_addressed_from_the_tiles_base_at_the_stage_stride() {
    let src = tilus::emit(&StagedSum::new(32, 32), &[]).unwrap();
    // [3, 32, 32] f32: 4096-byte stages; the copy and the load of stage `stage`
    assert!(
        src.contains("tilus_tma_load_2d((s0 + (u32)(stage) * 4096u), &g0_tmap,"),
        "{src}"
    );
    assert!(
        src.contains("(s0 + (u32)(stage) * 4096u) + tilus_swizzle("),
        "{src}"
    );
    // one tensor map for the stage's box, 128B swizzle
    assert_eq!(
        src.matches("__grid_constant__ CUtensorMap").count(),
        1,
        "{src}"
    );
    // padded stages: [4, 32] f32 stages of 512 bytes are 1024 bytes apart
    let padded = tilus::emit(&StagedSum::new(4, 32), &[]).unwrap();
    assert!(padded.contains("(s0 + (u32)(stage) * 1024u)"), "{padded}");
    for (rows, cols) in StagedSum::SHAPES {
        let c = build(&StagedSum::new(rows, cols), &[]);
        assert_eq!(c.report.spill_stores, 0, "[{rows}, {cols}]");
    }
}

#[test]
fn wgmma_descriptors_of_a_stage_start_at_the_stage() {
    let script = StagedMatmul {
        k_tiles: 4,
        refill_busy_stage: false,
    };
    let src = tilus::emit(&script, &[]).unwrap();
    // [2, 64, 64] f16 operands: 8192-byte stages
    assert!(
        src.contains("tilus_wgmma_desc((s0 + (u32)(stage) * 8192u), "),
        "{src}"
    );
    assert!(
        src.contains("tilus_wgmma_desc((s1 + (u32)(stage) * 8192u), "),
        "{src}"
    );
    let c = build(&script, &[]);
    assert_eq!(c.report.spill_stores, 0);
}

// ------------------------------------------------------------------------------------------
// shape: tiles seen with other shapes are copies of the same thread's registers.
// ------------------------------------------------------------------------------------------

#[test]
fn shape_views_copy_registers_and_compile() {
    let src = tilus::emit(&ShapeViews::<f32>::new(), &[]).unwrap();
    // a reshape copies every register in order; rows 2..6 are locals 2..6
    assert!(
        src.contains("for (int l = 0; l < 8; ++l) r1[l] = r0[l];"),
        "{src}"
    );
    assert!(
        src.contains("r2[0] = r0[2];") && src.contains("r2[3] = r0[5];"),
        "{src}"
    );
    let half = tilus::emit(&ShapeViews::<f16>::new(), &[]).unwrap();
    // 16-bit tiles: whole words where the pairs line up, halves otherwise
    assert!(
        half.contains("for (int w = 0; w < 4; ++w) r1[w] = r0[(2 * w) >> 1];"),
        "{half}"
    );
    assert!(half.contains("r2[0] = r0[(2) >> 1];"), "{half}");
    let c = build(&ShapeViews::<f32>::new(), &[]);
    assert_eq!(c.report.spill_stores, 0);
    let c = build(&ShapeViews::<f16>::new(), &[]);
    assert_eq!(c.report.spill_stores, 0);
}

#[test]
fn views_of_an_mma_accumulator_pick_its_registers_and_compile() {
    let src = tilus::emit(&DotViews, &[]).unwrap();
    // locals: [column tile 2, row half 2, column pair 2]; columns 8..16 are locals 4..8, rows
    // 8..16 locals 2, 3, 6, 7; the reshape keeps every register
    let lines = |a: &str, want: &[usize]| {
        want.iter()
            .enumerate()
            .all(|(l, s)| src.contains(&format!("{a}[{l}] = r3[{s}];")))
    };
    assert!(lines("r4", &[4, 5, 6, 7]), "{src}");
    assert!(lines("r5", &[2, 3, 6, 7]), "{src}");
    assert!(
        src.contains("for (int l = 0; l < 8; ++l) r6[l] = r3[l];"),
        "{src}"
    );
    let c = build(&DotViews, &[]);
    assert_eq!(c.report.spill_stores, 0);
}

// ------------------------------------------------------------------------------------------
// control and mbarrier: nested thread groups, plain arrivals, conditionals and while loops.
// ------------------------------------------------------------------------------------------

#[test]
fn nested_groups_compile() {
    let src = tilus::emit(&Groups, &[]).unwrap();
    assert!(src.contains("mbarrier.arrive.shared::cta.b64"));
    assert!(src.matches("if (").count() >= 4, "{src}");
    build(&Groups, &[]);
}

/// `if_else` and `while_` become C `if (..) { .. } else { .. }` and `while (..) { .. }`, each
/// after a comment with the script's file:line, and NVRTC compiles them.
#[test]
fn conditionals_and_while_loops_compile() {
    let src = tilus::emit(&Branches, &[]).unwrap();
    assert!(src.contains("if ((bx == 0)) {"), "{src}");
    assert!(src.contains("if (((bx % 2) == 1)) {"), "{src}");
    assert!(src.contains("} else {"), "{src}");
    assert!(src.contains("while ((p < ((bx + 1) * 5))) {"), "{src}");
    assert!(src.contains("p = (p * 2);"), "{src}");
    let short = FILE.rsplit('/').next().unwrap();
    for head in [
        ": if (bx == 0)",
        ": while (p < ((bx + 1) * 5))",
        ": if (0 < total)",
    ] {
        let comment = src
            .lines()
            .find(|l| l.trim_start().starts_with("// ") && l.ends_with(head))
            .unwrap_or_else(|| panic!("no comment ending in {head:?}:\n{src}"));
        assert!(comment.contains(&format!("{short}:")), "{comment}");
    }
    // the body of the while loop, the sync included, is inside its braces
    let at = src.find("while (").unwrap();
    let body = &src[at..at + src[at..].find("\n  }").unwrap()];
    assert!(body.contains("__syncthreads();"), "{body}");
    let c = build(&Branches, &[]);
    assert_eq!(c.report.spill_stores, 0);
}

/// The IR printer shows the branches and the loop as blocks, with the script's lines.
#[test]
fn the_printed_ir_shows_branches_and_while_loops() {
    let ir = tilus::ir::print_program(&tilus::trace(&Branches, &[]).unwrap());
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    let at = |head: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(head))
            .unwrap_or_else(|| panic!("no line starting with {head:?}:\n{ir}"))
    };
    let (if0, while0) = (
        at("if (bx == 0) {  # scripts.rs:"),
        at("while (p < ((bx + 1) * 5)) {  # scripts.rs:"),
    );
    assert!(lines[if0..while0].contains(&"} else {"), "{ir}");
    assert!(lines[while0 + 1].starts_with("p = (p * 2)"), "{ir}");
    assert!(
        lines[while0 + 3].starts_with("sync()") && lines[while0 + 4] == "}",
        "{ir}"
    );
    // an `if` without `else` has one block
    let last = at("if (0 < total) {");
    assert!(!lines[last..].contains(&"} else {"), "{ir}");
}

// ------------------------------------------------------------------------------------------
// wgmma: both operand sources, both accumulators.
// ------------------------------------------------------------------------------------------

fn compiles_to<C: tilus::lang::Element + std::fmt::Debug>(s: &OneTile<C>, needle: &str) {
    let c = build(s, &[]);
    assert_eq!(c.report.spill_stores, 0, "{s:?}");
    assert!(c.source.contains(needle), "{s:?}: no `{needle}`");
}

#[test]
fn both_operand_sources_and_both_accumulators_compile_to_wgmma() {
    for (m, n, k) in [(64, 128, 64), (128, 128, 32), (64, 256, 32), (64, 8, 16)] {
        compiles_to(
            &OneTile::<f32>::new(m, n, k),
            &format!("tilus_wgmma_m64n{n}k16_f16_ss("),
        );
        let rs = OneTile::<f32> {
            a_in_registers: true,
            ..OneTile::<f32>::new(m, n, k)
        };
        compiles_to(&rs, &format!("tilus_wgmma_m64n{n}k16_f16_rs("));
        compiles_to(
            &OneTile::<f16>::new(m, n, k),
            &format!("m64n{n}k16.f16.f16.f16"),
        );
    }
}

// ------------------------------------------------------------------------------------------
// tma stores: the bulk tensor copy, its commit and its wait.
// ------------------------------------------------------------------------------------------

#[test]
fn the_tma_store_emits_a_bulk_tensor_copy_its_commit_and_its_wait() {
    let src = tilus::emit(&Epilogue::default(), &[]).unwrap();
    for needle in [
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "tilus_tma_store_2d(&g_dst_tmap, s_out, 0, om);",
        "cp.async.bulk.commit_group",
        "tilus_bulk_wait_group<0>();",
        "fence.proxy.async.shared::cta",
        "const __grid_constant__ CUtensorMap g_dst_tmap",
    ] {
        assert!(src.contains(needle), "missing `{needle}` in\n{src}");
    }
    let bug = EpilogueBug::ReuseAfterReadWait;
    let read = tilus::emit(&Epilogue { bug }, &[]).unwrap();
    assert!(read.contains("tilus_bulk_wait_group_read<0>();"), "{read}");
}

#[test]
fn the_tma_store_epilogue_compiles_with_nvrtc() {
    for bug in [
        EpilogueBug::None,
        EpilogueBug::ReuseAfterReadWait,
        EpilogueBug::FreeBeforeWait,
    ] {
        let c = build(&Epilogue { bug }, &[]);
        assert_eq!(c.report.spill_stores, 0, "{bug:?}");
    }
}

// ------------------------------------------------------------------------------------------
// arithmetic: elementwise expressions, broadcasts and reductions in lanes and across warps.
// ------------------------------------------------------------------------------------------

#[test]
fn every_arithmetic_case_compiles_on_every_shape_without_spills() {
    use crate::common::arith::{ArithCase, ArithTile, SHAPES};
    for (rows, cols, warps) in SHAPES {
        for case in ArithCase::ALL {
            let s = ArithTile {
                rows,
                cols,
                warps,
                case,
            };
            let c = build(&s, &[]);
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
        }
    }
}

#[test]
fn a_reduction_across_warps_meets_in_shared_memory_and_one_in_a_warp_shuffles() {
    use crate::common::arith::{ArithCase, ArithTile};
    // [64, 32] over 4 warps: rows across warps, columns across lanes
    let rows = |case| ArithTile {
        rows: 64,
        cols: 32,
        warps: 4,
        case,
    };
    let in_lanes = tilus::emit(&rows(ArithCase::CenterRows), &[]).unwrap();
    assert!(
        in_lanes.contains("__shfl_xor_sync(0xffffffffu"),
        "{in_lanes}"
    );
    assert!(!in_lanes.contains("_scratch = tilus_smem +"), "{in_lanes}");
    let across = tilus::emit(&rows(ArithCase::ColumnExtremes), &[]).unwrap();
    assert!(across.contains("_scratch = tilus_smem +"), "{across}");
    assert!(across.contains("__syncthreads();"), "{across}");
}
