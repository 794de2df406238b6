//! The scripts of `common::scripts` on the GPU, against the same expectations as on the
//! interpreter (`interp/`). Ignored without a GPU.

use crate::common::inputs::{fresh_seed, random_f16, random_f32};
use crate::common::scripts::windows::{WgmmaWindows, WINDOW};
use crate::common::scripts::{
    epilogue_inputs, Branches, ClusterMulticast, ClusterPairs, ClusterSignals, Epilogue,
    EpilogueBug, FastDivide, GroupCopies, GroupSyncs, Groups, OneTile, OnesTimesB, PersistentItems,
    Printing, RegisterSplit, RunningStats, TileCopy, WarpArrivals, EPILOGUE_COLS,
};
use crate::common::staged::{PipelineStream, StagedMatmul, StagedSum};
use crate::common::views::{self, ColumnSlice, DotViews, LoadedViews, ShapeViews};
use crate::common::{cache_dir, child};
use half::f16;
use tilus::cudarc::driver::CudaSlice;
use tilus::lang::PtrMut;
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

/// `thread_groups` on the GPU: each warp group of the one copy writes its own row and
/// arrives once, as two `warp_group`s do.
#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_of_a_group_run_with_their_own_index_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for copies in [true, false] {
        let mut out = device.stream().clone_htod(&[0i32; 512]).unwrap();
        let script = GroupCopies {
            copies,
            one_stage: false,
        };
        tilus::Jit::new(script.clone(), &device)
            .launch(device.stream(), (&mut out,))
            .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        assert!(
            got[..256].iter().all(|&x| x == 1),
            "{script:?}: {:?}",
            &got[..8]
        );
        assert!(
            got[256..].iter().all(|&x| x == 11),
            "{script:?}: {:?}",
            &got[256..264]
        );
    }
}

/// Fast division on the GPU: the launch packs the host's multiplier and shift, the kernel
/// divides with them, exactly; a divisor below one is refused before anything runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_divmod_divides_exactly_and_bad_divisors_launch_nothing() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let jit = tilus::Jit::new(FastDivide, &device);
    for case in FastDivide::CASES {
        let mut out = device
            .stream()
            .clone_htod(&vec![-1i32; FastDivide::BLOCKS as usize * 2])
            .unwrap();
        jit.launch(device.stream(), (case.0, case.1, case.2, &mut out))
            .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        assert_eq!(got, FastDivide::reference(case), "{case:?}");
    }
    let mut out = device.stream().clone_htod(&[-1i32; 128]).unwrap();
    let err = jit
        .launch(device.stream(), (0, 0, 1, &mut out))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("a fast divisor must be between 1 and"),
        "{err}"
    );
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got.iter().all(|&v| v == -1), "nothing ran");
}

/// Four arrivals of 32 complete a barrier of 128 (a count the hardware ignored would hang
/// the wait, and the runner's timeout fails the test).
#[test]
#[ignore = "needs a CUDA GPU"]
fn arrivals_with_a_count_complete_the_phase() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &[f32::NAN; 128]);
    tilus::Jit::new(WarpArrivals, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got.iter().all(|&x| x == 3.0), "{:?}", &got[..8]);
}

/// A producer warp group gives registers back and two consumer warp groups take the whole
/// pool (an `inc` beyond the pool would hang, and the runner's timeout fails the test).
#[test]
#[ignore = "needs a CUDA GPU"]
fn registers_move_between_warp_groups() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &[f32::NAN; 384]);
    tilus::Jit::new(RegisterSplit, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got[..256].iter().all(|&x| x == 2.0), "{:?}", &got[..8]);
    assert!(got[256..].iter().all(|&x| x == 3.0), "{:?}", &got[256..264]);
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

/// The interpreter's `assigned_tiles_carry_running_statistics_through_a_runtime_loop` on the
/// GPU: tiles carried through a runtime loop with `assign_tile`, bit-exact against the host.
#[test]
#[ignore = "needs a CUDA GPU"]
fn assigned_tiles_carry_running_statistics_through_a_runtime_loop() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let (rows, cols) = (RunningStats::ROWS, RunningStats::COLS);
    let jit = tilus::Jit::new(RunningStats, &device);
    for blocks in [0usize, 1, 7] {
        let x = random_f32(rows * cols * blocks.max(1), fresh_seed());
        let dx = upload(&device, &x);
        let mut out = upload(&device, &vec![f32::NAN; 3 * rows * cols]);
        jit.launch(device.stream(), (blocks as i32, &dx, &mut out))
            .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        let want = RunningStats::expected(&x, blocks);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{blocks} blocks");
    }
}

/// The interpreter's index and mask tests (`interp/masks.rs`) on the GPU: an index grid in an
/// mma accumulator's fragment layout, and causal, length-masked row sums and maxima.
#[test]
#[ignore = "needs a CUDA GPU"]
fn index_tiles_and_masks_agree_with_the_host() {
    use crate::common::scripts::masks::{CausalRows, IndexOnAccumulator};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for n8 in [1, 2, 4] {
        for broadcast in [false, true] {
            let s = IndexOnAccumulator { n8, broadcast };
            let n = 8 * n8 as usize;
            let (a, b) = (
                random_f16(16 * 16, fresh_seed()),
                random_f16(n * 16, fresh_seed()),
            );
            let (da, db) = (
                device.stream().clone_htod(&a).unwrap(),
                device.stream().clone_htod(&b).unwrap(),
            );
            let mut out = upload(&device, &vec![f32::NAN; 16 * n]);
            tilus::Jit::new(s, &device)
                .launch(device.stream(), (&da, &db, &mut out))
                .unwrap();
            let got = device.stream().clone_dtoh(&out).unwrap();
            for (i, (g, w)) in got.iter().zip(&s.expected(&a, &b)).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                    "{s:?} [{i}]: {g} vs {w}"
                );
            }
        }
    }
    let masks = [
        (0, 0, 1 << 20),
        (500, 0, 1 << 20),
        (0, 300, 1 << 20),
        (7, 3, 20),
    ];
    for (rows, cols, warps) in [(16, 64, 4), (64, 32, 4), (8, 128, 2), (32, 32, 1)] {
        let s = CausalRows { rows, cols, warps };
        let jit = tilus::Jit::new(s, &device);
        let m = 3 * rows as usize - 1;
        let x = random_f32(m * cols as usize, fresh_seed());
        let dx = upload(&device, &x);
        for mask in masks {
            let (q0, k0, len) = mask;
            let mut out = upload(&device, &vec![f32::NAN; 2 * m]);
            jit.launch(device.stream(), (m as i32, q0, k0, len, &dx, &mut out))
                .unwrap();
            let got = device.stream().clone_dtoh(&out).unwrap();
            for (i, (g, w)) in got.iter().zip(&s.expected(&x, m, mask)).enumerate() {
                let close = g == w || (g - w).abs() <= 1e-5 * w.abs().max(1.0);
                assert!(close, "{s:?} {mask:?} [{i}]: {g} vs {w}");
            }
        }
        // argmax and argmin on values with ties (quantized to 1/8)
        let s = crate::common::scripts::masks::ArgExtremes { rows, cols, warps };
        let x: Vec<f32> = random_f32(m * cols as usize, fresh_seed())
            .iter()
            .map(|v| (v * 8.0).floor() / 8.0)
            .collect();
        let dx = upload(&device, &x);
        let mut vals = upload(&device, &vec![f32::NAN; 2 * m]);
        let mut at = device.stream().clone_htod(&vec![-1i32; 2 * m]).unwrap();
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (m as i32, &dx, &mut vals, &mut at))
            .unwrap();
        let (want_vals, want_at) = s.expected(&x, m);
        assert_eq!(
            device.stream().clone_dtoh(&vals).unwrap(),
            want_vals,
            "{s:?}"
        );
        assert_eq!(device.stream().clone_dtoh(&at).unwrap(), want_at, "{s:?}");
        // Philox: the host's bits for rand and randint, a few ulps for randn
        let s = crate::common::scripts::masks::RandomTiles { rows, cols, warps };
        let seed = (fresh_seed() as i32) | 1;
        let n = m * cols as usize;
        let mut u = upload(&device, &vec![f32::NAN; n]);
        let mut z = upload(&device, &vec![f32::NAN; n]);
        let mut i = device.stream().clone_htod(&vec![0u32; n]).unwrap();
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (seed, m as i32, &mut u, &mut z, &mut i))
            .unwrap();
        let (wu, wz, wi) = s.expected(seed, m);
        assert_eq!(
            device.stream().clone_dtoh(&i).unwrap(),
            wi,
            "{s:?} seed {seed}"
        );
        assert_eq!(
            device.stream().clone_dtoh(&u).unwrap(),
            wu,
            "{s:?} seed {seed}"
        );
        let got = device.stream().clone_dtoh(&z).unwrap();
        for (j, (g, w)) in got.iter().zip(&wz).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{s:?} randn [{j}]: {g} vs {w}"
            );
        }
    }
}

