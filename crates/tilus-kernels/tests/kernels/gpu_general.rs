//! The general GEMM on the GPU against the f64 reference of `interp_general`: every order of
//! A, B and C, batches with a shared operand, scales, f16 and bf16, fresh inputs each run.

use super::interp_general::{inputs, stored, wrong};
use half::{bf16, f16};
use tilus::runtime::Device;
use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout, Order};
use tilus_kernels::gemm::Matmuls;

fn run<T: Matmuls>(gemm: &GemmGeneral<T>, device: &Device, p: &GemmProblem, seed: u64) {
    let x = inputs::<T>(p, seed);
    let s = device.stream();
    let (da, db) = (s.clone_htod(&x.ta).unwrap(), s.clone_htod(&x.tb).unwrap());
    let mut dc = s.clone_htod(&x.tc).unwrap();
    gemm.run(s, p, &da, &db, &mut dc).unwrap();
    let bad = wrong(p, &x, &s.clone_dtoh(&dc).unwrap());
    assert!(
        bad.is_empty(),
        "{p:?} (seed {seed}): {} wrong, {:?}",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_general_gemm_takes_every_order_batch_and_scale() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let gemm = GemmGeneral::<f16>::fixed(Default::default(), &device);
    let gemm_bf = GemmGeneral::<bf16>::fixed(Default::default(), &device);
    // fresh inputs each run (the seed is printed with any failure)
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    let (m, n, k) = (520, 1000, 200);
    let orders = [Order::RowMajor, Order::ColMajor];
    let mut i = 0;
    for oa in orders {
        for ob in orders {
            for oc in orders {
                let p = GemmProblem::new(1, (m, n, k))
                    .a(stored(oa, (m, k), 8))
                    .b(stored(ob, (k, n), 0))
                    .c(stored(oc, (m, n), 8));
                run(&gemm, &device, &p, seed + i);
                run(&gemm_bf, &device, &p.scales(0.5, 2.0), seed + i + 100);
                i += 3;
            }
        }
    }
    // C's rows not a whole number of 16-byte granules though its leading dimension is: C is
    // stored from registers (a TMA store would write the padding after each row)
    let (m, n, k) = (241, 180, 252);
    let p = GemmProblem::new(2, (m, n, k)).c(Layout::row_major(184).batched(184 * m + 8));
    run(&gemm, &device, &p, seed + 40);
    run(&gemm_bf, &device, &p.scales(1.0, 1.0), seed + 45);
    // a batch sharing B, and one sharing A
    let (m, n, k) = (304, 264, 136);
    let a = stored(Order::ColMajor, (m, k), 0);
    let p = GemmProblem::new(5, (m, n, k)).a(a.batched(a.ld * k));
    run(
        &gemm,
        &device,
        &p.b(stored(Order::RowMajor, (k, n), 0)),
        seed + 50,
    );
    let p = GemmProblem::new(5, (m, n, k)).a(stored(Order::RowMajor, (m, k), 0));
    run(&gemm_bf, &device, &p.scales(1.0, 1.0), seed + 60);
}

/// Leading dimensions and batch strides that TMA cannot take: the operands are staged (f16)
/// or loaded by the producer's threads (bf16), C stored from registers, every order of A and
/// B.
#[test]
#[ignore = "needs a CUDA GPU"]
fn operands_without_16_byte_rows_are_staged_or_loaded_on_the_gpu() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let square = tilus_kernels::gemm::general::MatmulGeneral {
        tile: tilus_kernels::gemm::persistent::MatmulPersistent {
            block_m: 128,
            block_n: 128,
            ..Default::default()
        },
    };
    let gemm = GemmGeneral::<f16>::fixed(square.clone(), &device);
    let gemm_bf = GemmGeneral::<bf16>::fixed(square.clone(), &device).without_staging();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    let orders = [Order::RowMajor, Order::ColMajor];
    let (m, n, k) = (517, 389, 255);
    let mut i = 0;
    for oa in orders {
        for ob in orders {
            let p = GemmProblem::new(3, (m, n, k))
                .a(stored(oa, (m, k), 1).batched(m * k + 3 * k + 1))
                .b(stored(ob, (k, n), 0).batched(0))
                .c(stored(Order::RowMajor, (m, n), 1).batched((n + 1) * m + 1));
            run(&gemm, &device, &p, seed + i);
            run(&gemm_bf, &device, &p.scales(-1.0, 0.5), seed + i + 100);
            i += 3;
        }
    }
}

/// The autotuned general GEMM (`GemmGeneral::new`): a configuration chosen per shape and form,
/// right on a plain problem and on a batch with a column-major A.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_autotuned_general_gemm_is_right() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let gemm = GemmGeneral::<f16>::new(&device).unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    run(
        &gemm,
        &device,
        &GemmProblem::new(1, (1000, 1024, 1024)),
        seed,
    );
    let (m, n, k) = (512, 384, 640);
    let a = stored(Order::ColMajor, (m, k), 0);
    let p = GemmProblem::new(3, (m, n, k)).a(a.batched(m * k));
    run(&gemm, &device, &p, seed + 1);
}
