//! TMA copies: a round trip and f32 tile copies are exact; reading a destination before the
//! wait that covers it, or ending the block without a wait that sees a copy's phase, is a
//! fault. TMA stores: the epilogue is exact; an unfenced source, a
//! source written before the wait and a store never waited for are faults.

use super::seed::run_matmul;
use crate::common::inputs::{f16s, fresh_seed, random_f32};
use crate::common::interp::{
    assert_noted, expect_fault, interpret, plan_unverified, run, run_planned,
};
use crate::common::mark;
use crate::common::scripts::{
    epilogue_inputs, Epilogue, EpilogueBug, SeedMatmul, TileCopy, EPILOGUE_COLS,
};
use crate::common::staged::{PipelineStream, StagedSum};
use tilus::interp::{Fault, InterpValue};
use tilus::prelude::*;

/// `(bytes, src, dst)`: one TMA copy of a `[64, 64]` tile declared as `bytes` transaction
/// bytes. Marked calls: `expect`, `tma`, `wait`.
pub type TxArgs = (i32, Ptr<f16>, PtrMut<f16>);

pub fn tx_body(k: &mut Kernel, (bytes, src, dst): Handles<TxArgs>) {
    k.warps(4);
    let g = k.global_view(src, [64, 64]);
    let s = k.shared_tensor::<f16>([64, 64]);
    let bar = k.mbarrier().alloc([1]);
    k.single_thread(|k| {
        #[rustfmt::skip]
        mark("expect", line!(), k.mbarrier().arrive_and_expect_tx(bar[0], bytes));
        #[rustfmt::skip]
        mark("tma", line!(), k.tma().global_to_shared(&g, &s, [0, 0], bar[0]));
    });
    #[rustfmt::skip]
    mark("wait", line!(), k.mbarrier().wait(bar[0], 0u32));
    let r = k.load_shared(&s);
    let o = k.global_view(dst, [64, 64]);
    k.store_global(&o, &r, [0, 0]);
}

#[test]
fn a_tma_round_trip_is_exact() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::NAN; 64 * 64];
    let rep = interpret::<TxArgs>(tx_body, (8192, &src, &mut dst)).unwrap();
    assert_eq!(dst, src);
    assert_eq!((rep.blocks, rep.tma_copies), (1, 1));
    assert_eq!(
        rep.max_tasks, 2,
        "single_thread splits the block in two tasks"
    );
}

/// An f32 tile copy through TMA (no swizzle and 128B), the generic shared load and f32 stores.
#[test]
fn f32_tile_copies_are_exact_at_odd_shapes() {
    for (m, n, rows, cols) in TileCopy::ODD_SHAPES {
        let data = TileCopy::input(m, n);
        let mut out = vec![f32::NAN; m * n];
        run(
            &TileCopy { rows, cols },
            (m as i32, n as i32, &data, &mut out),
        )
        .unwrap();
        assert_eq!(out, data, "{m}x{n} with {rows}x{cols} tiles");
    }
}

