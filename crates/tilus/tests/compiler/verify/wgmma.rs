//! Warp-group products (`wgmma`): warp-group scope, K-major operands, shapes and dtypes, the
//! accumulator read before the wait that covers it. The script is [`OneTile`], whose
//! diagnostics point at `common/scripts.rs`.

use crate::common::diagnostics_of;
use crate::common::line_of;
use crate::common::scripts::{OneTile, FILE};
use crate::common::staged::{StagedMatmul, FILE as STAGED_FILE};
use crate::common::{at, check, note};
use half::f16;
use tilus::prelude::{Ptr, PtrMut};

fn has(d: &[tilus::Diagnostic], phrase: &str) -> bool {
    d.iter()
        .any(|d| d.message.contains(phrase) && d.loc.file == FILE)
}

#[test]
fn f16_accumulation_is_accepted_with_f16_inputs() {
    assert!(diagnostics_of(&OneTile::<f16>::new(64, 128, 64), &[]).is_empty());
}

#[test]
fn a_valid_tile_checks_clean() {
    assert!(diagnostics_of(&OneTile::<f32>::new(64, 128, 64), &[]).is_empty());
    assert!(diagnostics_of(
        &OneTile {
            a_in_registers: true,
            ..OneTile::<f32>::new(128, 64, 32)
        },
        &[]
    )
    .is_empty());
}

#[test]
fn wgmma_outside_a_warp_group_is_an_error() {
    let d = diagnostics_of(
        &OneTile {
            warps: 8,
            ..OneTile::<f32>::new(64, 128, 64)
        },
        &[],
    );
    assert!(has(&d, "runs on a warp group"), "{d:#?}");
}

/// B as stored (not seen through a transpose) is an MN-major `[K, N]` operand: the
/// instruction's transpose bit, no error.
#[test]
fn b_as_stored_is_mn_major() {
    let d = diagnostics_of(
        &OneTile {
            b_transposed: false,
            n: 64,
            ..OneTile::<f32>::new(64, 64, 64)
        },
        &[],
    );
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn reading_the_accumulator_before_its_wait_is_an_error() {
    let d = diagnostics_of(
        &OneTile {
            read_early: true,
            ..OneTile::<f32>::new(64, 128, 64)
        },
        &[],
    );
    assert!(has(&d, "is used while the wgmma at"), "{d:#?}");
    assert_eq!(d.len(), 1, "only the early read: {d:#?}");
}

#[test]
fn shapes_the_instruction_cannot_cover_are_errors() {
    // M = 32 is not a multiple of 64
    let d = diagnostics_of(&OneTile::<f32>::new(32, 128, 64), &[]);
    assert!(has(&d, "must be a positive multiple of 64"), "{d:#?}");
    // 256-byte rows fit no swizzle
    let d = diagnostics_of(&OneTile::<f32>::new(64, 64, 128), &[]);
    assert!(
        d.iter()
            .any(|d| d.message.contains("K-major rows of 32, 64 or 128 bytes")),
        "{d:#?}"
    );
}

// ------------------------------------------------------------------------------------------
// Staged operands (`sa.at(s)`): the double-buffered pipeline checks clean; refilling the
// stage the wgmma in flight reads (the same stage variable) is an error; stages pinned off
// their swizzle's alignment are rejected.
// ------------------------------------------------------------------------------------------

#[test]
fn a_double_buffered_wgmma_pipeline_checks_clean() {
    let script = StagedMatmul {
        k_tiles: 4,
        refill_busy_stage: false,
    };
    assert!(diagnostics_of(&script, &[]).is_empty());
}

#[test]
fn refilling_the_stage_the_wgmma_in_flight_reads_is_an_error() {
    let script = StagedMatmul {
        k_tiles: 4,
        refill_busy_stage: true,
    };
    let d = diagnostics_of(&script, &[]);
    let refill = line_of("refill");
    let hit = d
        .iter()
        .find(|d| {
            d.message
                .contains("`s0[stage]` is written while the wgmma at")
        })
        .unwrap_or_else(|| panic!("{d:#?}"));
    assert_eq!((hit.loc.file, hit.loc.line), (STAGED_FILE, refill), "{hit}");
    assert!(
        hit.message.contains(&format!(":{}:", line_of("mma"))),
        "{hit}"
    );
}

#[test]
fn stages_pinned_off_their_swizzle_alignment() {
    let script = StagedMatmul {
        k_tiles: 1,
        refill_busy_stage: false,
    };
    let d = crate::common::check_script(script)
        .edit(|p| {
            let mut l = tilus::layout::SharedLayout::swizzled_for_tma(&[2, 64, 64], 2);
            l.stage_stride = Some(8192 + 512);
            p.shareds[0].layout = Some(l);
        })
        .run()
        .err()
        .map(|e| format!("{e}"))
        .unwrap_or_default();
    assert!(
        d.contains("the stages of `s0` are 8704 bytes apart, not a multiple of the 1024 bytes"),
        "{d}"
    );
}

/// `wait_group(1)` retires every group but the newest: the older product's accumulator may be
/// read, the newer one's not yet.
#[test]
fn a_wait_leaving_groups_running_keeps_their_accumulators_off_limits() {
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (src, out)| {
        k.warps(4);
        let a = loaded_tile(k, src, 64);
        let older = k.register_tensor::<f32>([64, 64], 0.0);
        let newer = k.register_tensor::<f32>([64, 64], 0.0);
        k.wgmma().fence();
        k.wgmma().mma(&a, &a.transpose(), &older);
        k.wgmma().commit_group();
        #[rustfmt::skip]
        note(line!(), k.wgmma().mma(&a, &a.transpose(), &newer));
        k.wgmma().commit_group();
        k.wgmma().wait_group(1);
        let o = k.global_view::<f32>(out, [64, 64]);
        k.store_global(&o, &older, [0, 0]);
        at(line!(), k.store_global(&o, &newer, [0, 0]));
        k.wgmma().wait_group(0);
    })
    .fails_once_noting("is used while the wgmma at");
}