/// The interpreter's layout conversion tests (`interp/convert.rs`) on the GPU: a loaded tile
/// converted to an mma operand through shared memory, an accumulator converted to the next
/// product's operand in registers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn widths_that_do_not_divide_agree_with_the_host() {
    use crate::common::scripts::widths::AnyWidth;
    let device = Device::open(0).unwrap();
    for s in AnyWidth::FORMS {
        let (x, w, y0) = s.inputs();
        let mut y = upload(&device, &y0);
        let mut stats = upload(&device, &vec![f32::NAN; 3 * s.rows as usize]);
        tilus::Jit::new(s, &device)
            .launch(
                device.stream(),
                (
                    &upload(&device, &x),
                    &upload(&device, &w),
                    &mut y,
                    &mut stats,
                ),
            )
            .unwrap();
        let y = device.stream().clone_dtoh(&y).unwrap();
        let stats = device.stream().clone_dtoh(&stats).unwrap();
        s.check((&x, &w, &y0), &y, &stats);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn layout_conversions_agree_with_the_host() {
    use crate::common::scripts::convert::{ChainedProducts, ConvertedOperand};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let put = |v: &[f16]| device.stream().clone_htod(v).unwrap();
    let close = |got: &[f32], want: &[f32], what: String| {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                "{what} [{i}]: {g} vs {w}"
            );
        }
    };
    for s in ConvertedOperand::both_forms() {
        let (m, n, k) = (s.m as usize, s.n as usize, 16 * s.k16 as usize);
        let (a, b) = (
            random_f16(m * k, fresh_seed()),
            random_f16(n * k, fresh_seed()),
        );
        let mut c = upload(&device, &vec![f32::NAN; m * n]);
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (&put(&a), &put(&b), &mut c))
            .unwrap();
        let got = device.stream().clone_dtoh(&c).unwrap();
        close(&got, &s.expected(&a, &b), format!("{s:?}"));
    }
    for s in ConvertedOperand::FORMS.map(crate::common::scripts::convert::CastOperand) {
        let (m, n, k) = (s.0.m as usize, s.0.n as usize, 16 * s.0.k16 as usize);
        let (a, b) = (
            random_f32(m * k, fresh_seed()),
            random_f16(n * k, fresh_seed()),
        );
        let mut c = upload(&device, &vec![f32::NAN; m * n]);
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (&upload(&device, &a), &put(&b), &mut c))
            .unwrap();
        let got = device.stream().clone_dtoh(&c).unwrap();
        close(&got, &s.expected(&a, &b), format!("{s:?}"));
    }
    for (d, implicit) in [8, 16, 64]
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
    {
        let s = ChainedProducts { d, implicit };
        let n = 16 * d as usize;
        let (q, kt, v) = (
            random_f16(256, fresh_seed()),
            random_f16(256, fresh_seed()),
            random_f16(n, fresh_seed()),
        );
        let mut o = upload(&device, &vec![f32::NAN; n]);
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (&put(&q), &put(&kt), &put(&v), &mut o))
            .unwrap();
        let got = device.stream().clone_dtoh(&o).unwrap();
        close(&got, &s.expected(&q, &kt, &v), format!("{s:?}"));
    }
    {
        use crate::common::scripts::convert::ImplicitConvert;
        let (x, y) = (
            random_f32(1024, fresh_seed()),
            random_f32(1024, fresh_seed()),
        );
        let mut o = upload(&device, &vec![f32::NAN; 1024]);
        tilus::Jit::new(ImplicitConvert, &device)
            .launch(
                device.stream(),
                (&upload(&device, &x), &upload(&device, &y), &mut o),
            )
            .unwrap();
        let got = device.stream().clone_dtoh(&o).unwrap();
        close(
            &got,
            &ImplicitConvert::expected(&x, &y),
            "ImplicitConvert".into(),
        );
    }
    for (d, implicit) in [16, 64].into_iter().flat_map(|d| [(d, false), (d, true)]) {
        use crate::common::scripts::convert::ChainedWgmma;
        let s = ChainedWgmma { d, implicit };
        let (keys, head) = (ChainedWgmma::KEYS, ChainedWgmma::HEAD);
        let (q, kt, v) = (
            random_f16(64 * head, fresh_seed()),
            random_f16(keys * head, fresh_seed()),
            random_f16(keys * d as usize, fresh_seed()),
        );
        let mut o = upload(&device, &vec![f32::NAN; 64 * d as usize]);
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (&put(&q), &put(&kt), &put(&v), &mut o))
            .unwrap();
        let got = device.stream().clone_dtoh(&o).unwrap();
        close(&got, &s.expected(&q, &kt, &v), format!("{s:?}"));
    }
}

/// The interpreter's scan test (`interp/masks.rs`) on the GPU: the host's bits, each line
/// combined in order, in registers and through shared memory.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scans_agree_with_the_host_bit_for_bit() {
    use crate::common::scripts::masks::Scans;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for (rows, cols, warps) in Scans::SHAPES {
        for dim in [0, 1] {
            let s = Scans {
                rows,
                cols,
                warps,
                dim,
            };
            let m = 40 * rows as usize + 3;
            let n = m * cols as usize;
            let x: Vec<f32> = random_f32(n, fresh_seed())
                .iter()
                .map(|v| 1.0 + v / 8.0)
                .collect();
            let xi: Vec<i32> = (0..n)
                .map(|i| (i as i32).wrapping_mul(2_654_435_761u32 as i32))
                .collect();
            let (dx, dxi) = (
                upload(&device, &x),
                device.stream().clone_htod(&xi).unwrap(),
            );
            let mut out = upload(&device, &vec![f32::NAN; 5 * n]);
            let mut outi = device.stream().clone_htod(&vec![0i32; n]).unwrap();
            tilus::Jit::new(s, &device)
                .launch(device.stream(), (m as i32, &dx, &dxi, &mut out, &mut outi))
                .unwrap();
            let (want, wanti) = s.expected(&x, &xi, m);
            assert_eq!(device.stream().clone_dtoh(&outi).unwrap(), wanti, "{s:?}");
            let got = device.stream().clone_dtoh(&out).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{s:?}");
        }
    }
}

/// The interpreter's bit-view test (`interp/masks.rs`) on the GPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bit_views_keep_the_bits() {
    use crate::common::scripts::masks::BitViews;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for (rows, cols, warps) in crate::common::scripts::masks::VIEW_SHAPES {
        let s = BitViews { rows, cols, warps };
        let m = 100 * rows as usize + 1;
        let n = m * cols as usize;
        let x = random_f32(n, fresh_seed());
        let h: Vec<f16> = random_f32(n, fresh_seed())
            .iter()
            .map(|&v| f16::from_f32(v * 100.0))
            .collect();
        let (dx, dh) = (upload(&device, &x), device.stream().clone_htod(&h).unwrap());
        let mut bits = device.stream().clone_htod(&vec![0u32; n]).unwrap();
        let mut next = upload(&device, &vec![f32::NAN; n]);
        let mut hb = device
            .stream()
            .clone_htod(&vec![half::bf16::ZERO; n])
            .unwrap();
        tilus::Jit::new(s, &device)
            .launch(
                device.stream(),
                (m as i32, &dx, &dh, &mut bits, &mut next, &mut hb),
            )
            .unwrap();
        let (wb, wn, wh) = BitViews::expected(&x, &h);
        assert_eq!(device.stream().clone_dtoh(&bits).unwrap(), wb, "{s:?}");
        let f32_bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            f32_bits(device.stream().clone_dtoh(&next).unwrap()),
            f32_bits(wn),
            "{s:?}"
        );
        let got: Vec<u16> = device
            .stream()
            .clone_dtoh(&hb)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(
            got,
            wh.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{s:?}"
        );
    }
}

