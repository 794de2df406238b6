//! The scripts of `common::scripts` on the GPU, against the same expectations as on the
//! interpreter (`interp/`). Ignored without a GPU.

use crate::common::inputs::random_f16;
use crate::common::scripts::{
    epilogue_inputs, Branches, Epilogue, EpilogueBug, Groups, OneTile, OnesTimesB, Printing,
    TileCopy, EPILOGUE_COLS,
};
use crate::common::{cache_dir, child};
use half::f16;
use tilus::cudarc::driver::CudaSlice;
use tilus::runtime::Device;

fn upload(device: &Device, v: &[f32]) -> CudaSlice<f32> {
    device.stream().clone_htod(v).unwrap()
}

// ------------------------------------------------------------------------------------------
// memory and tma: TMA of f32 tiles without swizzle, the generic shared-to-register load, f32
// stores, runtime loop bounds.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn tile_copy_is_exact_at_odd_shapes() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for (m, n, rows, cols) in TileCopy::ODD_SHAPES {
        let data = TileCopy::input(m, n);
        let src = upload(&device, &data);
        let mut dst = upload(&device, &vec![f32::NAN; m * n]);
        let jit = tilus::Jit::new(TileCopy { rows, cols }, &device);
        jit.launch(device.stream(), (m as i32, n as i32, &src, &mut dst))
            .unwrap();
        let got = device.stream().clone_dtoh(&dst).unwrap();
        assert_eq!(got, data, "{m}x{n} with {rows}x{cols} tiles");
    }
}

// ------------------------------------------------------------------------------------------
// control and mbarrier: nested thread groups with register tiles of their own, plain
// arrivals counted by a barrier; conditionals and while loops.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_groups_store_their_own_rows_and_arrive() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &[f32::NAN; 512]);
    tilus::Jit::new(Groups, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got[..256].iter().all(|&x| x == 1.0), "{:?}", &got[..8]);
    assert!(got[256..].iter().all(|&x| x == 2.0), "{:?}", &got[256..264]);
}

/// The interpreter's `branches_and_while_loops_compute_each_blocks_row` on the GPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn branches_and_while_loops_compute_each_blocks_row() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &vec![0.0f32; Branches::BLOCKS * Branches::COLS]);
    tilus::Jit::new(Branches, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert_eq!(got, Branches::expected());
}

// ------------------------------------------------------------------------------------------
// The proxy fence: with it, ordinary shared stores feed a wgmma correctly.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn with_the_fence_the_gpu_computes_the_product() {
    cache_dir();
    let device = tilus::runtime::Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let b = OnesTimesB::input();
    let db = stream.clone_htod(&b).unwrap();
    let mut dc = stream.clone_htod(&vec![f32::NAN; 64 * 64]).unwrap();
    tilus::Jit::new(OnesTimesB { fence: 1 }, &device)
        .launch(stream, (&db, &mut dc))
        .unwrap();
    let c = stream.clone_dtoh(&dc).unwrap();
    let want = OnesTimesB::expected(&b);
    for (i, (x, y)) in c.iter().zip(&want).enumerate() {
        assert!((x - y).abs() <= 1e-4, "{i}: {x} vs {y}");
    }
}

