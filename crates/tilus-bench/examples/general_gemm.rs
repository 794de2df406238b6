//! The general GEMM beside cuBLAS's strided batched GEMM (same orders, strides and batches,
//! cuBLAS in its default math mode), one table: every order of A and B at 4096³ and 8192³,
//! the batched shapes, and odd and ragged K, f16 and bf16. Our kernel is timed in four
//! configurations (128×256, 256×128 and 128×128 cooperative, 128×128 ping-pong) and the
//! fastest reported; flushed timing, interleaved with cuBLAS in the same process. Each result
//! is compared with cuBLAS's (elements outside one rounding step, NaN). The last column times
//! the 128×128 configuration with operands TMA cannot read loaded by the kernel's threads
//! instead of staged (`GemmGeneral::without_staging`; the same kernel where every operand is
//! aligned).
//!
//! `cargo run --release -p tilus-bench --example general_gemm [f16|bf16] [quick] [odd]`
//! (`odd`: only the odd and ragged K shapes)

use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus::tune::bench::{time_interleaved, Timing};
use tilus_bench::harness::{compare, seed_inputs, Cublas, Rng};
use tilus_bench::operand::Operand;
use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout, MatmulGeneral, Order};
use tilus_kernels::gemm::persistent::MatmulPersistent;

/// The configurations timed: (block_m, block_n, ping_pong).
const TILES: [(i32, i32, i32); 4] = [(128, 256, 0), (256, 128, 0), (128, 128, 1), (128, 128, 0)];

fn configs() -> Vec<MatmulGeneral> {
    TILES
        .iter()
        .map(|&(block_m, block_n, ping_pong)| MatmulGeneral {
            tile: MatmulPersistent {
                block_m,
                block_n,
                ping_pong,
                stages: 4,
                group_m: 8,
                tma_store: 1,
                ..MatmulPersistent::default()
            },
        })
        .collect()
}

/// `batch` products of `m × n × k`, contiguous, A and B in these orders.
fn problem(
    batch: usize,
    (m, n, k): (usize, usize, usize),
    (oa, ob): (Order, Order),
) -> GemmProblem {
    let a = match oa {
        Order::RowMajor => Layout::row_major(k),
        Order::ColMajor => Layout::col_major(m),
    };
    let b = match ob {
        Order::RowMajor => Layout::row_major(n),
        Order::ColMajor => Layout::col_major(k),
    };
    GemmProblem::new(batch, (m, n, k))
        .a(a.batched(m * k))
        .b(b.batched(k * n))
}

fn name(o: Order) -> &'static str {
    match o {
        Order::RowMajor => "row",
        Order::ColMajor => "col",
    }
}