/// An assumed multiple on the GPU: kept, the copy moves 16 bytes per access and is exact;
/// broken, the launch is refused before anything runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_assumption_is_checked_at_launch() {
    use crate::common::scripts::masks::AssumedRows;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let jit = tilus::Jit::new(AssumedRows { assume: true }, &device);
    for n in [128usize, 4100] {
        let x = random_f32(300 * n, fresh_seed());
        let dx = upload(&device, &x);
        let mut out = upload(&device, &vec![f32::NAN; 300 * n]);
        jit.launch(device.stream(), (300, n as i32, &dx, &mut out))
            .unwrap();
        assert_eq!(device.stream().clone_dtoh(&out).unwrap(), x, "n = {n}");
    }
    let x = random_f32(300 * 130, 1);
    let dx = upload(&device, &x);
    let mut out = upload(&device, &vec![f32::NAN; 300 * 130]);
    let e = jit
        .launch(device.stream(), (300, 130, &dx, &mut out))
        .unwrap_err();
    assert!(e.to_string().contains("it is 130"), "{e}");
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got.iter().all(|v| v.is_nan()), "nothing ran");
}

/// The interpreter's repetition test (`interp/convert.rs`) on the GPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn repeats_agree_with_the_host() {
    use crate::common::scripts::convert::Repeats;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for s in Repeats::FORMS {
        let (r, c) = (s.rows as usize, s.cols as usize);
        let (x, sc) = (
            random_f32(r * c, fresh_seed()),
            random_f32(r * c / 8, fresh_seed()),
        );
        let (dx, ds) = (upload(&device, &x), upload(&device, &sc));
        let mut t = upload(&device, &vec![f32::NAN; 3 * r * c]);
        let mut i = upload(&device, &vec![f32::NAN; 2 * r * c]);
        let mut p = upload(&device, &vec![f32::NAN; r * c]);
        tilus::Jit::new(s, &device)
            .launch(device.stream(), (&dx, &ds, &mut t, &mut i, &mut p))
            .unwrap();
        let (wt, wi, wp) = s.expected(&x, &sc);
        assert_eq!(device.stream().clone_dtoh(&t).unwrap(), wt, "{s:?}");
        assert_eq!(device.stream().clone_dtoh(&i).unwrap(), wi, "{s:?}");
        assert_eq!(device.stream().clone_dtoh(&p).unwrap(), wp, "{s:?}");
    }
}