// ------------------------------------------------------------------------------------------
// wgmma: both operand sources and both accumulators against a CPU reference.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn both_operand_sources_and_both_accumulators_compute_the_product() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for (i, (m, n, k)) in [(64, 128, 64), (64, 256, 32), (64, 8, 16), (128, 64, 64)]
        .into_iter()
        .enumerate()
    {
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let a = random_f16(mu * ku, 2 * i as u64 + 1);
        let b = random_f16(nu * ku, 2 * i as u64 + 2);
        let want = |r: usize, col: usize| -> f64 {
            (0..ku)
                .map(|x| a[r * ku + x].to_f64() * b[col * ku + x].to_f64())
                .sum()
        };
        let da = stream.clone_htod(&a).unwrap();
        let db = stream.clone_htod(&b).unwrap();
        for a_in_registers in [false, true] {
            let s = OneTile::<f32> {
                a_in_registers,
                ..OneTile::<f32>::new(m, n, k)
            };
            let mut dc = stream.clone_htod(&vec![f32::NAN; mu * nu]).unwrap();
            tilus::Jit::new(s.clone(), &device)
                .launch(stream, (&da, &db, &mut dc))
                .unwrap();
            let c = stream.clone_dtoh(&dc).unwrap();
            for r in 0..mu {
                for col in 0..nu {
                    let (got, w) = (c[r * nu + col] as f64, want(r, col));
                    assert!(
                        (got - w).abs() <= 1e-4 + 1e-4 * w.abs(),
                        "{s:?} ({r},{col}): {got} vs {w}"
                    );
                }
            }
        }
        // f16 accumulation rounds every partial sum to 11 bits
        let s = OneTile::<f16>::new(m, n, k);
        let mut dc = stream.clone_htod(&vec![f16::NAN; mu * nu]).unwrap();
        tilus::Jit::new(s.clone(), &device)
            .launch(stream, (&da, &db, &mut dc))
            .unwrap();
        let c = stream.clone_dtoh(&dc).unwrap();
        for r in 0..mu {
            for col in 0..nu {
                let (got, w) = (c[r * nu + col].to_f64(), want(r, col));
                assert!(
                    (got - w).abs() <= 2e-3 + 2e-3 * w.abs(),
                    "{s:?} ({r},{col}): {got} vs {w}"
                );
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// tma stores: the epilogue through shared memory and a TMA store.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_tma_store_epilogue_is_exact_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for bug in [
        EpilogueBug::None,
        EpilogueBug::ReuseAfterReadWait,
        EpilogueBug::FreeBeforeWait,
    ] {
        let jit = tilus::Jit::new(Epilogue { bug }, &device);
        for rows in [32usize, 100, 1, 4099] {
            let data = epilogue_inputs(rows);
            let src = device.stream().clone_htod(&data).unwrap();
            let nan = vec![f16::NAN; rows * EPILOGUE_COLS];
            let mut dst = device.stream().clone_htod(&nan).unwrap();
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

// ------------------------------------------------------------------------------------------
// arithmetic: every case of `common::arith` on every shape, against the interpreter's bits
// (where the case has no transcendental function) and the CPU reference.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn arithmetic_gives_the_interpreters_bits_and_meets_the_reference() {
    use crate::common::arith::{input, max_rel_diff, reference, ArithCase, ArithTile, SHAPES};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut failures = vec![];
    for (rows, cols, warps) in SHAPES {
        for case in ArithCase::ALL {
            let (m, n) = (3 * rows as usize - 1, 2 * cols as usize + 4);
            let x = input(m, n, (rows * 7 + cols) as u64 ^ 0x5eed);
            let script = ArithTile {
                rows,
                cols,
                warps,
                case,
            };
            let what = format!("{case:?} on {rows}x{cols}, {warps} warps");
            let mut on_cpu = vec![f32::NAN; m * n];
            tilus::interpret(&script, (m as i32, n as i32, &x[..], &mut on_cpu[..]))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let src = upload(&device, &x);
            let mut dst = upload(&device, &vec![f32::NAN; m * n]);
            tilus::Jit::new(script, &device)
                .launch(device.stream(), (m as i32, n as i32, &src, &mut dst))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = device.stream().clone_dtoh(&dst).unwrap();
            if case.bit_exact() {
                let same = got
                    .iter()
                    .zip(&on_cpu)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                if !same {
                    let i = (0..got.len()).find(|&i| got[i].to_bits() != on_cpu[i].to_bits());
                    let i = i.expect("a difference");
                    failures.push(format!(
                        "{what}: the GPU's bits differ from the interpreter's at {i}: {} vs {}",
                        got[i], on_cpu[i]
                    ));
                }
            } else {
                let d = max_rel_diff(&got, &on_cpu);
                if d > 2e-6 {
                    failures.push(format!("{what}: {d} from the interpreter"));
                }
            }
            let want = reference(case, &x, m, n, rows as usize, cols as usize);
            let d = max_rel_diff(&got, &want);
            if d > case.tolerance() {
                failures.push(format!("{what}: {d} from the reference"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ------------------------------------------------------------------------------------------
// debug: device printf prints the interpreter's text.
// ------------------------------------------------------------------------------------------

/// Set for the child process of the tests below: `gpu` or `interp`, the backend it runs
/// `Printing` on.
const PRINTING_CHILD: &str = "TILUS_TEST_PRINTING_CHILD";

/// Child of the tests below: runs `Printing` on the backend `TILUS_TEST_PRINTING_CHILD`
/// names, printing to standard output. On the GPU, device `printf` output reaches it when the
/// stream is synchronized, through the C library's buffer, which is flushed before libtest
/// reports the test, so that the kernel's text stays in one piece.
#[test]
fn child_printing() {
    let Some(backend) = std::env::var_os(PRINTING_CHILD) else {
        return;
    };
    extern "C" {
        fn fflush(stream: *mut std::ffi::c_void) -> std::ffi::c_int;
    }
    cache_dir();
    let input = Printing::input();
    if backend == "interp" {
        tilus::interpret(&Printing, (5, &input[..])).unwrap();
        return;
    }
    let device = Device::open(0).expect("a Hopper GPU");
    let src = upload(&device, &input);
    tilus::Jit::new(Printing, &device)
        .launch(device.stream(), (5, &src))
        .unwrap();
    device.stream().synchronize().unwrap();
    // SAFETY: `fflush(NULL)` flushes every output stream of the C library; it touches no
    // memory of this program.
    unsafe { fflush(std::ptr::null_mut()) };
}

/// What `Printing` prints on `backend` (in a child process), and what the interpreter
/// captures in this one.
fn printed_by_child(backend: &str) -> (String, String) {
    let input = Printing::input();
    let opts = tilus::interp::Options {
        output: tilus::interp::Output::Capture,
        ..Default::default()
    };
    let want = tilus::interpret_with(&Printing, (5, &input[..]), &opts)
        .unwrap()
        .printed;
    assert!(want.lines().count() > 50, "{want}");
    let out = child::command(&child::test_name(module_path!(), "child_printing"), None)
        .env(PRINTING_CHILD, backend)
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{got}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (got, want)
}

/// The interpreter's standard output carries the text it captures, in one piece.
#[test]
fn the_interpreter_prints_to_standard_output_what_it_captures() {
    let (got, want) = printed_by_child("interp");
    assert!(
        got.contains(&want),
        "the child printed:\n{got}\nthe interpreter captured:\n{want}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_printf_prints_the_interpreters_text() {
    let (got, want) = printed_by_child("gpu");
    assert!(
        got.contains(&want),
        "the GPU printed:\n{got}\nthe interpreter printed:\n{want}"
    );
}
