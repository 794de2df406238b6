//! The generated CUDA, family by family: what the emitter writes for a construct, and that
//! NVRTC compiles it (without spills). No GPU is needed; the GPU runs of the same scripts are
//! in `runtime/gpu.rs`.

use crate::common::build;
use crate::common::scripts::{
    Branches, Epilogue, EpilogueBug, GroupCopies, Groups, OneTile, Printing, TileCopy, FILE,
};
use crate::common::staged::{StagedMatmul, StagedSum};
use crate::common::views::{ColumnSlice, DotViews, LoadedViews, ShapeViews};
use half::f16;
use tilus::prelude::PtrMut;

// ------------------------------------------------------------------------------------------
// memory and tma: TMA of f32 tiles with and without a swizzle, the generic shared load.
// ------------------------------------------------------------------------------------------

#[test]
fn tile_copy_compiles_with_the_generic_load_and_each_swizzle() {
    let src = tilus::emit(&TileCopy { rows: 16, cols: 32 }, &[]).unwrap();
    // each thread's four consecutive f32 of a row: one aligned 16-byte chunk, which the
    // swizzle keeps whole, in one load
    assert!(
        src.contains("const uint4 v = tilus_ld_shared_v4(s0 + tilus_swizzle("),
        "f32 tiles held in runs of four take 16-byte shared loads\n{src}"
    );
    assert!(!src.contains("tilus_ld_shared_u32("), "{src}");
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
fn views_of_a_vectorized_tile_compile_without_spills() {
    let src = tilus::emit(&LoadedViews, &[]).unwrap();
    // the load's vectors of 4 stay whole: rows 8..16 are locals 4..8 of every thread
    assert!(
        src.contains("r1[0] = r0[4];") && src.contains("r1[3] = r0[7];"),
        "{src}"
    );
    assert!(
        src.contains("for (int l = 0; l < 8; ++l) r3[l] = r0[l];"),
        "{src}"
    );
    let c = build(&LoadedViews, &[]);
    assert_eq!(c.report.spill_stores, 0);
}

#[test]
fn a_column_slice_picks_the_blocks_it_asked_for_and_compiles() {
    let src = tilus::emit(&ColumnSlice, &[]).unwrap();
    // locals: [column block 4, row half 2]: columns 8..24 are blocks 1 and 2, locals 2..6
    assert!(
        src.contains("locals=[d1:4, d0:2])") && src.contains("r1[0] = r0[2];"),
        "{src}"
    );
    assert!(src.contains("r1[3] = r0[5];"), "{src}");
    let c = build(&ColumnSlice, &[]);
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

/// `thread_groups` emits its body once, the group's index and the thread's place in its
/// group computed from the thread index, where two `warp_group`s emit it twice; both compile.
#[test]
fn copies_of_a_group_emit_their_body_once() {
    let stores = |copies| {
        let script = GroupCopies {
            copies,
            one_stage: false,
        };
        let src = tilus::emit(&script, &[]).unwrap();
        let c = build(&script, &[]);
        assert_eq!(c.report.spill_stores, 0);
        (src.matches("tilus_st_shared_u32((s0").count(), src)
    };
    let ((once, src), (twice, _)) = (stores(true), stores(false));
    assert!(once == 1 && twice == 2, "{once} {twice}\n{src}");
    assert!(src.contains("if (tilus_tid < 256) {"), "{src}");
    // the index read from lane 0, so that the compiler knows it is the same across a warp
    assert!(
        src.contains("const i32 group0 = __shfl_sync(0xffffffffu, tilus_tid / 128, 0);"),
        "{src}"
    );
    assert!(src.contains(" = tilus_tid % 128;"), "{src}");
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
// wgmma: both operand sources, both accumulators, windows of an accumulator.
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

#[test]
fn a_window_of_the_accumulator_is_its_registers_from_the_windows_first_column() {
    use crate::common::scripts::windows::WgmmaWindows;
    let c = build(
        &WgmmaWindows {
            early: false,
            swapped: false,
        },
        &[],
    );
    assert_eq!(c.report.spill_stores, 0);
    // columns 64.. of a [64, 128] accumulator: its local registers from 32 on; the
    // overwriting product's first K step with scale-d 0
    assert!(
        c.source
            .contains("tilus_wgmma_m64n64k16_f16_ss(&r0[mi * 64 + 32 + chunk * 32]"),
        "{}",
        c.source
    );
    assert!(c.source.contains("ki == 0 ? 0 : 1);"), "{}", c.source);
}

/// MN-major operands: the instruction's transpose bits set for them, the descriptors' leading
/// byte offset one column block (8 KiB: 64 rows of 128 bytes), one TMA box per column block
/// (the second 64 columns on), three-dimensional copies that leave the batch out; NVRTC
/// compiles every order.
#[test]
fn mn_major_operands_set_the_transpose_bits_and_copy_by_column_blocks() {
    use crate::common::scripts::orders::OperandOrders;
    for (mn_a, mn_b) in [(false, false), (true, false), (false, true), (true, true)] {
        let c = build(&OperandOrders { mn_a, mn_b }, &[]);
        assert_eq!(c.report.spill_stores, 0);
        let bits = format!("p, 1, 1, {}, {};", mn_a as u8, mn_b as u8);
        assert!(c.source.contains(&bits), "{bits}\n{}", c.source);
        assert!(c.source.contains("tilus_tma_load_3d("), "{}", c.source);
        if mn_b {
            assert!(c.source.contains("_mn_b("), "{}", c.source);
            // swizzle 128B (1 << 62), SBO 1024 >> 4 (bits 32..), LBO 8192 >> 4 (bits 16..)
            assert!(c.source.contains("0x4000004002000000ull"), "{}", c.source);
            assert!(c.source.contains(" + 64, "), "{}", c.source);
        }
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
            let s = ArithTile::new(case, (rows, cols, warps));
            let c = build(&s, &[]);
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
        }
    }
}

#[test]
fn a_reduction_across_warps_meets_in_shared_memory_and_one_in_a_warp_shuffles() {
    use crate::common::arith::{ArithCase, ArithTile};
    // [64, 32] over 4 warps: rows across warps, columns across lanes
    let rows = |case| ArithTile::new(case, (64, 32, 4));
    let in_lanes = tilus::emit(&rows(ArithCase::CenterRows), &[]).unwrap();
    assert!(
        in_lanes.contains("__shfl_xor_sync(0xffffffffu"),
        "{in_lanes}"
    );
    assert!(!in_lanes.contains("_scratch = tilus_smem +"), "{in_lanes}");
    // a shuffle on the right of `||` would run only in the lanes whose left side is false
    let logical = tilus::emit(&rows(ArithCase::Logical), &[]).unwrap();
    assert!(logical.contains("__shfl_xor_sync"), "{logical}");
    for line in logical.lines().filter(|l| l.contains("__shfl_xor_sync")) {
        assert!(!line.contains("||") && !line.contains("&&"), "{line}");
    }
    let across = tilus::emit(&rows(ArithCase::ColumnExtremes), &[]).unwrap();
    assert!(across.contains("_scratch = tilus_smem +"), "{across}");
    assert!(across.contains("__syncthreads();"), "{across}");
}

#[test]
fn a_cast_to_the_outputs_16_bit_type_rounds_once() {
    // `compute::<f16>((x * 0.5).cast::<f16>())`: the cast is the store's own rounding, so each
    // pair of elements is one packed conversion, not a round trip through f16 per element
    let s = Body::<(Ptr<f32>, PtrMut<f16>)>(|k, (src, dst)| {
        k.warps(1);
        let g = k.global_view::<f32>(src, [64]);
        let x = k.load_global(&g, [0], [64]);
        let y = k.compute((x * 0.5).cast::<f16>());
        let out = k.global_view::<f16>(dst, [64]);
        k.store_global(&out, &y, [0]);
    });
    let c = built(&s, &[]);
    assert!(c.source.contains("tilus_cvt_f16x2("), "{}", c.source);
    assert!(
        !c.source.contains("tilus_f16_to_f32(tilus_cvt_f16("),
        "{}",
        c.source
    );
}

// ------------------------------------------------------------------------------------------
// Global memory through registers: vector loads and stores with their bounds checks, strided
// views, atomics.
// ------------------------------------------------------------------------------------------

use crate::common::scripts::global::{
    ColumnStats, LastBlockSums, MaskedLoad, SegmentSums, SharedBytes, SplitKMatmul, SplitSum,
    StridedCopy, SwapTiles, Tickets,
};
use crate::common::Body;
use tilus::prelude::*;

fn built(s: &impl tilus::Script, consts: &[i64]) -> tilus::compile::CompiledProgram {
    let c = build(s, consts);
    assert_eq!(c.report.spill_stores, 0, "{s:?} spills");
    c
}

#[test]
fn load_global_vectorizes_where_the_strides_offsets_and_layout_allow() {
    // row-major with a leading dimension that keeps rows aligned: 16-byte loads, 8-byte stores
    // of the f16 copy, and the element fallback where the row's end cuts a vector
    let rows = StridedCopy {
        rows: 16,
        cols: 32,
        column_major: false,
    };
    let c = built(&rows, &[104]);
    for needle in [
        "load_global(g0, offsets=[v0, v1], shape=[16, 32]) vector=4",
        "if ((u32)(tilus_c0) < (u32)(m) && (u32)(tilus_c1 + 3) < (u32)(n)) {",
        "const tilus_vec<float, 4> v = *reinterpret_cast<const tilus_vec<float, 4>*>(src + (i64)tilus_c0 * (i64)104 + tilus_c1);",
        "for (int j = 0; j < 4; ++j) {",
        "store_global(g1, r1, offsets=[v0, v1]) vector=4",
        "reinterpret_cast<u64*>(dst + (i64)tilus_c0 * (i64)104 + tilus_c1)[0]",
        "else if ((u32)(tilus_c0) < (u32)(m) && (u32)(tilus_c1) < (u32)(n)) {",
    ] {
        assert!(c.source.contains(needle), "missing `{needle}` in\n{}", c.source);
    }
    // a leading dimension that is not a multiple of the vector: element loads and stores
    let odd = tilus::emit(&rows, &[101]).unwrap();
    assert!(!odd.contains("tilus_vec<"), "{odd}");
    assert!(
        odd.contains("src + (i64)tilus_c0 * (i64)101 + tilus_c1"),
        "{odd}"
    );
    // column-major: the innermost stride is not 1, so the loads are elements (the stores to
    // the row-major destination stay vectors)
    let cols = StridedCopy {
        rows: 16,
        cols: 32,
        column_major: true,
    };
    let c = built(&cols, &[104]);
    assert!(!c.source.contains("const tilus_vec<float"), "{}", c.source);
    assert!(
        c.source
            .contains("src + tilus_c0 + (i64)tilus_c1 * (i64)104"),
        "{}",
        c.source
    );
    assert!(
        c.source.contains("reinterpret_cast<u64*>(dst"),
        "{}",
        c.source
    );
}

#[test]
fn masked_loads_take_the_fill_value_in_the_generated_code() {
    let c = built(&MaskedLoad { fill: -7 }, &[64]);
    assert!(c.source.contains("fill=-7.0) vector=4"), "{}", c.source);
    assert!(c.source.contains(": -7.0f);"), "{}", c.source);
}

/// 16-bit tiles load and store 16 bytes at a time (eight elements, four packed words), and
/// the fill of a 16-bit tile is its bits.
#[test]
fn sixteen_bit_tiles_move_sixteen_bytes_at_a_time() {
    let s = Body::<(i32, Ptr<half::bf16>, PtrMut<half::bf16>)>(|k, (m, src, dst)| {
        k.warps(4);
        let g = k.global_view(src, [m, Val::constant(128)]);
        let t = k.load_global_or(&g, [0, 0], [32, 128], 1.0);
        let d = k.global_view(dst, [m, Val::constant(128)]);
        k.store_global(&d, &t, [0, 0]);
    });
    let c = built(&s, &[]);
    for needle in [
        "const tilus_vec<u32, 4> v = *reinterpret_cast<const tilus_vec<u32, 4>*>(",
        "r0[(l >> 1) + 3] = v.v[3];",
        "(u16)0x3f80",
        "*reinterpret_cast<tilus_vec<u32, 4>*>(",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
}

#[test]
fn atomics_compile_to_red_and_atom() {
    let c = built(&SplitSum { rows: 16, cols: 32 }, &[]);
    assert!(
        c.source.contains("red.global.add.f32 [%0], %1;"),
        "{}",
        c.source
    );
    let c = built(&ColumnStats { rows: 16, cols: 32 }, &[]);
    for needle in [
        "red.global.max.s32",
        "red.global.min.u32",
        "tilus_red_max_f32(maxs + tilus_c1, r0[l]);",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
    let c = built(&Tickets, &[]);
    for needle in [
        "const i32 old0 = tilus_atom_add_i32(counter, 1);",
        "atom.global.cas.b32 %0, [%1], %2, %3;",
        "const u32 old4 = tilus_atom_cas_u32(flag, 0u, ((u32)((v0 + 1))));",
        "atom.global.exch.b32",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
    // bytes in shared memory move one at a time (a wider access is misaligned at odd bytes,
    // and a wider store overwrites the neighbours)
    let c = built(&SharedBytes { runs: false }, &[]);
    for needle in ["tilus_st_shared_u8(", "tilus_ld_shared_u8("] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
    assert!(!c.source.contains("tilus_ld_shared_u32("), "{}", c.source);
    // ... unless each thread reads runs of 8 bytes of a row from an aligned start: one 8-byte
    // load each, its bytes taken apart in order
    let c = built(&SharedBytes { runs: true }, &[]);
    assert!(c.source.contains("tilus_ld_shared_v2("), "{}", c.source);
    assert!(!c.source.contains("tilus_ld_shared_u8("), "{}", c.source);
    // scalars read from memory: a bounds check against the view, 0 outside it
    let c = built(&SegmentSums, &[]);
    for needle in [
        "const i32 x0 = ((u32)(v0) < (u32)((segments + 1))) ? *(offsets + v0) : 0;",
        "const float x2 = ((u32)(v0) < (u32)(segments)) ? *(weights + v0) : 0.0f;",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
    let c = built(&SwapTiles, &[]);
    assert!(c.source.contains("tilus_atom_cas_f32("), "{}", c.source);
    // the GPU-scope fence: once after the stores, once in the last block before its reads
    let c = built(&LastBlockSums, &[]);
    let fences = c
        .source
        .matches("__threadfence();  // fence.acq_rel.gpu")
        .count();
    assert_eq!(fences, 2, "{}", c.source);
    // 16-bit floats add (one element at a time), and a replicated tile adds once per element
    let s = Body::<(PtrMut<f16>, PtrMut<half::bf16>)>(|k, (a, b)| {
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [8]);
        let ta = k.register_tensor::<f16>([64, 64], 1.0);
        let tb = k.register_tensor::<half::bf16>([8], 1.0);
        k.atomic_add(&ga, &ta, [0, 0]);
        k.atomic_add(&gb, &tb, [0]);
    });
    let c = built(&s, &[]);
    for needle in [
        "red.global.add.noftz.f16 [%0], %1;",
        "red.global.add.noftz.bf16 [%0], %1;",
        "if ((tilus_tid / 8) == 0) {",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
}

/// TMA maps of a strided view carry its strides; the launch plan evaluates them.
#[test]
fn a_tma_map_of_a_strided_view_has_its_strides() {
    let s = Body::<(i32, i32, Ptr<f16>)>(|k, (m, ld, a)| {
        k.warps(1);
        let g = k.global_view_strided(a, [m, Val::constant(64)], (ld, 1));
        let t = k.shared_tensor::<f16>([64, 64]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], t.nbytes());
            k.tma().global_to_shared(&g, &t, [0, 0], bar[0]);
            k.mbarrier().wait(bar[0], 0u32);
        });
    });
    let c = built(&s, &[]);
    let spec = c
        .plan
        .params
        .iter()
        .find_map(|p| match p {
            tilus::ir::KernelParam::TensorMap(m) => Some(m),
            _ => None,
        })
        .expect("a tensor map");
    assert_eq!(c.plan.eval(&spec.global_strides[0], &[0, 72, 0]), Some(72));
    assert_eq!(c.plan.eval(&spec.global_strides[1], &[0, 72, 0]), Some(1));
    assert!(spec.check_view(&[10, 64], &[72, 1]).is_ok());
    let e = spec.check_view(&[10, 64], &[68, 1]).unwrap_err();
    assert!(
        e.contains("a row stride of 136 bytes is not a multiple of 16"),
        "{e}"
    );
}

/// Operands loaded for mma.sync keep the fragments' layouts (element loads: the runtime `k`
/// leaves the rows' alignment unknown), and the accumulator is added element by element.
#[test]
fn a_split_k_matmul_loads_fragments_and_adds_its_accumulator() {
    let c = built(&SplitKMatmul, &[]);
    for needle in [
        "load_global(g0, offsets=[v0, v2], shape=[64, 32]) layout(",
        "(u32)(tilus_c1) < (u32)(k)",
        "mma.sync.aligned.m16n8k16",
        "tilus_red_add_f32(c + (i64)tilus_c0 * (i64)n + tilus_c1,",
    ] {
        assert!(
            c.source.contains(needle),
            "missing `{needle}` in\n{}",
            c.source
        );
    }
}

#[test]
fn float_scalar_arguments_compile_and_widen_16_bit_ones() {
    let c = build(&crate::common::arith::FloatAffine, &[]);
    assert!(c.source.contains("float alpha"), "{}", c.source);
    assert!(c.source.contains("u16 beta_bits"), "{}", c.source);
    assert!(
        c.source
            .contains("const float gamma = tilus_bf16_to_f32(gamma_bits);"),
        "{}",
        c.source
    );
}

// ------------------------------------------------------------------------------------------
// debug: printf and print_tensor become device printf calls with the interpreter's formats.
// ------------------------------------------------------------------------------------------

#[test]
fn printing_compiles_to_device_printf() {
    let src = tilus::emit(&Printing, &[]).unwrap();
    for want in [
        // the line's text, `%` escaped, a conversion per value, from the block's thread 0
        "if (tilus_tid == 0) {\n      printf(\"printing {n = %d} in block %d: n > 3 is %s, 100%%\\n\", \
         (int)(n), (int)(b), (((3 < n)) ? \"true\" : \"false\"));",
        // headers carry the name, type and shape; the block index is printed
        "printf(\"s.T: f32[20, 4], block (%d, %d, %d)\\n\", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);",
        "printf(\"h.T: f16[20, 4], block (%d, %d, %d)\\n\"",
        "printf(\"cube: i32[2, 2, 3], block (%d, %d, %d)\\n\"",
        // sixteen elements a line, then the rest of the row
        "for (int tilus_col = 0; tilus_col < 16; tilus_col += 16)",
        // register tiles meet in a scratch tile of their own
        "tilus_print_st16(",
        "tilus_print_st8(",
        "tilus_print_float(",
    ] {
        assert!(src.contains(want), "no {want:?} in:\n{src}");
    }
    // the line from warp 3: its group's first thread
    let warp = src.find("printf(\"warp 3 after x\\n\");").unwrap();
    assert!(
        src[..warp].ends_with("if (tilus_tid2 == 0) {\n        "),
        "{src}"
    );
    // three block barriers around each of the seven register tiles printed (and the one
    // after the barrier's initialization)
    assert_eq!(src.matches("__syncthreads();").count(), 1 + 3 * 7, "{src}");
    build(&Printing, &[]);
}

/// Text that C string literals must escape (quotes, backslashes, `?` of trigraphs, newlines,
/// bytes outside ASCII) and `%` reaches `printf` as written.
#[test]
fn printf_text_is_escaped_for_c() {
    let script = crate::common::Body::<(PtrMut<f32>,)>(|k, _| {
        k.warps(1);
        k.printf("é \"q\" \\ ??= 50% \n{}", (7,));
    });
    let src = tilus::emit(&script, &[]).unwrap();
    let want = r#"printf("\303\251 \"q\" \\ \?\?= 50%% \n%d\n", (int)(7));"#;
    assert!(src.contains(want), "no {want} in:\n{src}");
    build(&script, &[]);
}

// ------------------------------------------------------------------------------------------
// mbarrier: arrivals with a count.
// ------------------------------------------------------------------------------------------

#[test]
fn an_arrival_with_a_count_is_one_instruction_and_compiles() {
    let src = tilus::emit(&crate::common::scripts::WarpArrivals, &[]).unwrap();
    assert!(
        src.contains("tilus_mbarrier_arrive_count(bar0, 32u);"),
        "{src}"
    );
    assert!(src.contains("mbarrier.arrive.shared::cta.b64 _, [%0], %1;"));
    build(&crate::common::scripts::WarpArrivals, &[]);
}

// ------------------------------------------------------------------------------------------
// registers: setmaxnreg from the launch count, which the compiler must use exactly.
// ------------------------------------------------------------------------------------------

#[test]
fn registers_move_from_the_launch_count_the_kernel_is_compiled_to() {
    let script = crate::common::scripts::RegisterSplit;
    let src = tilus::emit(&script, &[]).unwrap();
    assert!(src.contains("__launch_bounds__(384, 1)"), "{src}");
    assert!(src.contains("setmaxnreg.dec.sync.aligned.u32 40;"), "{src}");
    assert!(
        src.contains("setmaxnreg.inc.sync.aligned.u32 232;"),
        "{src}"
    );
    // 65536 registers over 384 threads, in units of 8: the count every warp starts from
    let c = build(&script, &[]);
    assert_eq!(c.report.registers, 168, "{:?}", c.report);
    assert_eq!(c.report.spill_stores, 0);
}

// ------------------------------------------------------------------------------------------
// control: the unroll hint.
// ------------------------------------------------------------------------------------------

/// `for_range_unrolled` asks the CUDA compiler to unroll (the printed IR says so too), and a
/// factor of 0 is a diagnostic at the call.
#[test]
fn an_unrolled_loop_carries_its_pragma() {
    let script = crate::common::Body::<(i32, PtrMut<f32>)>(|k, (n, out)| {
        k.warps(1);
        let g = k.global_view::<f32>(out, [32]);
        k.for_range_unrolled(0, n, 1, 3, |k, i| {
            let x = k.register_tensor::<f32>([32], 1.0);
            let y = k.compute(&x * 2.0);
            k.if_(i.eq_(0), |k| k.store_global(&g, &y, [0]));
        });
    });
    let src = tilus::emit(&script, &[]).unwrap();
    let at = src.find("#pragma unroll 3").expect("the hint");
    assert!(
        src[at..].lines().nth(1).unwrap().contains("for (i32 i"),
        "{src}"
    );
    let p = tilus::trace(&script, &[]).unwrap();
    assert!(tilus::ir::print_program(&p).contains("unroll=3 {"));
    build(&script, &[]);

    let zero = crate::common::Body::<(i32,)>(|k, (n,)| {
        k.warps(1);
        k.for_range_unrolled(0, n, 1, 0, |_, _| {});
    });
    let e = tilus::trace(&zero, &[]).unwrap_err().to_string();
    assert!(
        e.contains("for_range_unrolled: unroll by at least 1"),
        "{e}"
    );
}

/// The approximations a script asks for are the hardware's single instructions.
#[test]
fn fast_math_asked_for_is_the_hardwares_approximation() {
    use crate::common::arith::{ArithCase, ArithTile};
    let s = ArithTile::new(ArithCase::FastMath, (16, 64, 4));
    let src = tilus::emit(&s, &[]).unwrap();
    assert!(src.contains("tanh.approx.f32 %0, %1;"), "{src}");
    assert!(src.contains("tilus_tanh_approx(") && src.contains("__expf("));
    assert!(src.contains("rcp.approx.ftz.f32 %0, %1;"), "{src}");
    assert!(
        !src.contains("tanhf("),
        "no accurate tanh where none was asked for"
    );
    assert!(src.contains("ex2.approx.ftz.f32 %0, %1;") && src.contains("tilus_exp2_approx("));
    assert!(
        !src.contains("exp2f("),
        "no accurate exp2 where none was asked for"
    );
}

/// `mul_add` is one fused multiply-add (one rounding) for floats and `a * b + c` for
/// integers; `*` followed by `+` is never contracted.
#[test]
fn mul_add_is_a_fused_multiply_add_and_nothing_else_is() {
    use crate::common::arith::{ArithCase, ArithTile};
    let tile = |case| ArithTile::new(case, (16, 64, 4));
    let src = tilus::emit(&tile(ArithCase::MulAdd), &[]).unwrap();
    assert!(src.contains("__fmaf_rn("), "{src}");
    assert!(
        src.contains(" * ") && src.contains(" + 7"),
        "the integer form: {src}"
    );
    let plain = tilus::emit(&tile(ArithCase::Elementwise), &[]).unwrap();
    assert!(!plain.contains("__fmaf_rn("), "{plain}");
}

/// `Pipeline`'s producer waits with relaxed semantics; the consumers' waits acquire. A whole
/// producer warp issues its copies from one elected lane and declares its bytes from one
/// thread.
#[test]
fn the_pipelines_producer_waits_relaxed_and_compiles() {
    use crate::common::staged::PipelineStream;
    for whole_warp in [false, true] {
        let script = PipelineStream { whole_warp };
        let src = tilus::emit(&script, &[]).unwrap();
        assert!(
            src.contains("mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64 P, [%0], %1;"),
            "{src}"
        );
        assert_eq!(
            src.matches("tilus_mbarrier_wait_relaxed(").count(),
            2,
            "one call and its definition"
        );
        assert!(
            src.contains("      tilus_mbarrier_wait(bar0 + 8u * (u32)(stage"),
            "{src}"
        );
        assert_eq!(
            src.contains("if (tilus_elect_one()) tilus_tma_load_2d("),
            whole_warp,
            "{src}"
        );
        build(&script, &[]);
    }
}

// ------------------------------------------------------------------------------------------
// fast divisors: the host's multiplier and shift arrive as one parameter; the division is a
// multiply, an add and a shift.
// ------------------------------------------------------------------------------------------

fn grouped_order(k: &mut Kernel, (tm, tn, out): Handles<(i32, i32, PtrMut<i32>)>) {
    k.warps(1);
    let (row, col) = k.grouped_tile(k.block_idx().x, tm, tn, 8);
    let g = k.global_view::<i32>(out, [tm * tn * 2]);
    let b = k.let_i32(k.block_idx().x);
    k.single_thread(|k| {
        k.atomic_exchange_scalar(&g, [b * 2], row);
        k.atomic_exchange_scalar(&g, [b * 2 + 1], col);
    });
}

#[test]
fn grouped_order_divides_through_the_hosts_multipliers_and_compiles() {
    let c = build(&Body::<(i32, i32, PtrMut<i32>)>(grouped_order), &[]);
    let params = c.source.matches("const u64 divisor").count();
    assert_eq!(params, 2, "one parameter per divisor:\n{}", c.source);
    assert!(
        c.source
            .contains("multiplier (low 32 bits) and shift (high 32) dividing by"),
        "{}",
        c.source
    );
    assert!(c.source.contains(">> 32"), "{}", c.source);
}

/// A persistent grid's block count is the launch's `gridDim.x`, read once.
#[test]
fn a_persistent_grid_reads_the_blocks_launched_and_compiles() {
    let c = build(&crate::common::scripts::PersistentItems, &[]);
    assert!(
        c.source.contains("const i32 blocks0 = (i32)gridDim.x;"),
        "{}",
        c.source
    );
    let (p, plan) = {
        let p = tilus::trace(&crate::common::scripts::PersistentItems, &[]).unwrap();
        let p = tilus::passes::infer_layout::run(p).unwrap();
        let p = tilus::passes::plan_shared::run(p).unwrap();
        tilus::passes::lower::run(p)
    };
    assert!(p.persistent && plan.persistent);
}

/// Each warp group's barrier is a named barrier of its own, counting its 128 threads.
#[test]
fn group_barriers_are_named_barriers_and_compile() {
    let c = build(&crate::common::scripts::GroupSyncs, &[]);
    for id in [1, 2] {
        let line = format!("asm volatile(\"bar.sync {id}, 128;\" ::: \"memory\");");
        assert!(c.source.contains(&line), "{}", c.source);
    }
}

/// A cluster kernel carries its cluster's shape in its signature (so that a plain launch
/// groups the blocks) and its barrier is `barrier.cluster`.
#[test]
fn a_cluster_kernel_declares_its_clusters_and_compiles() {
    let c = build(
        &crate::common::scripts::ClusterPairs { lone_sync: false },
        &[],
    );
    assert!(
        c.source
            .contains("__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__"),
        "{}",
        c.source
    );
    assert!(
        c.source.contains("barrier.cluster.arrive.release.aligned;"),
        "{}",
        c.source
    );
}

/// A remote arrival maps this block's barrier address into the partner's and arrives there
/// with release at cluster scope.
#[test]
fn a_remote_arrival_maps_the_barrier_into_the_other_block_and_compiles() {
    let c = build(&crate::common::scripts::ClusterSignals::default(), &[]);
    assert!(
        c.source.contains("mapa.shared::cluster.u32"),
        "{}",
        c.source
    );
    assert!(
        c.source
            .contains("mbarrier.arrive.release.cluster.shared::cluster.b64"),
        "{}",
        c.source
    );
    assert!(
        c.source
            .contains("tilus_mbarrier_arrive_remote(bar0, (u32)("),
        "{}",
        c.source
    );
}

/// The relaxed cluster meeting arrives without release and waits with the barrier's default
/// semantics; the ordered one keeps release and acquire.
#[test]
fn a_relaxed_cluster_meeting_carries_no_release() {
    let relaxed = crate::common::scripts::ClusterSignals {
        relaxed_start: true,
        ..Default::default()
    };
    let c = build(&relaxed, &[]);
    assert!(
        c.source
            .contains("barrier.cluster.arrive.relaxed.aligned;\\n\\tbarrier.cluster.wait.aligned;"),
        "{}",
        c.source
    );
    // the meeting at the end is still the ordered one
    assert_eq!(
        c.source
            .matches("barrier.cluster.arrive.release.aligned")
            .count(),
        1,
        "{}",
        c.source
    );
}

/// A remote arrival after reads (what `Pipeline::consumer_release_step_in_cluster` issues)
/// carries no cluster-scope release: nothing to publish, and that fence would hold the
/// consumer's warp.
#[test]
fn a_remote_release_after_reads_carries_no_cluster_release() {
    let script = crate::common::scripts::ClusterSignals {
        after_reads: true,
        ..Default::default()
    };
    let c = build(&script, &[]);
    assert!(
        c.source
            .contains("tilus_mbarrier_arrive_remote_after_reads(bar"),
        "{}",
        c.source
    );
    assert!(
        c.source
            .contains("mbarrier.arrive.shared::cluster.b64 _, [%0];"),
        "{}",
        c.source
    );
    assert!(
        !c.source.contains("mbarrier.arrive.release.cluster"),
        "no publishing arrival is emitted: {}",
        c.source
    );
}

/// A multicast load is one `cp.async.bulk.tensor ... .multicast::cluster` with its mask.
#[test]
fn a_multicast_load_carries_its_mask_and_compiles() {
    let c = build(
        &crate::common::scripts::ClusterMulticast { mask: 0b11 },
        &[],
    );
    assert!(
        c.source
            .contains(".mbarrier::complete_tx::bytes.multicast::cluster"),
        "{}",
        c.source
    );
    assert!(
        c.source.contains("tilus_tma_load_2d_multicast("),
        "{}",
        c.source
    );
    assert!(c.source.contains("(u16)(3)"), "{}", c.source);
}

/// A tile assigned in a loop is declared once, before it, and written in the loop's body
/// from values computed first (so the expression may read it).
#[test]
fn an_assigned_tile_is_declared_once_and_written_in_the_loop() {
    use crate::common::scripts::RunningStats;
    let src = tilus::emit(&RunningStats, &[]).unwrap();
    for name in ["sum", "max", "decayed"] {
        assert_eq!(
            src.matches(&format!("float {name}[")).count(),
            1,
            "{name} declared once: {src}"
        );
    }
    let lp = src.find("for (").expect("the runtime loop");
    let body = &src[lp..];
    assert!(body.contains("sum[0] = tilus_v0;"), "{src}");
    assert!(body.contains("__fmul_rn(decayed[0]"), "{src}");
}

/// Index tiles compile to the thread's coordinate terms, named once, plus each element's local
/// offset: in an mma accumulator's fragment layout and in the masks of causal row sums, on
/// every shape of the interpreter's test, without spills.
#[test]
fn index_tiles_and_masks_compile_to_coordinates_without_spills() {
    use crate::common::scripts::masks::{CausalRows, IndexOnAccumulator};
    for n8 in [1, 4] {
        for broadcast in [false, true] {
            let s = IndexOnAccumulator { n8, broadcast };
            let c = build(&s, &[]);
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
            assert!(c.source.contains("const i32 tilus_i1 = "), "{s:?}");
        }
    }
    for (rows, cols, warps) in crate::common::scripts::masks::ROW_SHAPES {
        let s = CausalRows { rows, cols, warps };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        let s = crate::common::scripts::masks::ArgExtremes { rows, cols, warps };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        let s = crate::common::scripts::masks::RandomTiles { rows, cols, warps };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(c.source.contains("tilus_philox("), "{s:?}");
    }
}

/// Layout conversions compile: through the scratch (a store per element, a barrier, a load
/// per element, a barrier) where threads exchange elements, as register copies where they do
/// not (no scratch, no barrier), without spills.
#[test]
fn layout_conversions_compile_through_shared_memory_or_registers() {
    use crate::common::scripts::convert::{ChainedProducts, ConvertedOperand};
    for s in ConvertedOperand::both_forms() {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(
            c.source.contains("const u32 tilus_scratch = tilus_smem + "),
            "{s:?}"
        );
        assert!(c.source.matches("__syncthreads();").count() >= 2, "{s:?}");
    }
    for (d, implicit) in [8, 64].into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let s = ChainedProducts { d, implicit };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(!c.source.contains("tilus_scratch"), "{s:?}");
        assert!(!c.source.contains("__syncthreads();"), "{s:?}");
    }
    // a cast's source laid out apart from its result: converted before the cast
    for s in ConvertedOperand::FORMS.map(crate::common::scripts::convert::CastOperand) {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(c.source.contains("tilus_scratch"), "{s:?}");
    }
    // operands of an expression in other layouts: the inserted conversion, through shared memory
    let c = build(&crate::common::scripts::convert::ImplicitConvert, &[]);
    assert_eq!(c.report.spill_stores, 0);
    assert!(c.source.contains("tilus_scratch"));
    // a WGMMA accumulator as the next WGMMA's register operand: renames only
    for (d, implicit) in [16, 64].into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let s = crate::common::scripts::convert::ChainedWgmma { d, implicit };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(!c.source.contains("tilus_scratch"), "{s:?}");
    }
}

/// Masked layouts compile without spills, the masked-off registers kept out of the stores
/// by a check of the tile coordinate and out of the reductions by their identity.
#[test]
fn masked_layouts_compile_with_their_checks() {
    use crate::common::scripts::widths::AnyWidth;
    for s in AnyWidth::FORMS {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(
            c.source.contains(&format!(" - (0)) < {}u", s.cols)),
            "{s:?}: no check of the tile's columns\n{}",
            c.source
        );
        assert!(c.source.contains("__int_as_float(0xff800000)"), "{s:?}");
    }
}

/// Scans compile in both forms without spills: a running value over each thread's locals where
/// threads hold whole lines, a scan of each line by one thread in the scratch otherwise.
#[test]
fn scans_compile_in_registers_or_through_shared_memory() {
    use crate::common::scripts::masks::Scans;
    let (mut registers, mut shared) = (0, 0);
    for (rows, cols, warps) in Scans::SHAPES {
        for dim in [0, 1] {
            let s = Scans {
                rows,
                cols,
                warps,
                dim,
            };
            let c = build(&s, &[]);
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
            if c.source.contains("tilus_line") {
                shared += 1;
            } else {
                registers += 1;
            }
        }
    }
    assert!(registers > 0 && shared > 0, "{registers} {shared}");
}

/// Bit views compile to the hardware's reinterpretations, without spills.
#[test]
fn bit_views_compile() {
    use crate::common::scripts::masks::BitViews;
    for (rows, cols, warps) in crate::common::scripts::masks::VIEW_SHAPES {
        let s = BitViews { rows, cols, warps };
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(
            c.source.contains("__float_as_uint(") && c.source.contains("__uint_as_float("),
            "{s:?}"
        );
    }
}

/// `assume(n % 4 == 0)` lets a copy of f32 rows of stride `n` move 16 bytes per access, and
/// is passed on to the CUDA compiler; without it the accesses are scalar.
#[test]
fn an_assumed_multiple_widens_the_row_accesses() {
    use crate::common::scripts::masks::AssumedRows;
    let plain = tilus::emit(&AssumedRows { assume: false }, &[]).unwrap();
    let promised = tilus::emit(&AssumedRows { assume: true }, &[]).unwrap();
    assert!(
        promised.contains("__builtin_assume(n % 4 == 0);"),
        "{promised}"
    );
    assert!(promised.contains("vector=4"), "{promised}");
    assert!(
        !plain.contains("vector=4") && !plain.contains("__builtin_assume"),
        "{plain}"
    );
    let c = build(&AssumedRows { assume: true }, &[]);
    assert_eq!(c.report.spill_stores, 0);
}

/// Repetitions compile without spills, reading each result element's source element.
#[test]
fn repeats_compile() {
    use crate::common::scripts::convert::Repeats;
    for s in Repeats::FORMS {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
    }
}

/// Scatters compile to one guarded store or atomic per element, without spills.
#[test]
fn scatters_compile() {
    use crate::common::scripts::global::Scatters;
    for s in Scatters::FORMS {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
        assert!(
            c.source.contains("store_global_at(") && c.source.contains("atomic_add_at("),
            "{s:?}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// cp_async: copies by threads, one `cp.async` per vector of the widest size the view keeps
// aligned, the bytes inside the view as the source size; groups committed and waited for.
// ------------------------------------------------------------------------------------------

#[test]
fn copies_by_threads_compile_with_the_width_the_view_allows() {
    use crate::common::scripts::copy_async::{CopyBox, RingRowSums};
    let [aligned, _, odd, pitch_102, _, _] = CopyBox::CASES;
    let src = tilus::emit(&aligned, &[]).unwrap();
    assert!(
        src.contains("cp.async.cg.shared.global [%0], [%1], 16, %2;"),
        "{src}"
    );
    assert!(src.contains("tilus_cp_async_16("), "{src}");
    assert!(src.contains("cp.async.commit_group;"), "{src}");
    assert!(src.contains("cp.async.wait_group 0;"), "{src}");
    let narrow = tilus::emit(&pitch_102, &[]).unwrap();
    assert!(
        narrow.contains("cp.async.ca.shared.global [%0], [%1], 4, %2;"),
        "{narrow}"
    );
    // 2-byte elements one at a time: ordinary loads and stores, no cp.async
    let single = tilus::emit(&odd, &[]).unwrap();
    assert!(!single.contains("shared.global"), "{single}");
    assert!(single.contains("tilus_st_shared_u16("), "{single}");
    for s in CopyBox::CASES {
        let c = build(&s, &[]);
        assert_eq!(c.report.spill_stores, 0, "{s:?}");
    }
    for stages in [2, 3, 4] {
        let c = build(&RingRowSums::new(stages), &[]);
        assert!(c
            .source
            .contains(&format!("cp.async.wait_group {};", stages - 2)));
        assert_eq!(c.report.spill_stores, 0);
    }
}

#[test]
fn a_masked_store_keeps_whole_vectors_and_checks_the_rest_element_by_element() {
    use crate::common::scripts::masks::MaskedStore;
    let s = MaskedStore {
        rows: 16,
        cols: 64,
        warps: 4,
        aligned: true,
        rows_only: false,
    };
    let src = tilus::emit(&s, &[]).unwrap();
    // 16-byte vectors where the mask keeps all eight elements (each flag read: the causal
    // mask differs along a row)
    assert!(src.contains("tilus_vec<u32, 4>"), "{src}");
    assert!(src.contains("r1[l + 6] && r1[l + 7])"), "{src}");
    assert!(src.contains("for (int j = 0; j < 8; ++j)"), "{src}");
    // a runtime row pitch with nothing known of it: element by element, the mask in the test
    let plain = tilus::emit(
        &MaskedStore {
            aligned: false,
            ..s.clone()
        },
        &[],
    )
    .unwrap();
    assert!(plain.contains("(u32)(n) && r1[l + 0])"), "{plain}");
    for warps in [1, 2, 4] {
        let c = build(&MaskedStore { warps, ..s.clone() }, &[]);
        assert_eq!(c.report.spill_stores, 0);
    }
    // a mask of whole rows: one flag a vector; the view's runtime end may still cut one
    let rows = tilus::emit(
        &MaskedStore {
            rows_only: true,
            ..s.clone()
        },
        &[],
    )
    .unwrap();
    let store = &rows[rows.find("store_global(").expect("the store")..];
    assert!(
        store.contains("(u32)(tilus_c1 + 7) < (u32)(n) && r1[l + 0])"),
        "{store}"
    );
    assert!(!store.contains("r1[l + 1]"), "{store}");
    // the view's end cuts a vector: its elements one by one, still under the mask
    assert!(store.contains("for (int j = 0; j < 8; ++j)"), "{store}");
    assert!(store.contains("(u32)(n) && r1[l + j])"), "{store}");
}

/// A mask of whole rows over a tile that covers its view's known width: the vector is kept or
/// dropped by one flag, with no column check and no element-by-element fallback.
#[test]
fn a_store_masked_by_rows_keeps_or_drops_whole_vectors() {
    use crate::common::scripts::masks::RowMaskedStore;
    let s = RowMaskedStore {
        rows: 16,
        warps: 4,
        cols: 64,
    };
    let src = tilus::emit(&s, &[]).unwrap();
    let store = &src[src.find("store_global(").expect("the store")..];
    assert!(store.contains("tilus_vec<u32, 4>"), "{store}");
    assert!(
        store.contains("(u32)(tilus_c0) < (u32)(m) && r1[l + 0])"),
        "{store}"
    );
    assert!(!store.contains("tilus_c1 +"), "{store}");
    assert!(!store.contains("else"), "{store}");
    let c = build(&s, &[]);
    assert_eq!(c.report.spill_stores, 0);
    // the report counts the machine code: whole 16-byte instructions, within the cubin
    let code = c.report.code_bytes as usize;
    assert!(code >= 16 * 20 && code.is_multiple_of(16), "{:?}", c.report);
    assert!(code < c.cubin.len(), "{:?}", c.report);
    // a tile past the rows' known end keeps its column check
    let narrow = tilus::emit(&RowMaskedStore { cols: 56, ..s }, &[]).unwrap();
    let store = &narrow[narrow.find("store_global(").expect("the store")..];
    assert!(
        store.contains("(u32)(tilus_c1 + 7) < (u32)(56) && r1[l + 0])"),
        "{store}"
    );
}

/// Codes scaled in f16 ([`ScaledCodes`](crate::common::scripts::lowp::ScaledCodes)) run in
/// f16 pairs where each operation is rounded to f16 (one `mul.rn.f16x2` or `sub.rn.f16x2` a
/// pair, the codes converted a pair at a time) and in f32 where a difference is not rounded.
#[test]
fn codes_scaled_in_f16_run_in_pairs_where_each_operation_rounds() {
    use crate::common::scripts::lowp::ScaledCodes;
    use tilus::lowp::*;
    let c = build(&ScaledCodes::<F8E4M3>::new(), &[]);
    let s = &c.source;
    // the first pair of each rounded row, in full: the codes in order, the pair's own scales
    // and zero points (a word of each tile)
    for line in [
        "const u32 tilus_p0 = tilus_mul_f16x2(tilus_f16x2_from_f8e4m3x2((u16)((u32)r0[0] | ((u32)r0[1] << 8))), r1[(0) >> 1]);",
        "const u32 tilus_p0 = tilus_mul_f16x2(tilus_sub_f16x2(tilus_f16x2_from_f8e4m3x2((u16)((u32)r0[0] | ((u32)r0[1] << 8))), r2[(0) >> 1]), r1[(0) >> 1]);",
    ] {
        assert!(s.contains(line), "{line}\n{s}");
    }
    // two products and one difference of pairs per pair of elements (each thread has one)
    assert_eq!(s.matches("= tilus_mul_f16x2(").count(), 2, "{s}");
    assert_eq!(s.matches("tilus_sub_f16x2(").count(), 2, "{s}");
    assert!(s.contains("mul.rn.f16x2"), "{s}");
    assert!(s.contains("tilus_f16x2_from_f8e4m3x2((u16)"), "{s}");
    // the unrounded difference keeps the f32 form
    assert!(s.contains("__fsub_rn("), "{s}");
    let i = build(&ScaledCodes::<I8>::new(), &[]);
    assert!(i.source.contains("tilus_f16x2_from_field("), "{}", i.source);
    assert_eq!(
        i.source.matches("= tilus_mul_f16x2(").count(),
        2,
        "{}",
        i.source
    );
    // the small floats, packed: their bits placed as f16 fields, times 2^(15 - bias)
    use crate::common::scripts::lowp::ScaledPackedCodes;
    for (src, restore) in [
        (
            build(&ScaledPackedCodes::<F4E2M1>::new(), &[]).source,
            "0x74007400u",
        ),
        (
            build(&ScaledPackedCodes::<F6E3M2>::new(), &[]).source,
            "0x6c006c00u",
        ),
        (
            build(&ScaledPackedCodes::<F3E1M1>::new(), &[]).source,
            "0x78007800u",
        ),
    ] {
        assert!(src.contains("& 0x80008000u) | "), "{src}");
        assert!(src.contains(&format!("), {restore})")), "{restore}\n{src}");
    }
}

/// Integer codes times a power of two from 2^-4 to 2^4 take the factor into their pair
/// conversion's constants (no product of their own); other factors, negative ones and float
/// codes keep the product by the constant pair.
#[test]
fn integer_pairs_times_a_power_of_two_fold_it_into_their_conversion() {
    use crate::common::scripts::lowp::CodesTimes;
    use tilus::lowp::*;
    let folded = |src: &str, scale: &str| {
        src.contains(&format!("0x64006400u, {scale}, ")) && !src.contains("tilus_mul_f16x2(")
    };
    // u4 times 4: scale 4 (0x4400); times 1/2: scale 0x3800
    let s = build(&CodesTimes::<U4>::new(4.0), &[]).source;
    assert!(folded(&s, "0x44004400u"), "{s}");
    let s = build(&CodesTimes::<U4>::new(0.5), &[]).source;
    assert!(folded(&s, "0x38003800u"), "{s}");
    // not powers of two, or past 2^4, or negative: a product by the constant pair
    for (factor, pair) in [
        (3.0, "0x42004200u"),
        (32.0, "0x50005000u"),
        (-4.0, "0xc400c400u"),
    ] {
        let s = build(&CodesTimes::<U4>::new(factor), &[]).source;
        assert!(s.contains(&format!(", {pair})")), "{factor}\n{s}");
        assert!(s.contains("tilus_mul_f16x2("), "{factor}\n{s}");
    }
    // float codes: placed, then the product
    let s = build(&CodesTimes::<F4E2M1>::new(4.0), &[]).source;
    assert!(s.contains(", 0x44004400u)"), "{s}");
}

/// The low-precision types compile for every conversion the interpreter checks: FP8 encodes by
/// the hardware's `cvt.rn.satfinite`, the narrower floats by the integer algorithm, each type's
/// decoder once; byte-wide codes load and store as vectors.
#[test]
fn low_precision_conversions_compile() {
    use crate::common::scripts::lowp::{DecodeCodes, EncodeValues, RoundTrip};
    use tilus::lowp::*;
    // FP8 to f32 through the hardware's exact conversion to f16, not the decoder
    let c = build(&DecodeCodes::<F8E4M3>::new(2), &[]);
    assert!(
        c.source
            .contains("tilus_f16_to_f32((u16)tilus_f16x2_from_f8e4m3x2("),
        "{}",
        c.source
    );
    assert!(!c.source.contains("tilus_from_f8e4m3("), "{}", c.source);
    // to f16 by pairs, in one instruction each
    assert!(c.source.contains("cvt.rn.f16x2.e4m3x2"), "{}", c.source);
    let c5 = build(&DecodeCodes::<F8E5M2>::new(2), &[]);
    assert!(c5.source.contains("cvt.rn.f16x2.e5m2x2"), "{}", c5.source);
    assert!(
        c.source.contains("tilus_vec<u8, "),
        "no vector load of codes\n{}",
        c.source
    );
    // small integers to floats by the exponent trick, not the slow integer conversion
    let c = build(&DecodeCodes::<I8>::new(2), &[]);
    assert!(
        c.source.contains("& 255u) ^ 0x4b000080u)") && c.source.contains("8388736.0f"),
        "i8 codes by 2^23's exponent\n{}",
        c.source
    );
    assert!(!c.source.contains(">> 24)"), "{}", c.source);
    // and to f16 pairs in one packed subtraction
    assert!(
        c.source.contains("tilus_f16x2_from_field(") && c.source.contains("0x64806480u, "),
        "{}",
        c.source
    );
    let c = build(&DecodeCodes::<U4>::new(2), &[]);
    assert!(
        c.source.contains("& 15u) ^ 0x4b000000u)") && c.source.contains("8388608.0f"),
        "u4 codes by 2^23's exponent\n{}",
        c.source
    );
    let c = build(&EncodeValues::<F8E5M2>::new(1000, 4), &[]);
    assert!(
        c.source.contains("cvt.rn.satfinite.e5m2x2.f32"),
        "{}",
        c.source
    );
    assert_eq!(c.report.spill_stores, 0);
    let c = build(&EncodeValues::<F8E4M3>::new(512, 4), &[]);
    assert!(
        c.source.contains("cvt.rn.satfinite.e4m3x2.f32"),
        "{}",
        c.source
    );
    let c = build(&RoundTrip::<F4E2M1>::new(300, 4), &[]);
    assert!(
        c.source.contains("tilus_to_f4e2m1(") && c.source.contains("rintf("),
        "{}",
        c.source
    );
    assert_eq!(c.source.matches("float tilus_from_f4e2m1(").count(), 1);
    for s in [
        build(&RoundTrip::<F6E3M2>::new(96, 1), &[]),
        build(&RoundTrip::<I4>::new(96, 1), &[]),
        build(&RoundTrip::<Float<5, 1>>::new(96, 1), &[]),
    ] {
        assert_eq!(s.report.spill_stores, 0);
    }
}

/// Packed views compile for every width: whole vectors of 1 to 16 bytes in one access, 3, 5,
/// 6 and 7-bit vectors byte by byte, the cut vectors' bytes rewritten under their masks.
#[test]
fn packed_views_compile_for_every_width() {
    use crate::common::scripts::lowp::{packed_forms, PackedViews};
    use tilus::lowp::*;
    fn each<
        T: tilus::lang::Element + tilus::lowp::LowpElement + std::hash::Hash + std::fmt::Debug,
    >(
        forms: Vec<PackedViews<T>>,
    ) -> Vec<String> {
        forms
            .iter()
            .map(|s| {
                let c = build(s, &[]);
                assert_eq!(c.report.spill_stores, 0, "{s:?}");
                c.source
            })
            .collect()
    }
    let i4 = each(packed_forms::<I4>(4));
    assert!(i4[0].contains("tilus_vec<u32, 1> tilus_v = "), "{}", i4[0]);
    // the second form's rows end inside vectors: bytes rewritten under a mask
    assert!(i4[1].contains("& ~tilus_m"), "{}", i4[1]);
    let i3 = each(packed_forms::<Int<3>>(3));
    assert!(
        !i3[0].contains("tilus_v = ") && i3[0].contains("[2] << 16)"),
        "3-bit vectors move byte by byte\n{}",
        i3[0]
    );
    each(packed_forms::<F6E3M2>(6));
    each(packed_forms::<U2>(2));
    each(packed_forms::<Int<1>>(1));
    each(packed_forms::<F4E2M1>(4));
}

/// Unpacking words compiles to shifts and masks of each thread's own words, without spills.
#[test]
fn unpacking_words_compiles_to_shifts_of_the_threads_own_words() {
    use crate::common::scripts::lowp::UnpackWords;
    use tilus::lowp::*;
    let c = build(&UnpackWords::<I4>::new(16, 64, 4), &[]);
    assert_eq!(c.report.spill_stores, 0);
    assert!(c.source.contains(">> 28) & 15u)"), "{}", c.source);
    let c = build(&UnpackWords::<F4E2M1>::new(4, 256, 1), &[]);
    assert_eq!(c.report.spill_stores, 0);
    build(&UnpackWords::<Int<1>>::new(4, 256, 1), &[]);
}

/// Packing elements into words compiles to shifts and ors of each thread's own codes.
#[test]
fn packing_words_compiles_to_shifts_of_the_threads_own_codes() {
    use crate::common::scripts::lowp::PackWords;
    use tilus::lowp::*;
    let c = build(&PackWords::<I4>::new(16, 256, 4), &[]);
    assert_eq!(c.report.spill_stores, 0);
    assert!(c.source.contains(" << 28)"), "{}", c.source);
    build(&PackWords::<U2>::new(4, 256, 1), &[]);
    build(&PackWords::<Int<1>>::new(16, 256, 4), &[]);
}

/// FP8 wgmma compiles: `m64nNk32` with the two input types, no transpose bits, descriptors of
/// 128-byte K-major rows stepping 32 bytes per K step.
#[test]
fn fp8_wgmma_compiles_with_k32_instructions() {
    use crate::common::scripts::lowp::Fp8Tile;
    use tilus::lowp::*;
    let c = build(&Fp8Tile::<F8E4M3, F8E4M3>::new(128, 128, 128), &[]);
    assert!(
        c.source
            .contains("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3")
            && c.source.contains(", p, 1, 1;"),
        "{}",
        c.source
    );
    assert!(c.source.contains("ki * 32"), "{}", c.source);
    assert_eq!(c.report.spill_stores, 0);
    let c = build(&Fp8Tile::<F8E4M3, F8E5M2>::new(64, 64, 64), &[]);
    assert!(c.source.contains("m64n64k32.f32.e4m3.e5m2"), "{}", c.source);
}