/// The interpreter's scatter test (`interp/memory.rs`) on the GPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scatters_agree_with_the_host() {
    use crate::common::scripts::global::Scatters;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for s in Scatters::FORMS {
        let m = 300 * s.rows as usize - 5;
        let n = s.cols as usize;
        let x = random_f32(m * n, fresh_seed());
        let perm: Vec<i32> = (0..m)
            .map(|i| {
                if i % 7 == 3 {
                    (m + 2) as i32
                } else {
                    (m - 1 - i) as i32
                }
            })
            .collect();
        let bins: Vec<i32> = (0..m * n).map(|i| ((i * 7919) % 16) as i32).collect();
        let (dx, dp, db) = (
            upload(&device, &x),
            device.stream().clone_htod(&perm).unwrap(),
            device.stream().clone_htod(&bins).unwrap(),
        );
        let mut out = upload(&device, &vec![f32::NAN; m * n]);
        let mut hist = upload(&device, &[0.0f32; 16]);
        tilus::Jit::new(s, &device)
            .launch(
                device.stream(),
                (m as i32, &dx, &dp, &db, &mut out, &mut hist),
            )
            .unwrap();
        let (want, want_hist) = s.expected(&x, &perm, &bins, m);
        let got = device.stream().clone_dtoh(&out).unwrap();
        let same = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
        assert!(got.iter().zip(&want).all(|(a, b)| same(*a, *b)), "{s:?}");
        let got = device.stream().clone_dtoh(&hist).unwrap();
        for (g, w) in got.iter().zip(&want_hist) {
            assert!(
                (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                "{s:?}: {g} vs {w}"
            );
        }
    }
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
// wgmma: both operand sources and both accumulators, and windows of an accumulator, against
// a CPU reference.
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

#[test]
#[ignore = "needs a CUDA GPU"]
fn products_into_windows_of_the_accumulator_overwrite_or_add_to_their_columns() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let seed = fresh_seed();
    let a = random_f16(64 * 64, seed);
    let b = random_f16(2 * WINDOW * 64, seed + 1);
    for swapped in [false, true] {
        let script = WgmmaWindows {
            early: false,
            swapped,
        };
        let want = script.expect(&a, &b);
        let (da, db) = (
            stream.clone_htod(&a).unwrap(),
            stream.clone_htod(&b).unwrap(),
        );
        let mut dc = stream.clone_htod(&vec![f32::NAN; want.len()]).unwrap();
        tilus::Jit::new(script, &device)
            .launch(stream, (&da, &db, &mut dc))
            .unwrap();
        let c = stream.clone_dtoh(&dc).unwrap();
        for (i, (got, w)) in c.iter().zip(&want).enumerate() {
            let got = *got as f64;
            assert!(
                (got - w).abs() <= 1e-4 + 1e-4 * w.abs(),
                "seed {seed}, swapped {swapped}, element {i}: {got} vs {w}"
            );
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
            let script = ArithTile::new(case, (rows, cols, warps));
            let what = format!("{case:?} on {rows}x{cols}, {warps} warps");
            eprintln!("{what}");
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
                // the approximations the case asked for are the GPU's, not the interpreter's
                let allowed = if case == ArithCase::FastMath {
                    case.tolerance()
                } else {
                    2e-6
                };
                if d > allowed {
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
// Global memory through registers: the scripts of `interp/memory.rs` against the same CPU
// references (strided views, vector loads with their masks, atomics across blocks).
// ------------------------------------------------------------------------------------------

use crate::common::scripts::global::{
    small_ints, ColumnStats, LastBlockSums, MaskedLoad, SegmentSums, SharedBytes, SplitKMatmul,
    SplitSum, StridedCopy, StridedTma, SwapTiles, Tickets,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_strided_copy_through_registers_is_exact_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for column_major in [false, true] {
        for (m, n, ld, rows, cols) in StridedCopy::SHAPES {
            let s = StridedCopy {
                rows,
                cols,
                column_major,
            };
            let src = s.input(m, n, ld);
            let nan = f16::from_f32(f32::NAN);
            let d_src = stream.clone_htod(&src).unwrap();
            let mut d_dst = stream.clone_htod(&vec![nan; ld * m]).unwrap();
            tilus::Jit::new(s, &device)
                .launch(stream, (m as i32, n as i32, ld as i32, &d_src, &mut d_dst))
                .unwrap();
            let got = stream.clone_dtoh(&d_dst).unwrap();
            let want = s.expected(m, n, ld, &src, nan);
            for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    x.to_bits(),
                    y.to_bits(),
                    "{s:?} {m}x{n} ld {ld}: element {i}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_masked_load_fills_outside_the_view_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let src = small_ints(40 * 64, 3);
    let d_src = stream.clone_htod(&src).unwrap();
    let s = MaskedLoad { fill: -7 };
    let jit = tilus::Jit::new(s, &device);
    for (m, n, om, q) in [
        (40, 61, 30, 13),
        (40, 61, -3, -1),
        (10, 7, 0, 0),
        (40, 64, 5, 9),
    ] {
        let mut d_dst = stream.clone_htod(&vec![f32::NAN; 16 * 32]).unwrap();
        jit.launch(stream, (m, n, 64, om, q, &d_src, &mut d_dst))
            .unwrap();
        let got = stream.clone_dtoh(&d_dst).unwrap();
        assert_eq!(
            got,
            s.expected(m, n, 64, om, q, &src),
            "{m}x{n} at ({om}, 4*{q})"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn atomic_adds_of_many_blocks_sum_split_k_style_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for (splits, m, n, rows, cols) in [(3, 50, 70, 16, 32), (5, 64, 64, 32, 64), (1, 9, 5, 8, 8)] {
        let src = small_ints(splits * m * n, 7);
        let init = small_ints(m * n, 8);
        let d_src = stream.clone_htod(&src).unwrap();
        let mut d_dst = stream.clone_htod(&init).unwrap();
        let s = SplitSum { rows, cols };
        tilus::Jit::new(s, &device)
            .launch(
                stream,
                (splits as i32, m as i32, n as i32, &d_src, &mut d_dst),
            )
            .unwrap();
        let got = stream.clone_dtoh(&d_dst).unwrap();
        assert_eq!(got, SplitSum::expected(splits, m, n, &src, &init), "{s:?}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn atomic_add_max_and_min_combine_columns_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for (m, n, rows, cols) in [(70, 45, 16, 32), (128, 64, 64, 64)] {
        let src = small_ints(m * n, 11);
        let d_src = stream.clone_htod(&src).unwrap();
        let mut sums = stream.clone_htod(&vec![0.0f32; n]).unwrap();
        let mut maxs = stream.clone_htod(&vec![f32::NEG_INFINITY; n]).unwrap();
        let mut mins = stream.clone_htod(&vec![f32::INFINITY; n]).unwrap();
        let s = ColumnStats { rows, cols };
        tilus::Jit::new(s, &device)
            .launch(
                stream,
                (m as i32, n as i32, &d_src, &mut sums, &mut maxs, &mut mins),
            )
            .unwrap();
        let got = (
            stream.clone_dtoh(&sums).unwrap(),
            stream.clone_dtoh(&maxs).unwrap(),
            stream.clone_dtoh(&mins).unwrap(),
        );
        assert_eq!(got, ColumnStats::expected(m, n, &src), "{s:?}");
    }
}

/// Bytes through shared memory on the GPU: stored and loaded one byte at a time, so odd
/// addresses are no fault and no neighbour is overwritten; read back in runs of 8, each
/// byte of a load in its place.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bytes_through_shared_memory_keep_their_places_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let x: Vec<u8> = (0..16 * 32).map(|i| (i * 37 % 251) as u8).collect();
    let dx = stream.clone_htod(&x).unwrap();
    for runs in [false, true] {
        let mut out = stream.clone_htod(&vec![0u8; 16 * 32]).unwrap();
        tilus::Jit::new(SharedBytes { runs }, &device)
            .launch(stream, (&dx, &mut out))
            .unwrap();
        assert_eq!(stream.clone_dtoh(&out).unwrap(), x, "runs: {runs}");
    }
}

/// Segment bounds and weights read from memory by every thread (`load_global_scalar`), on the
/// GPU as on the interpreter: exact sums of small integers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scalars_read_from_memory_bound_each_block_s_segment_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let lens = [5, 0, 1, 31, 32, 33, 1000, 7, 64];
    let (offsets, x, weights) = SegmentSums::inputs(&lens);
    let n = x.len();
    let (dx, doff, dw) = (
        stream.clone_htod(&x).unwrap(),
        stream.clone_htod(&offsets).unwrap(),
        stream.clone_htod(&weights).unwrap(),
    );
    let mut out = stream.clone_htod(&vec![f32::NAN; lens.len() + 1]).unwrap();
    tilus::Jit::new(SegmentSums, &device)
        .launch(
            stream,
            (lens.len() as i32, n as i32, &dx, &doff, &dw, &mut out),
        )
        .unwrap();
    let out = stream.clone_dtoh(&out).unwrap();
    assert_eq!(out, SegmentSums::reference(&x, &offsets, &weights));
}

/// On the GPU the blocks take the tickets in any order: the order is a permutation, and
/// exactly one block wins the compare-and-swap.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scalar_atomics_hand_out_tickets_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let nb = 333usize;
    let mut counter = stream.clone_htod(&[0i32, -1000, 1000]).unwrap();
    let mut order = stream.clone_htod(&vec![-1i32; nb]).unwrap();
    let mut flag = stream.clone_htod(&[0u32]).unwrap();
    let mut cas_old = stream.clone_htod(&vec![u32::MAX; nb]).unwrap();
    tilus::Jit::new(Tickets, &device)
        .launch(
            stream,
            (nb as i32, &mut counter, &mut order, &mut flag, &mut cas_old),
        )
        .unwrap();
    let counter = stream.clone_dtoh(&counter).unwrap();
    assert_eq!(counter, vec![nb as i32, nb as i32 - 1, 0]);
    let mut order = stream.clone_dtoh(&order).unwrap();
    order.sort();
    assert_eq!(order, (0..nb as i32).collect::<Vec<_>>());
    let flag = stream.clone_dtoh(&flag).unwrap()[0];
    let cas_old = stream.clone_dtoh(&cas_old).unwrap();
    let winner = flag as usize - 1;
    assert_eq!(cas_old[winner], 0);
    for (b, &x) in cas_old.iter().enumerate() {
        assert!(b == winner || x == flag, "block {b}: {x}, flag {flag}");
    }
}

/// On the GPU, where the blocks run at once: the block that takes the last ticket sees every
/// other block's row, which each fenced (`fence_gpu`) before its ticket, and sums them
/// exactly; a second launch over the same workspace (ticket reset) gives the same sums.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_block_with_the_last_ticket_sums_every_block_s_row_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let nb = 1000usize;
    let rows: Vec<i32> = (0..nb * 32)
        .map(|i| (i * 7919 % 1000) as i32 - 500)
        .collect();
    let d_rows = stream.clone_htod(&rows).unwrap();
    let mut work = stream.clone_htod(&vec![0i32; nb * 32]).unwrap();
    let jit = tilus::Jit::new(LastBlockSums, &device);
    for _ in 0..2 {
        let mut ticket = stream.clone_htod(&[0i32]).unwrap();
        let mut out = stream.clone_htod(&[-1i32; 32]).unwrap();
        jit.launch(
            stream,
            (nb as i32, &d_rows, &mut work, &mut ticket, &mut out),
        )
        .unwrap();
        assert_eq!(
            stream.clone_dtoh(&out).unwrap(),
            LastBlockSums::reference(&rows)
        );
        assert_eq!(stream.clone_dtoh(&ticket).unwrap(), vec![nb as i32]);
        // poison the rows the next launch stores again
        work = stream.clone_htod(&vec![i32::MIN; nb * 32]).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tile_exchange_and_compare_and_swap_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let (m, n) = (40usize, 70usize);
    let x0: Vec<i32> = (0..m * n).map(|i| i as i32).collect();
    let y: Vec<i32> = (0..m * n).map(|i| -(i as i32) - 1).collect();
    let z0 = small_ints(m * n, 5);
    let expect: Vec<f32> = z0
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 0 { v } else { v + 0.5 })
        .collect();
    let val = small_ints(m * n, 6);
    let mut dx = stream.clone_htod(&x0).unwrap();
    let dy = stream.clone_htod(&y).unwrap();
    let mut dxo = stream.clone_htod(&vec![0i32; m * n]).unwrap();
    let mut dz = stream.clone_htod(&z0).unwrap();
    let de = stream.clone_htod(&expect).unwrap();
    let dv = stream.clone_htod(&val).unwrap();
    let mut dzo = stream.clone_htod(&vec![f32::NAN; m * n]).unwrap();
    tilus::Jit::new(SwapTiles, &device)
        .launch(
            stream,
            (
                m as i32, n as i32, &mut dx, &dy, &mut dxo, &mut dz, &de, &dv, &mut dzo,
            ),
        )
        .unwrap();
    assert_eq!(stream.clone_dtoh(&dx).unwrap(), y);
    assert_eq!(stream.clone_dtoh(&dxo).unwrap(), x0);
    assert_eq!(stream.clone_dtoh(&dzo).unwrap(), z0);
    let z = stream.clone_dtoh(&dz).unwrap();
    for i in 0..m * n {
        let want = if i % 2 == 0 { val[i] } else { z0[i] };
        assert_eq!(z[i], want, "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_copies_through_a_strided_view_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let src: Vec<f32> = (0..8 * 24).map(|i| i as f32).collect();
    let d_src = stream.clone_htod(&src).unwrap();
    let mut d_dst = stream.clone_htod(&vec![f32::NAN; 8 * 16]).unwrap();
    let jit = tilus::Jit::new(StridedTma, &device);
    jit.launch(stream, (6, 24, &d_src, &mut d_dst)).unwrap();
    assert_eq!(
        stream.clone_dtoh(&d_dst).unwrap(),
        StridedTma::expected(6, 24)
    );
    let err = jit.launch(stream, (6, 22, &d_src, &mut d_dst)).unwrap_err();
    assert!(
        err.to_string()
            .contains("a row stride of 88 bytes is not a multiple of 16"),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_split_k_matmul_adds_its_partial_products_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let jit = tilus::Jit::new(SplitKMatmul, &device);
    for (m, n, kk) in [(64usize, 128usize, 96usize), (100, 130, 64), (64, 128, 40)] {
        let (a, b) = crate::common::inputs::matmul_inputs(m, n, kk);
        let init = small_ints(m * n, 2);
        let (da, db) = (
            stream.clone_htod(&a).unwrap(),
            stream.clone_htod(&b).unwrap(),
        );
        let mut dc = stream.clone_htod(&init).unwrap();
        jit.launch(stream, (m as i32, n as i32, kk as i32, &da, &db, &mut dc))
            .unwrap();
        let want = SplitKMatmul::expected(m, n, kk, &a, &b, &init);
        assert_eq!(stream.clone_dtoh(&dc).unwrap(), want, "{m}x{n}x{kk}");
    }
}

// ------------------------------------------------------------------------------------------
// Float scalar arguments of every width: the parameter bits the runtime passes.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_scalar_arguments_reach_the_kernel_exactly() {
    use crate::common::arith::{input, FloatAffine};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let n = 1000;
    let x = input(n, 1, 78);
    let (alpha, beta, gamma) = FloatAffine::ARGS;
    let src = upload(&device, &x);
    let mut dst = upload(&device, &vec![f32::NAN; n]);
    tilus::Jit::new(FloatAffine, &device)
        .launch(
            device.stream(),
            (n as i32, alpha, beta, gamma, &src, &mut dst),
        )
        .unwrap();
    let got = device.stream().clone_dtoh(&dst).unwrap();
    let want = FloatAffine::reference(&x);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "element {i}: {g} vs {w}");
    }
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

// ------------------------------------------------------------------------------------------
// Staged tiles (`sa.at(s)`): a TMA pipeline through the stages of one tile (with padded
// stages too) and a double-buffered wgmma pipeline, against CPU references on fresh inputs.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_staged_tma_pipeline_sums_its_tiles_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let seed = fresh_seed();
    for (i, (rows, cols)) in StagedSum::SHAPES.into_iter().enumerate() {
        let jit = tilus::Jit::new(StagedSum::new(rows, cols), &device);
        for tiles in [1usize, 3, 8] {
            let (r, c) = (rows as usize, cols as usize);
            let input = random_f32(tiles * r * c, seed + 16 * i as u64 + tiles as u64);
            let src = upload(&device, &input);
            let mut dst = upload(&device, &vec![f32::NAN; r * c]);
            jit.launch(device.stream(), (tiles as i32, &src, &mut dst))
                .unwrap();
            let got = device.stream().clone_dtoh(&dst).unwrap();
            let want = StagedSum::expected(&input, tiles, r, c);
            // the same f32 additions in the same order: the same bits
            let same = got
                .iter()
                .zip(&want)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "[{rows}, {cols}] x {tiles}: {got:?} != {want:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_double_buffered_wgmma_pipeline_computes_the_product_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let seed = fresh_seed();
    for k_tiles in [1, 2, 7] {
        let (a, b) = StagedMatmul::inputs(k_tiles, seed + k_tiles as u64);
        let (da, db) = (
            stream.clone_htod(&a).unwrap(),
            stream.clone_htod(&b).unwrap(),
        );
        let mut dc = upload(&device, &vec![f32::NAN; 64 * 64]);
        let script = StagedMatmul {
            k_tiles,
            refill_busy_stage: false,
        };
        tilus::Jit::new(script, &device)
            .launch(stream, (&da, &db, &mut dc))
            .unwrap();
        let c = stream.clone_dtoh(&dc).unwrap();
        // multiples of 1/256 with small sums: exact in f32 in any order
        assert_eq!(
            c,
            StagedMatmul::expected(&a, &b, k_tiles),
            "{k_tiles} K steps"
        );
    }
}

// ------------------------------------------------------------------------------------------
// shape: tiles seen with other shapes, f32 and packed f16, against the CPU reference.
// ------------------------------------------------------------------------------------------

fn shape_views_on_the_gpu<T>(x: Vec<T>, nan: T)
where
    T: tilus::lang::Element
        + tilus::interp::Pod
        + tilus::cudarc::driver::DeviceRepr
        + tilus::cudarc::driver::ValidAsZeroBits
        + Copy
        + std::fmt::Debug
        + Unpin
        + 'static,
    ShapeViews<T>: tilus::Script<
        Args = (
            tilus::lang::Ptr<T>,
            PtrMut<T>,
            PtrMut<T>,
            PtrMut<T>,
            PtrMut<T>,
        ),
    >,
{
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let want = views::expected(&x);
    // the interpreter's results, which its own tests hold to the CPU reference
    let mut interp: Vec<Vec<T>> = want.iter().map(|w| vec![nan; w.len()]).collect();
    let [i0, i1, i2, i3] = &mut interp[..] else {
        unreachable!()
    };
    tilus::interpret(
        &ShapeViews::<T>::new(),
        (&x[..], &mut i0[..], &mut i1[..], &mut i2[..], &mut i3[..]),
    )
    .unwrap();
    let src = stream.clone_htod(&x).unwrap();
    let mut outs: Vec<CudaSlice<T>> = want
        .iter()
        .map(|w| stream.clone_htod(&vec![nan; w.len()]).unwrap())
        .collect();
    let [o0, o1, o2, o3] = &mut outs[..] else {
        unreachable!()
    };
    tilus::Jit::new(ShapeViews::<T>::new(), &device)
        .launch(stream, (&src, o0, o1, o2, o3))
        .unwrap();
    for (i, ((o, w), it)) in outs.iter().zip(&want).zip(&interp).enumerate() {
        let got = stream.clone_dtoh(o).unwrap();
        let bits = |v: &T| format!("{v:?}");
        assert!(
            got.iter().map(bits).eq(it.iter().map(bits)),
            "output {i}: the GPU's {got:?} != the interpreter's {it:?}"
        );
        assert!(
            got.iter().map(bits).eq(w.iter().map(bits)),
            "output {i}: {got:?} != {w:?}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shape_views_hold_the_referenced_elements_on_the_gpu() {
    let seed = fresh_seed();
    shape_views_on_the_gpu(random_f32(views::ROWS * views::COLS, seed), f32::NAN);
    shape_views_on_the_gpu(random_f16(views::ROWS * views::COLS, seed + 1), f16::NAN);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_an_mma_accumulator_hold_the_referenced_elements_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let (a, b) = views::dot_inputs(fresh_seed());
    let want = views::dot_expected(&a, &b);
    let mut interp: Vec<Vec<f32>> = want.iter().map(|w| vec![f32::NAN; w.len()]).collect();
    let [i0, i1, i2, i3] = &mut interp[..] else {
        unreachable!()
    };
    tilus::interpret(
        &DotViews,
        (
            &a[..],
            &b[..],
            &mut i0[..],
            &mut i1[..],
            &mut i2[..],
            &mut i3[..],
        ),
    )
    .unwrap();
    let (da, db) = (
        stream.clone_htod(&a).unwrap(),
        stream.clone_htod(&b).unwrap(),
    );
    let mut outs: Vec<CudaSlice<f32>> = want
        .iter()
        .map(|w| upload(&device, &vec![f32::NAN; w.len()]))
        .collect();
    let [o0, o1, o2, o3] = &mut outs[..] else {
        unreachable!()
    };
    tilus::Jit::new(DotViews, &device)
        .launch(stream, (&da, &db, o0, o1, o2, o3))
        .unwrap();
    for (i, ((o, w), it)) in outs.iter().zip(&want).zip(&interp).enumerate() {
        let got = stream.clone_dtoh(o).unwrap();
        // integer products and sums: exact in any order, so the bits agree
        assert_eq!(&got, it, "output {i}: the GPU against the interpreter");
        assert_eq!(&got, w, "output {i}: the GPU against the CPU reference");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_a_loaded_tile_feed_arithmetic_and_reductions_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let (rows, cols) = views::LOADED;
    let x = crate::common::scripts::global::small_ints(rows * cols, fresh_seed());
    let (want_twice, want_sums) = views::loaded_expected(&x);
    let (mut it, mut is) = (vec![f32::NAN; want_twice.len()], vec![f32::NAN; 2]);
    tilus::interpret(&LoadedViews, (&x[..], &mut it[..], &mut is[..])).unwrap();
    let src = upload(&device, &x);
    let mut twice = upload(&device, &vec![f32::NAN; want_twice.len()]);
    let mut sums = upload(&device, &[f32::NAN; 2]);
    tilus::Jit::new(LoadedViews, &device)
        .launch(stream, (&src, &mut twice, &mut sums))
        .unwrap();
    let (twice, sums) = (
        stream.clone_dtoh(&twice).unwrap(),
        stream.clone_dtoh(&sums).unwrap(),
    );
    // small integers: exact in any order, so the GPU, the interpreter and the CPU agree
    assert_eq!(
        (&twice, &sums),
        (&it, &is),
        "the GPU against the interpreter"
    );
    assert_eq!(
        (twice, sums),
        (want_twice, want_sums),
        "against the CPU reference"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_column_slice_holds_the_referenced_elements_on_the_gpu() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let x = random_f32(views::ROWS * views::COLS, fresh_seed());
    let want = views::column_slice_expected(&x);
    let mut interp = vec![f32::NAN; want.len()];
    tilus::interpret(&ColumnSlice, (&x[..], &mut interp[..])).unwrap();
    let src = upload(&device, &x);
    let mut dst = upload(&device, &vec![f32::NAN; want.len()]);
    tilus::Jit::new(ColumnSlice, &device)
        .launch(stream, (&src, &mut dst))
        .unwrap();
    let got = stream.clone_dtoh(&dst).unwrap();
    assert_eq!(got, interp, "the GPU against the interpreter");
    assert_eq!(got, want, "the GPU against the CPU reference");
}

/// The pipeline with its copies issued by the whole producer warp (an elected lane) and by
/// one thread: every row arrives exactly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_whole_producer_warp_streams_every_row() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for whole_warp in [true, false] {
        let rows = 600usize;
        let data = crate::common::inputs::random_f16(rows * 64, fresh_seed());
        let src = device.stream().clone_htod(&data).unwrap();
        let mut dst = device
            .stream()
            .clone_htod(&vec![f16::from_f32(f32::NAN); rows * 64])
            .unwrap();
        tilus::Jit::new(PipelineStream { whole_warp }, &device)
            .launch(device.stream(), (rows as i32, &src, &mut dst))
            .unwrap();
        let got = device.stream().clone_dtoh(&dst).unwrap();
        assert_eq!(got, data, "whole_warp = {whole_warp}");
    }
}

/// A persistent grid launches one block per multiprocessor at most: fewer items than
/// multiprocessors run one block each, more are shared round-robin by the fewest blocks that
/// take as many rounds (`3 · sms + 7` items: four rounds, `ceil(items / 4)` blocks).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_persistent_grid_runs_one_block_per_multiprocessor_at_most() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let sms = device
        .context()
        .attribute(
            tilus::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .unwrap() as usize;
    let jit = tilus::Jit::new(PersistentItems, &device);
    for items in [5usize, sms, 3 * sms + 7] {
        let mut out = device.stream().clone_htod(&vec![-1i32; items]).unwrap();
        jit.launch(device.stream(), (items as i32, &mut out))
            .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        assert_eq!(got, PersistentItems::reference(items, sms), "{items} items");
    }
}

/// Group barriers on the GPU: each warp group meets on its own named barrier (a block-wide
/// one would hang, and the runner's timeout fails the test).
#[test]
#[ignore = "needs a CUDA GPU"]
fn group_barriers_wait_for_their_group_only() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &[f32::NAN; 256]);
    tilus::Jit::new(GroupSyncs, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got[..128].iter().all(|&x| x == 1.0), "{:?}", &got[..4]);
    assert!(got[128..].iter().all(|&x| x == 2.0), "{:?}", &got[128..132]);
}

/// Clusters of two blocks on the GPU: the ranks the hardware gives match the block index, the
/// pair meets at the cluster barrier, and a grid of part of a cluster is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn clusters_of_two_meet_and_know_their_rank() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let jit = tilus::Jit::new(ClusterPairs { lone_sync: false }, &device);
    for blocks in [2usize, 264] {
        let mut out = device.stream().clone_htod(&vec![-1i32; blocks]).unwrap();
        jit.launch(device.stream(), (blocks as i32, &mut out))
            .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        assert_eq!(got, ClusterPairs::reference(blocks));
    }
    let mut out = device.stream().clone_htod(&[-1i32; 3]).unwrap();
    let err = jit.launch(device.stream(), (3, &mut out)).unwrap_err();
    assert!(
        err.to_string()
            .contains("not a multiple of the cluster's 2"),
        "{err}"
    );
}

/// Blocks of a cluster complete each other's barriers with remote arrivals on the GPU (a
/// lost arrival would hang the waits, and the runner's timeout fails the test).
#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_of_a_cluster_complete_each_others_barriers() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for after_reads in [false, true] {
        let mut out = device.stream().clone_htod(&[-1i32; 4]).unwrap();
        tilus::Jit::new(
            ClusterSignals {
                after_reads,
                ..ClusterSignals::default()
            },
            &device,
        )
        .launch(device.stream(), (4, &mut out))
        .unwrap();
        let got = device.stream().clone_dtoh(&out).unwrap();
        assert_eq!(got, vec![1000, 1, 1002, 3], "after_reads {after_reads}");
    }
}

/// Multicast on the GPU: each block of a pair loads half of a tile for both, and both end
/// with the whole tile (a copy that did not reach the partner would hang its wait).
#[test]
#[ignore = "needs a CUDA GPU"]
fn multicast_copies_land_in_every_block_of_the_mask() {
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let host: Vec<f32> = (0..64 * 32).map(|i| i as f32 * 0.5 - 7.0).collect();
    let src = upload(&device, &host);
    let blocks = 8usize;
    let mut out = upload(&device, &vec![f32::NAN; blocks * 64 * 32]);
    tilus::Jit::new(ClusterMulticast { mask: 0b11 }, &device)
        .launch(device.stream(), (blocks as i32, &src, &mut out))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    for b in 0..blocks {
        assert_eq!(&got[b * 64 * 32..(b + 1) * 64 * 32], &host[..], "block {b}");
    }
}

// ------------------------------------------------------------------------------------------
// wgmma operand orders: MN-major A and B (transpose bits, descriptors over column blocks)
// from batched strided views, on the GPU against the f64 product.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_takes_either_operand_order_as_stored() {
    use crate::common::scripts::orders::{OperandOrders, BATCH, M, N};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    for (mn_a, mn_b) in [(false, false), (true, false), (false, true), (true, true)] {
        let script = OperandOrders { mn_a, mn_b };
        let seed = fresh_seed();
        let a = random_f16(OperandOrders::len(), seed);
        let b = random_f16(OperandOrders::len(), seed + 1);
        let (da, db) = (
            device.stream().clone_htod(&a).unwrap(),
            device.stream().clone_htod(&b).unwrap(),
        );
        let mut dc = upload(&device, &vec![f32::NAN; BATCH * M * N]);
        tilus::Jit::new(script.clone(), &device)
            .launch(device.stream(), (&da, &db, &mut dc))
            .unwrap();
        let got = device.stream().clone_dtoh(&dc).unwrap();
        let want = script.reference(&a, &b);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| {
                if g.is_finite() {
                    (*g as f64 - w).abs()
                } else {
                    f64::INFINITY
                }
            })
            .fold(0.0, f64::max);
        assert!(worst < 1e-4, "{script:?} (seed {seed}): off by {worst}");
    }
}

// ------------------------------------------------------------------------------------------
// cp_async: the interpreter's copies by threads (`interp/copy_async.rs`) on the GPU.
// ------------------------------------------------------------------------------------------

/// Every box lands bit for bit, zeros outside the view, at each vector width (16, 8, 4 bytes
/// and ordinary 2-byte copies), from one to four warps; the source is fresh random data and
/// the output starts as NaN.
#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_by_threads_land_exactly_on_the_gpu() {
    use crate::common::scripts::copy_async::CopyBox;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for s in CopyBox::CASES {
        let src: Vec<f16> = random_f16(s.src_len(), fresh_seed());
        let d_src = stream.clone_htod(&src).unwrap();
        let nan = f16::from_f32(f32::NAN);
        let mut d_out = stream
            .clone_htod(&vec![nan; (s.rows * s.cols) as usize])
            .unwrap();
        tilus::Jit::new(s.clone(), &device)
            .launch(stream, (&d_src, &mut d_out))
            .unwrap();
        let got = stream.clone_dtoh(&d_out).unwrap();
        let want = s.expected(&src);
        let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{s:?}");
    }
}

/// The ring of copies in flight sums rows as the host does (f64 reference, f32 tolerance).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_ring_of_copies_in_flight_sums_rows_on_the_gpu() {
    use crate::common::scripts::copy_async::RingRowSums;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let rows = RingRowSums::ROWS as usize;
    for stages in [2, 3, 4] {
        let jit = tilus::Jit::new(RingRowSums::new(stages), &device);
        for k_size in [1usize, 33, 257, 4000] {
            let x = random_f32(rows * k_size, fresh_seed());
            let dx = upload(&device, &x);
            let mut out = upload(&device, &vec![f32::NAN; rows]);
            jit.launch(stream, (k_size as i32, &dx, &mut out)).unwrap();
            let got = stream.clone_dtoh(&out).unwrap();
            let want = RingRowSums::expected(&x, k_size);
            for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "stages {stages}, k {k_size}, row {r}: {g} vs {w}"
                );
            }
        }
    }
}

