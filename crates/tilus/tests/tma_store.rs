//! The TMA store family (`tma().shared_to_global`, `commit_group`, `wait_group`,
//! `wait_group_read`): its verifier rules, its interpreter rules, the code it emits, NVRTC,
//! and the GPU (ignored without one).
//!
//! The script is the epilogue of the later matmuls: a tile comes into shared memory (a TMA
//! load), through registers (`load_shared`), back into another shared tile with ordinary
//! stores (`store_shared`), is published to the async proxy (`fence_proxy_async`, `sync`) and
//! leaves with a TMA store. Each `Bug` breaks one rule; `at("key", line!(), call)` records the
//! line a diagnostic must name.

// `at("key", line!(), k.store_shared(..))` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

use std::cell::RefCell;
use std::collections::HashMap;
use tilus::interp::{Fault, InterpValue};
use tilus::prelude::*;
use tilus::{Diagnostic, Error};

thread_local! {
    static LINES: RefCell<HashMap<&'static str, u32>> = RefCell::new(HashMap::new());
}

/// Records `line` under `key` and passes `call` through.
fn at<T>(key: &'static str, line: u32, call: T) -> T {
    LINES.with(|l| l.borrow_mut().insert(key, line));
    call
}

fn line_of(key: &str) -> u32 {
    LINES.with(|l| l.borrow().get(key).copied().unwrap_or(0))
}

fn cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tilus-cache");
        let _ = std::fs::create_dir_all(&dir);
        std::env::set_var("TILUS_CACHE_DIR", dir);
    });
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum Bug {
    #[default]
    None,
    /// No `fence_proxy_async` between the ordinary stores and the TMA store.
    NoFence,
    /// The source is written again before the wait that covers the store.
    WriteBeforeWait,
    /// No wait at all.
    NoWait,
    /// The store runs in the whole block instead of one thread.
    WholeBlock,
    /// `wait_group_read(0)`, then the source is reused (correct).
    ReuseAfterReadWait,
    /// The source is freed before the wait and another tile allocated (correct: the planner
    /// keeps the source alive until the wait).
    FreeBeforeWait,
}

/// `dst = src` through shared memory, registers and a TMA store; `[rows, 64]` f16, one
/// `[32, 64]` tile per block, 4 warps.
#[derive(Clone, Debug, Hash)]
struct Epilogue {
    bug: Bug,
}

const COLS: usize = 64;
const TILE_ROWS: i32 = 32;

impl Script for Epilogue {
    type Args = (i32, Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["rows", "src", "dst"]
    }
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
        let bug = self.bug;
        k.blocks([cdiv(rows, TILE_ROWS)]);
        k.warps(4);
        let bx = k.block_idx().x;
        let om = k.name_next("om").let_i32(TILE_ROWS * bx);
        let cols = Val::constant(COLS as i32);
        let g_src = k.name_next("g_src").global_view::<f16>(src, [rows, cols]);
        let g_dst = k.name_next("g_dst").global_view::<f16>(dst, [rows, cols]);
        let s_in = k.name_next("s_in").shared_tensor::<f16>([TILE_ROWS, COLS as i32]);
        let s_out = k.name_next("s_out").shared_tensor::<f16>([TILE_ROWS, COLS as i32]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s_in.nbytes());
            k.tma().global_to_shared(&g_src, &s_in, (om, 0), bar[0]);
            k.mbarrier().wait(bar[0], 0u32);
        });
        k.sync();
        let r = k.load_shared(&s_in);
        at("store_shared", line!(), k.store_shared(&s_out, &r));
        if bug != Bug::NoFence {
            k.fence_proxy_async();
        }
        k.sync();
        if bug == Bug::WholeBlock {
            at("store", line!(), k.tma().shared_to_global(&s_out, &g_dst, (om, 0)));
            return;
        }
        k.single_thread(|k| {
            at("store", line!(), k.tma().shared_to_global(&s_out, &g_dst, (om, 0)));
            k.tma().commit_group();
            if bug == Bug::ReuseAfterReadWait {
                k.tma().wait_group_read(0);
            }
        });
        match bug {
            Bug::WriteBeforeWait => {
                at("rewrite", line!(), k.store_shared(&s_out, &r));
            }
            Bug::ReuseAfterReadWait => {
                // the source may be reused once its reads are done
                k.sync();
                k.store_shared(&s_out, &r);
            }
            Bug::FreeBeforeWait => {
                k.free_shared(&s_out);
                let other = k.name_next("other").shared_tensor::<f16>([TILE_ROWS, COLS as i32]);
                k.store_shared(&other, &r);
            }
            _ => {}
        }
        if bug != Bug::NoWait {
            k.single_thread(|k| k.tma().wait_group(0));
        }
    }
}

