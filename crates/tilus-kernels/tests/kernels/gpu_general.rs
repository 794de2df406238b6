//! The general GEMM on the GPU against the f64 reference of `interp_general`: every order of
//! A, B and C, batches with a shared operand, scales, f16 and bf16, fresh inputs each run.

use super::interp_general::{reference, stored, values};
use half::{bf16, f16};
use tilus::runtime::Device;
use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Order};
use tilus_kernels::gemm::Matmuls;

fn run<T: Matmuls + Copy>(
    gemm: &GemmGeneral<T>,
    device: &Device,
    p: &GemmProblem,
    seed: u64,
    (from, to, eps): (fn(f64) -> T, fn(T) -> f64, f64),
) {
    let (la, lb, lc) = p.lengths().unwrap();
    let (a, b) = (values(la, seed), values(lb, seed + 1));
    let c0: Vec<f64> = values(lc, seed + 2)
        .into_iter()
        .map(|v| if p.beta == 0.0 { f64::NAN } else { v })
        .collect();
    let s = device.stream();
    let up = |v: &[f64]| {
        s.clone_htod(&v.iter().map(|&x| from(x)).collect::<Vec<T>>())
            .unwrap()
    };
    let (da, db, mut dc) = (up(&a), up(&b), up(&c0));
    gemm.run(s, p, &da, &db, &mut dc).unwrap();
    let got = s.clone_dtoh(&dc).unwrap();
    let (want, is_c) = reference(p, &a, &b, &c0);
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let g = to(*g);
        let ok = if is_c[i] {
            (g - w).abs() <= eps * w.abs() + 1e-3
        } else {
            g == to(from(*w)) || (g.is_nan() && w.is_nan())
        };
        if !ok {
            bad += 1;
            if bad < 5 {
                eprintln!("{p:?}: element {i}: {g}, want {w}");
            }
        }
    }
    assert_eq!(bad, 0, "{p:?} (seed {seed})");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_general_gemm_takes_every_order_batch_and_scale() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let f16s = (
        f16::from_f64 as fn(f64) -> f16,
        f16::to_f64 as fn(f16) -> f64,
        1.0 / 1024.0,
    );
    let bf16s = (
        bf16::from_f64 as fn(f64) -> bf16,
        bf16::to_f64 as fn(bf16) -> f64,
        1.0 / 128.0,
    );
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
                run(&gemm, &device, &p, seed + i, f16s);
                run(
                    &gemm_bf,
                    &device,
                    &p.scales(0.5, 2.0),
                    seed + i + 100,
                    bf16s,
                );
                i += 3;
            }
        }
    }
    // a batch sharing B, and one sharing A
    let (m, n, k) = (304, 264, 136);
    let a = stored(Order::ColMajor, (m, k), 0);
    let p = GemmProblem::new(5, (m, n, k)).a(a.batched(a.ld * k));
    run(
        &gemm,
        &device,
        &p.b(stored(Order::RowMajor, (k, n), 0)),
        seed + 50,
        f16s,
    );
    let p = GemmProblem::new(5, (m, n, k)).a(stored(Order::RowMajor, (m, k), 0));
    run(&gemm_bf, &device, &p.scales(1.0, 1.0), seed + 60, bf16s);
}