/// The interpreter's masked store (`interp/masks.rs`) on the GPU: only the kept elements
/// change, bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_masked_store_writes_exactly_the_kept_elements_on_the_gpu() {
    use crate::common::scripts::masks::MaskedStore;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let cases = MaskedStore::CASES
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)]);
    for (((rows, cols, warps), (m, n), (shift, len)), rows_only) in cases {
        let s = MaskedStore {
            rows,
            cols,
            warps,
            aligned: n % 8 == 0,
            rows_only,
        };
        let x = random_f16(m * n, fresh_seed());
        let before = random_f16(m * n, fresh_seed());
        let dx = stream.clone_htod(&x).unwrap();
        let mut dout = stream.clone_htod(&before).unwrap();
        tilus::Jit::new(s.clone(), &device)
            .launch(stream, (m as i32, n as i32, shift, len, &dx, &mut dout))
            .unwrap();
        let got = stream.clone_dtoh(&dout).unwrap();
        let want = s.expected(&x, &before, n, (shift, len));
        let bits = |v: &[f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{s:?} {m}x{n}");
    }
}

/// The interpreter's row-masked store (`interp/masks.rs`) on the GPU: whole vectors kept or
/// dropped by one flag each, no element-by-element fallback, bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_store_masked_by_rows_writes_exactly_the_kept_rows_on_the_gpu() {
    use crate::common::scripts::masks::RowMaskedStore;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for ((rows, warps), m, len, cols) in RowMaskedStore::CASES {
        let s = RowMaskedStore { rows, warps, cols };
        let n = cols as usize;
        let x = random_f16(m * n, fresh_seed());
        let before = random_f16(m * n, fresh_seed());
        let dx = stream.clone_htod(&x).unwrap();
        let mut dout = stream.clone_htod(&before).unwrap();
        tilus::Jit::new(s.clone(), &device)
            .launch(stream, (m as i32, len, &dx, &mut dout))
            .unwrap();
        let got = stream.clone_dtoh(&dout).unwrap();
        let want = s.expected(&x, &before, len as usize);
        let bits = |v: &[f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{s:?} {m} rows, len {len}");
    }
}