fn inputs(rows: usize) -> Vec<f16> {
    (0..rows * COLS)
        .map(|i| f16::from_f32(((i * 37 % 1013) as f32 - 500.0) / 64.0))
        .collect()
}

/// The script's diagnostics (it must not compile).
fn diagnostics(bug: Bug) -> Vec<Diagnostic> {
    LINES.with(|l| l.borrow_mut().clear());
    let program = tilus::trace(&Epilogue { bug }, &[]).unwrap();
    match tilus::passes::compile_program(program) {
        Err(Error::Script(d)) => d,
        Err(e) => panic!("expected Error::Script, got {e}"),
        Ok(_) => panic!("{bug:?}: expected the verifier to reject the script"),
    }
}

/// The diagnostic containing `phrase`, which must point at the call marked `key`.
#[track_caller]
fn find(d: &[Diagnostic], phrase: &str, key: &str) -> Diagnostic {
    let hit = d
        .iter()
        .find(|d| d.message.contains(phrase))
        .unwrap_or_else(|| panic!("no diagnostic contains {phrase:?}: {d:#?}"))
        .clone();
    assert!(hit.loc.file.ends_with("tma_store.rs"), "{hit}");
    assert_eq!(hit.loc.line, line_of(key), "{hit}");
    hit
}

/// Plans the script without the verifier (whose static rules reject the bugs the interpreter
/// must also find at run time) and interprets it on `rows` rows.
fn interpret_unverified(bug: Bug, rows: usize) -> (tilus::Result<tilus::interp::Report>, Vec<f16>) {
    LINES.with(|l| l.borrow_mut().clear());
    let program = tilus::trace(&Epilogue { bug }, &[]).unwrap();
    let program = tilus::passes::infer_layout::run(program).unwrap();
    let program = tilus::passes::plan_shared::run(program).unwrap();
    let (program, plan) = tilus::passes::lower::run(program);
    let src = inputs(rows);
    let mut dst = vec![f16::NAN; rows * COLS];
    let mut args = vec![
        InterpValue::Int(rows as i64),
        InterpValue::buffer(&src),
        InterpValue::buffer_mut(&mut dst),
    ];
    let r = tilus::interp::run_program(&program, &plan, &mut args, &Default::default());
    (r, dst)
}