fn run<T: Operand>(
    stream: &Arc<CudaStream>,
    device: &Device,
    (quick, only_odd): (bool, bool),
) -> tilus::Result<()> {
    let cublas = Cublas::new(stream)?;
    let mut gemms: Vec<GemmGeneral<T>> = configs()
        .into_iter()
        .map(|c| GemmGeneral::fixed(c, device))
        .collect();
    // the last: operands TMA cannot read loaded by the kernel's threads, not staged (the
    // same as the 128 × 128 cooperative configuration where every operand is aligned)
    let tiles = gemms.len();
    let square = configs().pop().expect("a 128 × 128 configuration");
    gemms.push(GemmGeneral::fixed(square, device).without_staging());
    let orders = [
        (Order::RowMajor, Order::ColMajor),
        (Order::RowMajor, Order::RowMajor),
        (Order::ColMajor, Order::ColMajor),
        (Order::ColMajor, Order::RowMajor),
    ];
    let mut cases = vec![];
    for size in [4096usize, 8192] {
        for o in orders {
            cases.push((1, (size, size, size), o));
        }
    }
    let tn = orders[0];
    cases.push((64, (512, 512, 512), tn));
    cases.push((32, (1024, 1024, 128), tn));
    cases.push((16, (2048, 2048, 2048), tn));
    cases.push((16, (2048, 2048, 2048), orders[3]));
    // odd and ragged K (K-major operands of K elements per row: 4095 is not a multiple of 8,
    // so A and B are loaded by the kernel's threads, not TMA)
    for (m, n, k) in [(4096, 4096, 4095), (2048, 2048, 1000), (4000, 5000, 3000)] {
        cases.push((1, (m, n, k), tn));
    }
    if only_odd {
        cases.drain(..cases.len() - 3);
    }
    if quick {
        cases.truncate(2);
    }
    println!(
        "| {} | batch × m × n × k | A | B | ours TFLOPS | config | cuBLAS TFLOPS | ratio | mismatches | max abs diff | unstaged TFLOPS |",
        T::NAME
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut rng = Rng::new(0x5eed);
    for (batch, (m, n, k), (oa, ob)) in cases {
        let p = problem(batch, (m, n, k), (oa, ob));
        let (la, lb, lc) = p.lengths().expect("a valid problem");
        let a: CudaSlice<T> = stream
            .clone_htod(&seed_inputs::<T>(la, k, &mut rng))
            .expect("upload");
        let b: CudaSlice<T> = stream
            .clone_htod(&seed_inputs::<T>(lb, k, &mut rng))
            .expect("upload");
        let mut c: CudaSlice<T> = stream.alloc_zeros(lc).expect("alloc");
        let mut c_ref: CudaSlice<T> = stream.alloc_zeros(lc).expect("alloc");
        // compile and warm every configuration first
        for g in &gemms {
            g.run(stream, &p, &a, &b, &mut c)
                .map_err(|e| tilus::Error::Argument {
                    arg: "gemm".into(),
                    message: e.to_string(),
                })?;
        }
        let ms = {
            let mut launchers: Vec<Box<dyn FnMut() -> tilus::Result<()>>> = vec![];
            for g in &gemms {
                let (a, b, p) = (&a, &b, &p);
                let c = &mut c as *mut CudaSlice<T>;
                launchers.push(Box::new(move || {
                    // SAFETY: the launchers run one after another on this thread; each
                    // borrows `c` only for its call.
                    let c = unsafe { &mut *c };
                    g.run(stream, p, a, b, c)
                        .map_err(|e| tilus::Error::Argument {
                            arg: "gemm".into(),
                            message: e.to_string(),
                        })
                }));
            }
            let (cb, pr, ar, br, cr) = (&cublas, &p, &a, &b, &mut c_ref);
            launchers.push(Box::new(move || cb.gemm_general(stream, pr, (ar, br), cr)));
            let mut refs: Vec<&mut dyn FnMut() -> tilus::Result<()>> = launchers
                .iter_mut()
                .map(|f| f.as_mut() as &mut dyn FnMut() -> tilus::Result<()>)
                .collect();
            time_interleaved(
                stream,
                &mut refs,
                (3, if quick { 3 } else { 15 }),
                Timing::Flushed,
            )?
        };
        let flops = 2.0 * (batch * m * n * k) as f64;
        let tflops = |ms: f64| flops / ms / 1e9;
        let (best, best_ms) =
            ms[..tiles]
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f64::INFINITY),
                    |acc, (i, t)| if t < acc.1 { (i, t) } else { acc },
                );
        let blas_ms = ms[gemms.len()];
        // the fastest configuration's result against cuBLAS's
        gemms[best]
            .run(stream, &p, &a, &b, &mut c)
            .map_err(|e| tilus::Error::Argument {
                arg: "gemm".into(),
                message: e.to_string(),
            })?;
        let got = stream.clone_dtoh(&c).expect("download");
        let want = stream.clone_dtoh(&c_ref).expect("download");
        let check = compare(&got, &want);
        let (bm, bn, pp) = TILES[best];
        println!(
            "| {} | {batch} × {m} × {n} × {k} | {} | {} | {:.1} | {bm}×{bn}{} | {:.1} | {:.3} | {} (NaN {}) | {:.2e} | {:.1} |",
            T::NAME,
            name(oa),
            name(ob),
            tflops(best_ms),
            if pp != 0 { " ping-pong" } else { "" },
            tflops(blas_ms),
            blas_ms / best_ms,
            check.mismatches,
            check.non_finite,
            check.max_abs,
            tflops(ms[tiles]),
        );
    }
    Ok(())
}

fn main() -> tilus::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let odd = args.iter().any(|a| a == "odd");
    let device = Device::open(0)?;
    let stream = device.stream().clone();
    if args.iter().any(|a| a == "bf16") {
        run::<half::bf16>(&stream, &device, (quick, odd))
    } else {
        run::<half::f16>(&stream, &device, (quick, odd))
    }
}