/// The interpreter's workspace test (`interp/workspace.rs`) on the GPU: blocks take turns
/// through a semaphore in a kernel-owned, zeroed workspace; the second and third launches
/// find it zeroed again (the last block released 0), and a launch with more blocks reuses it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_take_turns_through_a_kernel_owned_workspace_on_the_gpu() {
    use crate::common::scripts::workspace::TakeTurns;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let jit = tilus::Jit::new(TakeTurns { no_reset: false }, &device);
    for n in [3usize, 3, 40] {
        let x = random_f32(n * TakeTurns::COLS, fresh_seed());
        let before = random_f32(TakeTurns::COLS, fresh_seed());
        let dx = upload(&device, &x);
        let mut dout = upload(&device, &before);
        jit.launch(stream, (n as i32, &dx, &mut dout)).unwrap();
        let got = stream.clone_dtoh(&dout).unwrap();
        let want = TakeTurns::expected(&x, &before);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{n} blocks");
    }
}

/// The interpreter's low-precision tests (`interp/lowp.rs`) on the GPU, against the same plain
/// references: every code of the 8-bit types decoded, f32 and f16 values encoded into FP8
/// (the hardware's `cvt.rn.satfinite`), and every type's round trip through registers (the
/// narrower floats' integer algorithm, the integers' truncation and wrap).
#[test]
#[ignore = "needs a CUDA GPU"]
fn low_precision_conversions_agree_with_the_references() {
    use crate::common::scripts::lowp::{
        check_decoded, check_encoded, check_round_trip, encode_inputs, round_trip_inputs,
        DecodeCodes, EncodeValues, RoundTrip,
    };
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    macro_rules! decode_all { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        let codes: Vec<$T> = (0..=255).map(<$T>::from_code).collect();
        let mut f = stream.clone_htod(&vec![f32::NAN; 256]).unwrap();
        let mut h = stream.clone_htod(&vec![f16::NAN; 256]).unwrap();
        let mut b = stream.clone_htod(&vec![half::bf16::NAN; 256]).unwrap();
        tilus::Jit::new(DecodeCodes::<$T>::new(2), &device)
            .launch(stream, (&stream.clone_htod(&codes).unwrap(), &mut f, &mut h, &mut b))
            .unwrap();
        let (f, h, b) = (
            stream.clone_dtoh(&f).unwrap(),
            stream.clone_dtoh(&h).unwrap(),
            stream.clone_dtoh(&b).unwrap(),
        );
        check_decoded(t, &f, &h, &b);
    })*}}
    decode_all!(F8E4M3, F8E5M2, I8, U8);
    macro_rules! encode_all { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        let (x, h) = encode_inputs(t);
        let n = x.len();
        let mut cx = stream.clone_htod(&vec![<$T>::from_code(0xa5); n]).unwrap();
        let mut ch = stream.clone_htod(&vec![<$T>::from_code(0xa5); n]).unwrap();
        let (dx, dh) = (stream.clone_htod(&x).unwrap(), stream.clone_htod(&h).unwrap());
        tilus::Jit::new(EncodeValues::<$T>::new(n as i32, 4), &device)
            .launch(stream, (&dx, &dh, &mut cx, &mut ch))
            .unwrap();
        let codes = |v: Vec<$T>| v.iter().map(|c| c.code()).collect::<Vec<u8>>();
        let (cx, ch) = (codes(stream.clone_dtoh(&cx).unwrap()), codes(stream.clone_dtoh(&ch).unwrap()));
        check_encoded(t, (&x, &h), &cx, &ch);
    })*}}
    encode_all!(F8E4M3, F8E5M2);
    macro_rules! round_trip { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        let x = round_trip_inputs(t);
        let n = x.len();
        let mut y = upload(&device, &vec![f32::NAN; n]);
        let mut z = upload(&device, &vec![f32::NAN; n]);
        tilus::Jit::new(RoundTrip::<$T>::new(n as i32, 4), &device)
            .launch(stream, (&upload(&device, &x), &mut y, &mut z))
            .unwrap();
        let (y, z) = (stream.clone_dtoh(&y).unwrap(), stream.clone_dtoh(&z).unwrap());
        check_round_trip(t, &x, &y, &z);
    })*}}
    crate::for_round_trip_types!(round_trip);
}