#[track_caller]
fn fault(r: tilus::Result<tilus::interp::Report>, kind: Fault, key: &str) -> Vec<Diagnostic> {
    match r {
        Err(Error::Interp {
            fault, diagnostics, ..
        }) => {
            assert_eq!(fault, kind, "{diagnostics:#?}");
            assert_eq!(diagnostics[0].loc.line, line_of(key), "{}", diagnostics[0]);
            assert!(diagnostics[0].loc.file.ends_with("tma_store.rs"));
            diagnostics
        }
        other => panic!("expected an interpreter fault {kind:?}, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// The interpreter runs the correct script and its correct variants exactly.
// ------------------------------------------------------------------------------------------

#[test]
fn the_epilogue_copies_exactly_at_ragged_sizes() {
    for bug in [Bug::None, Bug::ReuseAfterReadWait, Bug::FreeBeforeWait] {
        for rows in [32usize, 100, 1] {
            let src = inputs(rows);
            let mut dst = vec![f16::NAN; rows * COLS];
            tilus::interpret(&Epilogue { bug }, (rows as i32, &src[..], &mut dst[..]))
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
fn a_freed_source_stays_alive_until_the_wait_that_covers_its_store() {
    let program = tilus::trace(
        &Epilogue {
            bug: Bug::FreeBeforeWait,
        },
        &[],
    )
    .unwrap();
    let (p, _) = tilus::passes::compile_program(program).unwrap();
    let range = |name: &str| {
        let s = p.shareds.iter().find(|s| s.name == name).unwrap();
        let o = s.offset.unwrap() as u64;
        (o, o + s.nbytes())
    };
    let (a, b) = (range("s_out"), range("other"));
    assert!(
        a.1 <= b.0 || b.1 <= a.0,
        "s_out {a:?} and other {b:?} share bytes"
    );
}

// ------------------------------------------------------------------------------------------
// Verifier rules, each with the line it names.
// ------------------------------------------------------------------------------------------

#[test]
fn a_store_of_tiles_written_without_a_proxy_fence_is_a_diagnostic() {
    let d = diagnostics(Bug::NoFence);
    let hit = find(&d, "written by store_shared at", "store");
    assert!(
        hit.message
            .starts_with("tma.shared_to_global reads `s_out`"),
        "{hit}"
    );
    assert!(hit
        .message
        .contains(&format!("tma_store.rs:{}:", line_of("store_shared"))));
}

#[test]
fn writing_the_source_before_the_wait_is_a_diagnostic() {
    let d = diagnostics(Bug::WriteBeforeWait);
    let hit = find(
        &d,
        "is written while the tma.shared_to_global at",
        "rewrite",
    );
    assert!(
        hit.message
            .contains(&format!("tma_store.rs:{}:", line_of("store"))),
        "{hit}"
    );
    assert!(hit.message.contains("tma.wait_group(..)"), "{hit}");
}

#[test]
fn a_kernel_that_never_waits_for_its_store_is_a_diagnostic() {
    let d = diagnostics(Bug::NoWait);
    let hit = find(&d, "the kernel ends while this tma.shared_to_global may still be reading shared tensor `s_out`", "store");
    assert!(hit.message.contains("tma.wait_group(..)"), "{hit}");
}

#[test]
fn a_store_issued_by_the_whole_block_is_a_diagnostic() {
    let d = diagnostics(Bug::WholeBlock);
    find(
        &d,
        "tma.shared_to_global runs in a group of 128 threads",
        "store",
    );
}

/// Small scripts for the rules that need their own.
#[derive(Clone, Debug, Hash)]
enum Small {
    ReadOnlyView,
    WrongDtype,
    WrongRank,
    CommitOutsideOneThread,
    WaitOutsideOneThread,
}

impl Script for Small {
    type Args = (Ptr<f16>, PtrMut<f32>);
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (a, b): Handles<Self::Args>) {
        k.warps(1);
        let ro = k.global_view::<f16>(a, [64, 64]);
        let rw = k.global_view::<f32>(b, [64, 64]);
        let flat = k.global_view::<f32>(b, [4096]);
        let s16 = k.shared_tensor::<f16>([64, 64]);
        let s32 = k.shared_tensor::<f32>([32, 32]);
        k.single_thread(|k| match self {
            Small::ReadOnlyView => at("bad", line!(), k.tma().shared_to_global(&s16, &ro, [0, 0])),
            Small::WrongRank => at("bad", line!(), k.tma().shared_to_global(&s32, &flat, [0])),
            Small::WrongDtype | Small::CommitOutsideOneThread | Small::WaitOutsideOneThread => {
                k.tma().shared_to_global(&s32, &rw, [0, 0])
            }
        });
        match self {
            Small::CommitOutsideOneThread => at("bad", line!(), k.tma().commit_group()),
            Small::WaitOutsideOneThread => {
                k.single_thread(|k| k.tma().commit_group());
                at("bad", line!(), k.tma().wait_group(0));
            }
            _ => k.single_thread(|k| {
                k.tma().commit_group();
                k.tma().wait_group(0);
            }),
        }
        let _ = (&ro, &s16);
    }
}

fn small_diagnostics(s: Small) -> Vec<Diagnostic> {
    LINES.with(|l| l.borrow_mut().clear());
    let mut program = tilus::trace(&s, &[]).unwrap();
    if let Small::WrongDtype = s {
        // the typed builder cannot mix element types: edit the traced program
        program.shareds[1].dtype = tilus::ir::DType::F16;
        LINES.with(|l| {
            l.borrow_mut().insert(
                "bad",
                program
                    .body
                    .iter()
                    .find_map(|s| match &s.kind {
                        tilus::ir::StmtKind::ThreadGroup { body, .. } => Some(body[0].loc.line),
                        _ => None,
                    })
                    .unwrap(),
            )
        });
    }
    match tilus::passes::compile_program(program) {
        Err(Error::Script(d)) => d,
        other => panic!("{s:?}: expected Error::Script, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_store_through_a_read_only_pointer_is_a_diagnostic() {
    let d = small_diagnostics(Small::ReadOnlyView);
    find(
        &d,
        "tma.shared_to_global writes through `arg0`, a read-only Ptr; declare it PtrMut",
        "bad",
    );
}

#[test]
fn a_store_needs_matching_dtypes_and_ranks() {
    let d = small_diagnostics(Small::WrongDtype);
    find(&d, "tma.shared_to_global: f16 tile into a f32 view", "bad");
    let d = small_diagnostics(Small::WrongRank);
    find(
        &d,
        "tma.shared_to_global: view `g2` has 1 dimensions, tile `s1` 2 and the offsets 1",
        "bad",
    );
}

#[test]
fn commits_and_waits_run_in_one_thread() {
    let d = small_diagnostics(Small::CommitOutsideOneThread);
    find(&d, "tma.commit_group runs in a group of 32 threads", "bad");
    let d = small_diagnostics(Small::WaitOutsideOneThread);
    find(&d, "tma.wait_group runs in a group of 32 threads", "bad");
}

// ------------------------------------------------------------------------------------------
// Interpreter rules: the same bugs, found at run time (past the verifier).
// ------------------------------------------------------------------------------------------

#[test]
fn the_interpreter_finds_a_missing_proxy_fence() {
    let (r, _) = interpret_unverified(Bug::NoFence, 64);
    let d = fault(r, Fault::MissingProxyFence, "store");
    assert!(d[0].message.contains("wrote with store_shared"), "{}", d[0]);
    assert_eq!(d[1].loc.line, line_of("store_shared"), "{}", d[1]);
}

#[test]
fn the_interpreter_finds_a_write_to_the_source_before_the_wait() {
    let (r, _) = interpret_unverified(Bug::WriteBeforeWait, 64);
    let d = fault(r, Fault::OverwriteBeforeWait, "rewrite");
    assert!(
        d[0].message.contains(
            "overwrites shared tensor `s_out` while a TMA store that reads it is unfinished"
        ),
        "{}",
        d[0]
    );
    assert_eq!(d[1].loc.line, line_of("store"), "{}", d[1]);
}

#[test]
fn the_interpreter_finds_a_store_never_waited_for() {
    let (r, _) = interpret_unverified(Bug::NoWait, 64);
    let d = fault(r, Fault::NotWaited, "store");
    assert!(
        d[0].message
            .contains("may still read shared tensor `s_out`"),
        "{}",
        d[0]
    );
}

#[test]
fn the_global_write_lands_at_the_wait() {
    // without the wait the bytes never reach global memory
    let (r, dst) = interpret_unverified(Bug::NoWait, 32);
    assert!(r.is_err());
    assert!(
        dst.iter().all(|x| x.is_nan()),
        "the store wrote without a wait"
    );
}

// ------------------------------------------------------------------------------------------
// Generated code and NVRTC.
// ------------------------------------------------------------------------------------------

#[test]
fn the_store_emits_a_bulk_tensor_copy_its_commit_and_its_wait() {
    let src = tilus::emit(&Epilogue { bug: Bug::None }, &[]).unwrap();
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
    let read = tilus::emit(
        &Epilogue {
            bug: Bug::ReuseAfterReadWait,
        },
        &[],
    )
    .unwrap();
    assert!(read.contains("tilus_bulk_wait_group_read<0>();"), "{read}");
}

#[test]
fn the_epilogue_compiles_with_nvrtc() {
    cache();
    for bug in [Bug::None, Bug::ReuseAfterReadWait, Bug::FreeBeforeWait] {
        let c = tilus::build(&Epilogue { bug }, &[]).unwrap();
        assert_eq!(c.report.spill_stores, 0, "{bug:?}");
    }
}

// ------------------------------------------------------------------------------------------
// The GPU.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_epilogue_is_exact_on_the_gpu() {
    cache();
    let device = tilus::runtime::Device::open(0).expect("a Hopper GPU");
    for bug in [Bug::None, Bug::ReuseAfterReadWait, Bug::FreeBeforeWait] {
        let jit = tilus::Jit::new(Epilogue { bug }, &device);
        for rows in [32usize, 100, 1, 4099] {
            let data = inputs(rows);
            let src = device.stream().clone_htod(&data).unwrap();
            let mut dst = device
                .stream()
                .clone_htod(&vec![f16::NAN; rows * COLS])
                .unwrap();
            jit.launch(device.stream(), (rows as i32, &src, &mut dst))
                .unwrap();
            let got = device.stream().clone_dtoh(&dst).unwrap();
            assert!(
                got.iter()
                    .zip(&data)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{bug:?} at {rows} rows"
            );
        }
    }
}
