//! The v0 tutorial's main job: verify the kernel against cuBLAS and print the table.
//!
//! `cargo run --release -p hopper-matmul --bin hopper-matmul-v0 [-- M N K ...]`
//!
//! Without a GPU it says so, and still shows what it can: the generated CUDA and the NVRTC
//! compile report.

use hopper_matmul::run::{verify_and_bench, BenchOptions, V0};
use hopper_matmul::v0::MatmulTma;
use std::process::ExitCode;
use tilus::runtime::Device;

fn main() -> ExitCode {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let shapes: Vec<(usize, usize, usize)> = if args.len() >= 3 {
        args.chunks_exact(3).map(|c| (c[0], c[1], c[2])).collect()
    } else {
        vec![(4096, 4096, 4096)]
    };
    let config = MatmulTma::default();
    println!("Hopper matmul v0 (TMA + mbarrier + mma.sync)");
    match Device::open(0) {
        Ok(device) => {
            println!("GPU: {}", device.name());
            println!("autotuning over the seed's 15 configurations (cached after the first run)");
            let v0 = match V0::autotuned(&device) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match verify_and_bench(&device, &[&v0], &shapes, &BenchOptions::default()) {
                Ok((rows, ok)) => {
                    hopper_matmul::harness::print_table(&rows);
                    if ok {
                        ExitCode::SUCCESS
                    } else {
                        eprintln!("verification FAILED");
                        ExitCode::FAILURE
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            println!("No GPU run: {e}.");
            println!(
                "Showing what this machine can do: the kernel on the CPU interpreter at a small size, \
                 the generated CUDA and the NVRTC compile report.\n"
            );
            if !interpret(&config) {
                return ExitCode::FAILURE;
            }
            let (_, n, k) = shapes[0];
            match tilus::build(&config, &[n as i64, k as i64]) {
                Ok(c) => {
                    if let Some(dir) = &c.cache_dir {
                        println!("generated CUDA: {}", dir.join("source.cu").display());
                    }
                    println!(
                        "compiled with NVRTC for sm_90a{}: {} registers, {} bytes spilled, {} bytes of shared memory",
                        if c.from_cache { " (from the cache)" } else { "" },
                        c.report.registers,
                        c.report.spill_stores,
                        c.plan.smem_bytes
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Runs v0 at 256x256x256 on the CPU interpreter (the planned program, as the GPU would run
/// it) and checks it against a CPU reference.
fn interpret(config: &MatmulTma) -> bool {
    use hopper_matmul::harness::{compare, cpu_reference, seed_inputs, Rng};
    let (m, n, k) = (256usize, 256usize, 256usize);
    let mut rng = Rng::new(0x5eed);
    let a = seed_inputs(m * k, k, &mut rng);
    let b = seed_inputs(n * k, k, &mut rng);
    let mut c = vec![half::f16::NAN; m * n];
    let t = std::time::Instant::now();
    let args = (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]);
    match tilus::interp::run(config, args) {
        Ok(_) => {
            let secs = t.elapsed().as_secs_f64();
            let check = compare(&c, &cpu_reference(&a, &b, m, n, k));
            println!(
                "interpreted v0 at {m}x{n}x{k} in {:.1} ms: {} (non-finite {}, mismatches {} of {}, rel. error {:.2e})\n",
                secs * 1e3,
                if check.passed() { "PASS" } else { "FAIL" },
                check.non_finite,
                check.mismatches,
                check.total,
                check.rel_err
            );
            check.passed()
        }
        Err(e) => {
            eprintln!("error: the interpreter failed: {e}");
            false
        }
    }
}