/// The interpreter's f16 dequantization tests (`interp/lowp.rs`) on the GPU: every code of the
/// 8-bit types, and packed of the narrower ones, scaled in f16 pairs (and in f32 where a
/// difference is not rounded) gives the bits of the exact arithmetic's rounding.
#[test]
#[ignore = "needs a CUDA GPU"]
fn codes_scaled_in_f16_round_on_the_gpu_as_the_reference_says() {
    use crate::common::inputs::{fresh_seed, random_f32};
    use crate::common::scripts::lowp::{check_scaled_codes, scaled_codes_inputs, ScaledCodes};
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let random: Vec<f32> = random_f32(256, fresh_seed())
        .iter()
        .map(|x| x.abs())
        .collect();
    let (s, z) = scaled_codes_inputs(&random);
    let (ds, dz) = (
        stream.clone_htod(&s).unwrap(),
        stream.clone_htod(&z).unwrap(),
    );
    macro_rules! each { ($($T:ty),*) => {$({
        let codes: Vec<$T> = (0..=255).map(<$T>::from_code).collect();
        let mut out = stream.clone_htod(&vec![f16::NAN; 3 * 256]).unwrap();
        tilus::Jit::new(ScaledCodes::<$T>::new(), &device)
            .launch(stream, (&stream.clone_htod(&codes).unwrap(), &ds, &dz, &mut out))
            .unwrap();
        let out = stream.clone_dtoh(&out).unwrap();
        check_scaled_codes(<$T as LowpElement>::DTYPE, (&s, &z), &out);
    })*}}
    each!(F8E4M3, F8E5M2, I8, U8);
    // the types narrower than a byte, packed (the small floats by placing their bits)
    use crate::common::scripts::lowp::{packed_codes, ScaledPackedCodes};
    macro_rules! packed { ($($T:ty),*) => {$({
        let codes = stream.clone_htod(&packed_codes::<$T>()).unwrap();
        let mut out = stream.clone_htod(&vec![f16::NAN; 3 * 256]).unwrap();
        tilus::Jit::new(ScaledPackedCodes::<$T>::new(), &device)
            .launch(stream, (&codes, &ds, &dz, &mut out))
            .unwrap();
        let out = stream.clone_dtoh(&out).unwrap();
        check_scaled_codes(<$T as LowpElement>::DTYPE, (&s, &z), &out);
    })*}}
    packed!(F4E2M1, F6E3M2, F6E2M3, F3E1M1, I4, U4, I2, Int<3>);
}

