//! The v0 tutorial's main job: verify the kernel against cuBLAS and print the table.
//!
//! `cargo run --release -p hopper-matmul --bin hopper-matmul-v0 [-- M N K ...]`
//!
//! Without a GPU it says so, and still shows what it can: the generated CUDA and the NVRTC
//! compile report.

use hopper_matmul::v0::MatmulTma;
use std::io::Write;
use std::process::ExitCode;
use tilus::runtime::Device;
use tilus_bench::run::{verify_and_bench, BenchOptions, V0};
use tilus_bench::size::parse_dim;

/// `println!` that ends the process quietly when stdout's reader has gone away.
macro_rules! say {
    ($($arg:tt)*) => {
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0)
        }
    };
}

/// `eprintln!` that ignores a closed stderr.
macro_rules! tell {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

const USAGE: &str = "usage: hopper-matmul-v0 [M N K [M N K ...]]\n\
    \n\
    Verifies the v0 matmul against cuBLAS and times it beside it at each shape (default \
    4096 4096 4096).\n\
    Shapes come in triples M N K of positive integers that fit in i32.";

/// A shape `(M, N, K)`.
type Shape = (usize, usize, usize);

/// The shapes of the command line: triples of positive integers that fit the kernel's `i32`
/// arguments; `Ok(None)` for `--help`.
fn shapes(args: &[String]) -> Result<Option<Vec<Shape>>, String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(None);
    }
    if args.is_empty() {
        return Ok(Some(vec![(4096, 4096, 4096)]));
    }
    let mut dims = vec![];
    for (i, a) in args.iter().enumerate() {
        let name = ["M", "N", "K"][i % 3];
        let v = parse_dim(name, a).map_err(|e| format!("shape {}: {e}", i / 3 + 1))?;
        dims.push(v as usize);
    }
    if dims.len() % 3 != 0 {
        return Err(format!(
            "{} number{} given; shapes come in triples M N K",
            dims.len(),
            if dims.len() == 1 { "" } else { "s" }
        ));
    }
    let out = dims.chunks_exact(3).map(|c| (c[0], c[1], c[2])).collect();
    Ok(Some(out))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shapes = match shapes(&args) {
        Ok(Some(s)) => s,
        Ok(None) => {
            say!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            tell!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = MatmulTma::default();
    say!("Hopper matmul v0 (TMA + mbarrier + mma.sync)");
    match Device::open(0) {
        Ok(device) => {
            say!("GPU: {}", device.name());
            say!("autotuning over the seed's 15 configurations (cached after the first run)");
            let v0 = match V0::autotuned(&device) {
                Ok(v) => v,
                Err(e) => {
                    tell!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match verify_and_bench(&device, &[&v0], &shapes, &BenchOptions::default()) {
                Ok((rows, ok)) => {
                    if tilus_bench::harness::write_table(&mut std::io::stdout(), &rows).is_err() {
                        return ExitCode::SUCCESS;
                    }
                    if ok {
                        ExitCode::SUCCESS
                    } else {
                        tell!("verification FAILED");
                        ExitCode::FAILURE
                    }
                }
                // stdout's reader went away
                Err(tilus_bench::Error::Output(_)) => ExitCode::SUCCESS,
                Err(e) => {
                    tell!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            say!("No GPU run: {e}.");
            say!(
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
                        say!("generated CUDA: {}", dir.join("source.cu").display());
                    }
                    say!(
                        "compiled with NVRTC for sm_90a{}: {} registers, {} bytes spilled, {} bytes of shared memory",
                        if c.from_cache { " (from the cache)" } else { "" },
                        c.report.registers,
                        c.report.spill_stores,
                        c.plan.smem_bytes
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    tell!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Runs v0 at 256x256x256 on the CPU interpreter (the planned program, as the GPU would run
/// it) and checks it against a CPU reference.
fn interpret(config: &MatmulTma) -> bool {
    use tilus_bench::harness::{compare, cpu_reference, seed_inputs, Rng};
    let (m, n, k) = (256usize, 256usize, 256usize);
    let mut rng = Rng::new(0x5eed);
    let a = seed_inputs(m * k, k, &mut rng);
    let b = seed_inputs(n * k, k, &mut rng);
    let mut c = vec![half::f16::NAN; m * n];
    let t = std::time::Instant::now();
    let args = (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]);
    match tilus::interpret(config, args) {
        Ok(_) => {
            let secs = t.elapsed().as_secs_f64();
            let check = compare(&c, &cpu_reference(&a, &b, m, n, k));
            say!(
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
            tell!("error: the interpreter failed: {e}");
            false
        }
    }
}