/// A source that starts mid-granule (a sub-slice one element in) is refused before anything
/// runs, with the message a launch gives for the same device sub-slice
/// (`runtime/launch_checks.rs`); the same data from its start copies exactly.
#[test]
fn a_source_off_its_16_byte_alignment_is_refused_as_a_launch_refuses_it() {
    let (m, n) = (16usize, 32usize);
    let data = TileCopy::input(m, n + 1);
    let script = TileCopy { rows: 16, cols: 32 };
    let mut out = vec![f32::NAN; m * n];
    match run(&script, (m as i32, n as i32, &data[1..], &mut out)) {
        Err(tilus::Error::Argument { arg, message }) => {
            assert_eq!(arg, "src");
            assert!(message.contains("is not 16-byte aligned"), "{message}");
            assert!(message.contains("TMA"), "{message}");
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert!(out.iter().all(|x| x.is_nan()), "nothing ran");
    run(&script, (m as i32, n as i32, &data[..m * n], &mut out)).unwrap();
    assert_eq!(out, data[..m * n]);
}

// ------------------------------------------------------------------------------------------
// Reads of TMA destinations before the wait that covers them.
// ------------------------------------------------------------------------------------------

#[test]
fn reading_a_tile_without_the_sync_after_the_single_thread_wait_is_a_read_before_wait() {
    let bugs = SeedMatmul {
        no_first_sync: true,
        ..SeedMatmul::default()
    };
    let r = run_matmul(bugs, 64, 128, 64).map(|_| tilus::interp::Report::default());
    let d = expect_fault(
        r,
        Fault::ReadBeforeWait,
        "load_a",
        &[
            "load_shared reads shared tensor `s0`",
            "still in flight",
            "barrier `bar0[0]`",
        ],
    );
    assert_noted(&d, "tma_a");
}

/// A copy whose barrier phase no wait sees may still be landing when the block ends (into
/// shared memory the next block may own): a fault at the copy, even though nothing read it.
#[test]
fn a_copy_no_wait_sees_is_a_fault_when_the_block_ends() {
    let src = f16s(64 * 64);
    let mut dst = vec![f16::ZERO; 64 * 64];
    let r = interpret::<(Ptr<f16>, PtrMut<f16>)>(
        |k, (src, dst)| {
            k.warps(1);
            let g = k.global_view(src, [64, 64]);
            let s = k.shared_tensor::<f16>([64, 64]);
            let bar = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
                #[rustfmt::skip]
                mark("tma", line!(), k.tma().global_to_shared(&g, &s, [0, 0], bar[0]));
            });
            let o = k.global_view(dst, [64, 64]);
            let z = k.register_tensor::<f16>([64, 64], 0.0);
            k.store_global(&o, &z, [0, 0]);
        },
        (&src[..], &mut dst[..]),
    );
    expect_fault(
        r,
        Fault::NotWaited,
        "tma",
        &["without waiting for this TMA copy", "barrier `bar0[0]`"],
    );
}

#[test]
fn waiting_on_a_stale_phase_is_a_read_before_wait_in_the_second_iteration() {
    let bugs = SeedMatmul {
        no_phase_flip: true,
        ..SeedMatmul::default()
    };
    // one K step is fine; the second waits for parity 0 again, which completed long ago
    run_matmul(bugs, 64, 128, 64).unwrap();
    let r = run_matmul(bugs, 64, 128, 128).map(|_| tilus::interp::Report::default());
    let d = expect_fault(
        r,
        Fault::ReadBeforeWait,
        "load_a",
        &["`s0`", "still in flight"],
    );
    assert_noted(&d, "tma_a");
}

// ------------------------------------------------------------------------------------------
// TMA stores: exact results, and the faults of the bugs the verifier also finds statically
// (planned here without the verifier).
// ------------------------------------------------------------------------------------------

/// Interprets the epilogue with `bug` on `rows` rows, planned without the verifier.
fn epilogue_unverified(
    bug: EpilogueBug,
    rows: usize,
) -> (tilus::Result<tilus::interp::Report>, Vec<f16>) {
    let (program, plan) = plan_unverified(&Epilogue { bug });
    let src = epilogue_inputs(rows);
    let mut dst = vec![f16::NAN; rows * EPILOGUE_COLS];
    let mut args = vec![
        InterpValue::Int(rows as i64),
        InterpValue::buffer(&src),
        InterpValue::buffer_mut(&mut dst),
    ];
    (run_planned(&program, &plan, &mut args), dst)
}

#[test]
fn the_tma_store_epilogue_copies_exactly_at_ragged_sizes() {
    for bug in [
        EpilogueBug::None,
        EpilogueBug::ReuseAfterReadWait,
        EpilogueBug::FreeBeforeWait,
    ] {
        for rows in [32usize, 100, 1] {
            let src = epilogue_inputs(rows);
            let mut dst = vec![f16::NAN; rows * EPILOGUE_COLS];
            run(&Epilogue { bug }, (rows as i32, &src[..], &mut dst[..]))
                .unwrap_or_else(|e| panic!("{bug:?} at {rows} rows: {e}"));
            assert!(
                dst.iter()
                    .zip(&src)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{bug:?} at {rows} rows"
            );
        }
    }
}

#[test]
fn a_tma_store_of_unfenced_stores_is_a_missing_proxy_fence() {
    let (r, _) = epilogue_unverified(EpilogueBug::NoFence, 64);
    let d = expect_fault(
        r,
        Fault::MissingProxyFence,
        "store",
        &["wrote with store_shared", "fence_proxy_async"],
    );
    assert_noted(&d, "store_shared");
}