/// A `[rows, 64]` f16 tile of `src` copied into shared memory with TMA and waited for.
fn loaded_tile(
    k: &mut tilus::prelude::Kernel,
    src: tilus::prelude::PtrVal<f16>,
    rows: i32,
) -> tilus::prelude::SharedTensor<f16> {
    let g = k.global_view::<f16>(src, [rows, 64]);
    let t = k.shared_tensor::<f16>([rows, 64]);
    let bar = k.mbarrier().alloc([1]);
    k.single_thread(|k| {
        k.mbarrier().arrive_and_expect_tx(bar[0], t.nbytes());
        k.tma().global_to_shared(&g, &t, [0, 0], bar[0]);
    });
    k.mbarrier().wait(bar[0], 0u32);
    t
}

/// Two products into the two 64-column windows of one `[64, 128]` accumulator, the second
/// still in flight when the first window is read (`early`: its own columns are read too).
fn windows(
    k: &mut tilus::prelude::Kernel,
    (src, out): tilus::prelude::Handles<(Ptr<f16>, PtrMut<f32>)>,
    early: bool,
) {
    use tilus::prelude::WgmmaTarget;
    k.warps(4);
    let b = loaded_tile(k, src, 128);
    let acc = k.register_tensor::<f32>([64, 128], None);
    let a = b.rows(0, 64);
    k.wgmma().fence();
    let first = WgmmaTarget::window(0).overwriting();
    k.wgmma()
        .mma_to(&a, &b.rows(0, 64).transpose(), &acc, first);
    k.wgmma().commit_group();
    let second = WgmmaTarget::window(64).overwriting();
    #[rustfmt::skip]
    note(line!(), k.wgmma().mma_to(&a, &b.rows(64, 64).transpose(), &acc, second));
    k.wgmma().commit_group();
    k.wgmma().wait_group(1);
    let o = k.global_view::<f32>(out, [64, 128]);
    let left = k.slice(&acc, 1, 0, 64);
    k.store_global(&o, &left, [0, 0]);
    if early {
        at(line!(), k.slice(&acc, 1, 32, 64));
    }
    k.wgmma().wait_group(0);
    let right = k.slice(&acc, 1, 64, 64);
    k.store_global(&o, &right, [0, 64]);
}

#[test]
fn a_window_in_flight_leaves_the_accumulators_other_columns_free() {
    let p = check::<(Ptr<f16>, PtrMut<f32>)>(|k, args| windows(k, args, false))
        .run()
        .unwrap();
    let text = tilus::ir::print_program(&p);
    assert!(text.contains("[:, 64..] = wgmma.mma("), "{text}");
}

#[test]
fn reading_columns_of_a_window_in_flight_is_an_error() {
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, args| windows(k, args, true))
        .fails_once_noting("is used while the wgmma at");
}

#[test]
fn a_window_past_the_accumulators_columns_is_an_error() {
    check::<(Ptr<f16>, PtrMut<f32>)>(|k, (src, out)| {
        use tilus::prelude::WgmmaTarget;
        k.warps(4);
        let b = loaded_tile(k, src, 128);
        let acc = k.register_tensor::<f32>([64, 96], 0.0);
        k.wgmma().fence();
        let (a, past) = (b.rows(0, 64), WgmmaTarget::window(40));
        #[rustfmt::skip]
        at(line!(), k.wgmma().mma_to(&a, &b.rows(0, 64).transpose(), &acc, past));
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let o = k.global_view::<f32>(out, [64, 96]);
        k.store_global(&o, &acc, [0, 0]);
    })
    .fails("is not within the accumulator's 96 columns");
}

/// FP8 operands are K-major shared tiles into an f32 accumulator: an MN-major B (a `[K, N]`
/// tile as stored), an A from registers, an f16 accumulator and an FP8 A with an f16 B are
/// each refused at the product's line.
#[test]
fn fp8_operands_only_k_major_in_shared_memory_into_f32() {
    use tilus::lowp::{F8E4M3, F8E5M2};
    type Args = (PtrMut<f32>,);
    check::<Args>(|k, _| {
        k.warps(4);
        let sa = k.shared_tensor::<F8E4M3>([64, 64]);
        let sb = k.shared_tensor::<F8E4M3>([64, 64]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        at(line!(), k.wgmma().mma(&sa, &sb, &acc));
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
    })
    .fails_once("wgmma.mma: FP8 operands must be K-major tiles in shared memory");
    check::<Args>(|k, _| {
        k.warps(4);
        let sa = k.shared_tensor::<F8E4M3>([64, 64]);
        let sb = k.shared_tensor::<F8E5M2>([64, 64]);
        let acc = k.register_tensor::<f16>([64, 64], 0.0);
        at(line!(), k.wgmma().mma(&sa, &sb.transpose(), &acc));
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
    })
    .fails_once("wgmma.mma: FP8 products accumulate in f32, not f16");
    check::<Args>(|k, _| {
        k.warps(4);
        let sa = k.shared_tensor::<F8E4M3>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        at(line!(), k.wgmma().mma(&sa, &sb.transpose(), &acc));
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
    })
    .fails_once("wgmma.mma: operands must both be f16, both bf16, or each f8e4m3 or f8e5m2; got f8e4m3 and f16");
}