/// The interpreter's packed-view test (`interp/lowp.rs`) on the GPU: every element of views
/// of packed elements loaded and stored, the bits past each row's end left as they were.
#[test]
#[ignore = "needs a CUDA GPU"]
fn packed_views_agree_with_the_references() {
    use crate::common::scripts::lowp::packed_forms;
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    macro_rules! packed_views { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        for s in packed_forms::<$T>(t.bits()) {
            let (w, x, out0) = s.inputs(t);
            let mut dec = stream.clone_htod(&vec![f32::NAN; (s.rows * s.cols) as usize]).unwrap();
            let mut out = stream.clone_htod(&out0).unwrap();
            let (dw, dx) = (stream.clone_htod(&w).unwrap(), stream.clone_htod(&x).unwrap());
            tilus::Jit::new(s, &device)
                .launch(stream, (&dw, &mut dec, &dx, &mut out))
                .unwrap();
            let (dec, out) = (stream.clone_dtoh(&dec).unwrap(), stream.clone_dtoh(&out).unwrap());
            s.check(t, (&w, &x, &out0), &dec, &out);
        }
    })*}}
    packed_views!(I4, U4, F4E2M1, F6E3M2, F6E2M3, Int<3>, F3E1M1, U2, Float<1, 2>, Int<1>, Int<5>, Float<4, 2>);
}

/// The interpreter's unpack test (`interp/lowp.rs`) on the GPU: every element of u32 and u8
/// words unpacked and decoded as the reference says.
#[test]
#[ignore = "needs a CUDA GPU"]
fn unpacked_words_agree_with_the_references() {
    use crate::common::scripts::lowp::UnpackWords;
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    macro_rules! unpack_words { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        for (rows, cols, warps) in [(4, 256, 1), (16, 64, 4)] {
            let s = UnpackWords::<$T>::new(rows, cols, warps);
            let (w32, w8) = s.inputs(t);
            let n = (rows * cols) as usize;
            let mut y32 = stream.clone_htod(&vec![f32::NAN; n]).unwrap();
            let mut y8 = stream.clone_htod(&vec![f32::NAN; n]).unwrap();
            let (d32, d8) = (stream.clone_htod(&w32).unwrap(), stream.clone_htod(&w8).unwrap());
            tilus::Jit::new(s, &device)
                .launch(stream, (&d32, &d8, &mut y32, &mut y8))
                .unwrap();
            let (y32, y8) = (stream.clone_dtoh(&y32).unwrap(), stream.clone_dtoh(&y8).unwrap());
            s.check(t, &w8, &y32, &y8);
        }
    })*}}
    unpack_words!(I4, U4, F4E2M1, U2, I2, Int<1>, UInt<1>, Float<1, 2>);
}

/// The interpreter's pack test (`interp/lowp.rs`) on the GPU: values cast and packed into u32
/// and u8 words as the host packs them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn packed_words_agree_with_the_host() {
    use crate::common::scripts::lowp::PackWords;
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    macro_rules! pack_words { ($($T:ty),*) => {$({
        let t = <$T as LowpElement>::DTYPE;
        for (rows, cols, warps) in [(4, 256, 1), (16, 256, 4)] {
            let s = PackWords::<$T>::new(rows, cols, warps);
            let x = s.inputs(t);
            let n = (rows * cols) as usize * t.bits() as usize;
            let mut w32 = stream.clone_htod(&vec![0xdead_beefu32; n / 32]).unwrap();
            let mut w8 = stream.clone_htod(&vec![0xa5u8; n / 8]).unwrap();
            let dx = stream.clone_htod(&x).unwrap();
            tilus::Jit::new(s, &device).launch(stream, (&dx, &mut w32, &mut w8)).unwrap();
            let (w32, w8) = (stream.clone_dtoh(&w32).unwrap(), stream.clone_dtoh(&w8).unwrap());
            s.check(t, &x, &w32, &w8);
        }
    })*}}
    pack_words!(I4, U4, F4E2M1, U2, I2, Int<1>, Float<1, 2>);
}

/// The interpreter's FP8 tensor-core test (`interp/lowp.rs`) on the GPU: products of FP8
/// tiles exact against the host (operands whose partial sums every accumulation keeps).
#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_tensor_core_products_agree_with_the_host() {
    use crate::common::scripts::lowp::Fp8Tile;
    use tilus::lowp::*;
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    macro_rules! fp8_tile { ($(($A:ty, $B:ty)),*) => {$({
        for (m, n, kk) in [(64, 64, 64), (128, 128, 128)] {
            let s = Fp8Tile::<$A, $B>::new(m, n, kk);
            let (a, b) = s.inputs();
            let mut c = stream.clone_htod(&vec![f32::NAN; (m * n) as usize]).unwrap();
            let (da, db) = (stream.clone_htod(&a).unwrap(), stream.clone_htod(&b).unwrap());
            tilus::Jit::new(s, &device).launch(stream, (&da, &db, &mut c)).unwrap();
            s.check(&a, &b, &stream.clone_dtoh(&c).unwrap());
        }
    })*}}
    fp8_tile!((F8E4M3, F8E4M3), (F8E5M2, F8E5M2), (F8E4M3, F8E5M2));
}

// ------------------------------------------------------------------------------------------
// timing: the benchmark's flush (a write, then the sweep's read that leaves L2 clean)
// compiles and runs under every timing, and the medians are times.
// ------------------------------------------------------------------------------------------

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_timing_flushes_and_times_a_copy() {
    use tilus::tune::bench::{time_interleaved, Timing};
    cache_dir();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let src = upload(&device, &random_f32(1 << 22, fresh_seed()));
    let mut dst = upload(&device, &vec![f32::NAN; 1 << 22]);
    for timing in [Timing::Flushed, Timing::Written, Timing::Idle] {
        let mut copy = || -> tilus::Result<()> {
            stream.memcpy_dtod(&src, &mut dst).unwrap();
            Ok(())
        };
        let times = time_interleaved(&stream, &mut [&mut copy], (1, 3), timing).unwrap();
        assert_eq!(times.len(), 1);
        assert!(
            times[0].is_finite() && times[0] > 0.0,
            "{timing:?}: {times:?}"
        );
    }
    assert_eq!(
        stream.clone_dtoh(&dst).unwrap(),
        stream.clone_dtoh(&src).unwrap()
    );
}