#[test]
fn writing_a_tma_store_source_before_the_wait_is_an_overwrite_before_wait() {
    let (r, _) = epilogue_unverified(EpilogueBug::WriteBeforeWait, 64);
    let d = expect_fault(
        r,
        Fault::OverwriteBeforeWait,
        "rewrite",
        &["overwrites shared tensor `s_out` while a TMA store that reads it is unfinished"],
    );
    assert_noted(&d, "store");
}

#[test]
fn a_tma_store_never_waited_for_is_a_fault_and_writes_nothing() {
    let (r, dst) = epilogue_unverified(EpilogueBug::NoWait, 64);
    expect_fault(
        r,
        Fault::NotWaited,
        "store",
        &["may still read shared tensor `s_out`"],
    );
    // the global write lands at the wait, and there is none
    assert!(
        dst.iter().all(|x| x.is_nan()),
        "the store wrote without a wait"
    );
}

// ------------------------------------------------------------------------------------------
// Staged tiles (`sa.at(s)`): a pipeline that fills one stage while the threads read another,
// exact against a CPU reference at each swizzle (and with padded stages); a read of a stage
// whose copy is in flight; TMA stores of one stage while another is written.
// ------------------------------------------------------------------------------------------

#[test]
fn a_staged_tma_pipeline_sums_its_tiles_exactly() {
    let seed = fresh_seed();
    for (i, (rows, cols)) in StagedSum::SHAPES.into_iter().enumerate() {
        for tiles in [1usize, 2, 3, 7] {
            let (r, c) = (rows as usize, cols as usize);
            let input = random_f32(tiles * r * c, seed + i as u64 * 16 + tiles as u64);
            let mut out = vec![f32::NAN; r * c];
            let rep = run(
                &StagedSum::new(rows, cols),
                (tiles as i32, &input[..], &mut out[..]),
            )
            .unwrap_or_else(|e| panic!("[{rows}, {cols}] x {tiles}: {e}"));
            let want = StagedSum::expected(&input, tiles, r, c);
            let same = out
                .iter()
                .zip(&want)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "[{rows}, {cols}] x {tiles}: {out:?} != {want:?}");
            assert_eq!(rep.tma_copies as usize, tiles);
        }
    }
}

#[test]
fn stages_are_padded_to_their_swizzle_alignment() {
    // [4, 32] f32 stages are 512 bytes; their 128-byte rows take the 128B swizzle, whose
    // pattern repeats every 1024 bytes
    let (p, _) = plan_unverified(&StagedSum::new(4, 32));
    let sa = &p.shareds[0];
    let l = sa.layout.as_ref().unwrap();
    assert_eq!(l.stage_stride, Some(1024), "{l}");
    assert_eq!(sa.footprint(), 3 * 1024);
    assert_eq!(sa.offset.unwrap() % 1024, 0);
    // [32, 32] f32 stages fill 4096 bytes: no padding
    let (p, _) = plan_unverified(&StagedSum::new(32, 32));
    assert_eq!(p.shareds[0].layout.as_ref().unwrap().stage_stride, None);
}

#[test]
fn reading_a_stage_before_its_wait_is_a_read_before_wait_of_that_stage() {
    let script = StagedSum {
        no_wait: true,
        ..StagedSum::new(8, 16)
    };
    let input = random_f32(3 * 8 * 16, 5);
    let mut out = vec![f32::NAN; 8 * 16];
    let r = run(&script, (3, &input[..], &mut out[..]));
    expect_fault(
        r,
        Fault::ReadBeforeWait,
        "read",
        &["load_shared reads shared tensor `s0[0]`", "still in flight"],
    );
}

/// `(src index, dst)`: two `[32, 32]` f32 stages stored with TMA into the rows of a `[64, 32]`
/// output, stage 0 (ones) then stage 1 (twos), the second written while the store of the first
/// is in flight; `bug`: the second value goes into stage 0 instead. Marked calls: `store0`,
/// `rewrite`.
fn staged_epilogue(k: &mut Kernel, dst: PtrVal<f32>, bug: bool) {
    k.blocks([1]);
    k.warps(4);
    let sc = k.shared_tensor::<f32>([2, 32, 32]);
    let g = k.global_view::<f32>(dst, [64, 32]);
    let ones = k.register_tensor::<f32>([32, 32], 1.0);
    let twos = k.register_tensor::<f32>([32, 32], 2.0);
    k.store_shared(&sc.at(0), &ones);
    k.fence_proxy_async();
    k.sync();
    k.single_thread(|k| {
        #[rustfmt::skip]
        mark("store0", line!(), k.tma().shared_to_global(&sc.at(0), &g, [0, 0]));
        k.tma().commit_group();
    });
    let second = if bug { 0 } else { 1 };
    #[rustfmt::skip]
    mark("rewrite", line!(), k.store_shared(&sc.at(second), &twos));
    k.fence_proxy_async();
    k.sync();
    k.single_thread(|k| {
        k.tma().shared_to_global(&sc.at(1), &g, [32, 0]);
        k.tma().commit_group();
        k.tma().wait_group(0);
    });
}

#[test]
fn one_stage_is_written_while_a_tma_store_reads_another() {
    let mut out = vec![f32::NAN; 64 * 32];
    interpret::<(PtrMut<f32>,)>(|k, (dst,)| staged_epilogue(k, dst, false), (&mut out[..],))
        .unwrap();
    assert!(out[..1024].iter().all(|&x| x == 1.0));
    assert!(out[1024..].iter().all(|&x| x == 2.0));
}

#[test]
fn writing_the_stage_a_tma_store_reads_is_an_overwrite_before_wait() {
    #[derive(Clone, Debug, Hash)]
    struct Bug;
    impl Script for Bug {
        type Args = (PtrMut<f32>,);
        fn body(&self, k: &mut Kernel, (dst,): Handles<Self::Args>) {
            staged_epilogue(k, dst, true)
        }
    }
    let (program, plan) = plan_unverified(&Bug);
    let mut out = vec![f32::NAN; 64 * 32];
    let mut args = vec![InterpValue::buffer_mut(&mut out)];
    let d = expect_fault(
        run_planned(&program, &plan, &mut args),
        Fault::OverwriteBeforeWait,
        "rewrite",
        &["overwrites shared tensor `s0[0]` while a TMA store that reads it is unfinished"],
    );
    assert_noted(&d, "store0");
}

/// A producer warp's copies, issued by the whole warp (one elected lane, once each) or by one
/// thread of it, stream every row exactly through the pipeline (ragged last stage included).
#[test]
fn a_whole_producer_warp_issues_each_copy_once() {
    for whole_warp in [true, false] {
        let rows = 88usize;
        let src = crate::common::inputs::random_f16(rows * 64, fresh_seed());
        let mut dst = vec![f16::from_f32(f32::NAN); rows * 64];
        run(
            &PipelineStream { whole_warp },
            (rows as i32, &src[..], &mut dst[..]),
        )
        .unwrap();
        let same = dst
            .iter()
            .zip(&src)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "whole_warp = {whole_warp}");
    }
}

/// A TMA store writes a row's last 16 bytes whole: into a view whose rows are not whole
/// 16-byte granules (here 180 halves, 184 apart) it would overwrite the elements after each
/// row, so the launch refuses it (the interpreter as the GPU), naming the argument; rows of
/// 184 halves are stored.
#[test]
fn a_tma_store_into_rows_of_partial_granules_is_refused() {
    let store = |k: &mut Kernel, (cols, dst): (Val, PtrVal<f16>)| {
        k.blocks([1]);
        k.warps(4);
        let s = k.shared_tensor::<f16>([8, 64]);
        let g = k.global_view_strided::<f16>(dst, (8, cols), (184, 1));
        let ones = k.register_tensor::<f16>([8, 64], 1.0);
        k.store_shared(&s, &ones);
        k.fence_proxy_async();
        k.sync();
        k.single_thread(|k| {
            k.tma().shared_to_global(&s, &g, [0, 128]);
            k.tma().commit_group();
            k.tma().wait_group(0);
        });
    };
    let mut out = vec![f16::NAN; 8 * 184];
    let e = interpret::<(i32, PtrMut<f16>)>(store, (180, &mut out[..])).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("writes a row's last 16 bytes whole"), "{msg}");
    assert!(out.iter().all(|v| v.is_nan()), "nothing ran");
    interpret::<(i32, PtrMut<f16>)>(store, (184, &mut out[..])).unwrap();
    assert!(out[128..184].iter().all(|&v| v == f16::ONE));
}
