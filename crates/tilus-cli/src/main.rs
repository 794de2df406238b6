//! `tilus`: look at, compile and benchmark the kernels of the series.
//!
//! - `tilus emit hopper_matmul_v0 [--set block_m=128 ...] [--size MxNxK]`: the generated CUDA
//! - `tilus ir hopper_matmul_v0 [...]`: the planned IR
//! - `tilus check hopper_matmul_v0 [--size MxNxK]`: compile every config of the search space
//!   with NVRTC (no GPU needed) and report registers, spills, shared memory or why it failed
//! - `tilus bench matmul --versions v0 --sizes 4096x4096x4096,8192x8192x8192`: verify against
//!   cuBLAS and time beside it
//! - `tilus cache ls|show|clean`: the compiled programs and dispatch tables on disk
//! - `tilus doctor`: what this machine can do (driver, GPU, NVRTC, cache)
//! - `tilus run hopper_matmul_v0 --interpret --size 256x256x256`: run a kernel on the CPU
//!   interpreter and check it against the CPU reference (no GPU needed)
//!
//! `TILUS_LOG=debug` (any `tracing` filter) prints the autotuner's decisions and timings.

mod bench_tune;
mod cache;
mod check;
mod run;
mod soak;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tilus",
    version,
    about = "Tilus for Rust: emit, check and benchmark tile-level Hopper kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the CUDA C++ generated for a kernel.
    Emit(KernelArgs),
    /// Print the checked, laid-out and planned IR of a kernel.
    Ir(KernelArgs),
    /// Compile every configuration of a kernel's search space with NVRTC and report resources.
    Check {
        /// Kernel name (see `tilus list`).
        kernel: String,
        /// Problem size MxNxK that fixes the compile-time constants.
        #[arg(long, default_value = "4096x4096x4096")]
        size: String,
    },
    /// Verify kernels against cuBLAS and time them beside it (needs a GPU).
    ///
    /// `matmul`: the table against cuBLAS. `tune`: cold and warm first calls of the autotuned
    /// v0 (fresh cache, then new processes). `launch`: host time per launch, public API against
    /// a raw cudarc launch of the same cubin.
    Bench {
        /// What to benchmark.
        #[arg(value_parser = ["matmul", "tune", "launch", "first-call"])]
        what: String,
        /// Versions, comma-separated (matmul).
        #[arg(long, default_value = "v0")]
        versions: String,
        /// Sizes MxNxK, comma-separated (matmul).
        #[arg(long, default_value = "4096x4096x4096")]
        sizes: String,
        /// One size MxNxK (tune, launch).
        #[arg(long)]
        size: Option<String>,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported).
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// Launches to time (launch).
        #[arg(long, default_value_t = 5000)]
        launches: usize,
        /// Hyperparameters, e.g. `--set block_m=128` (without: autotuned).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Use each version's default configuration instead of autotuning.
        #[arg(long)]
        fixed: bool,
        /// Label printed by `first-call` (used by `tune`).
        #[arg(long, default_value = "first", hide = true)]
        label: String,
    },
    /// Run a kernel once on random inputs and check it against the CPU reference; with
    /// `--interpret` (or `TILUS_BACKEND=interp`) on the CPU interpreter, without a GPU.
    Run {
        /// Kernel name (see `tilus list`).
        kernel: String,
        /// Hyperparameters, e.g. `--set block_m=128 --set block_k=32`.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Problem size MxNxK (n and k are compile-time constants).
        #[arg(long, default_value = "256x256x256")]
        size: String,
        /// Run on the CPU interpreter.
        #[arg(long)]
        interpret: bool,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run blocks one after another instead of in parallel.
        #[arg(long)]
        sequential: bool,
    },
    /// List the kernels this command knows.
    List,
    /// Report what this machine can do: driver, GPU, NVRTC, cache.
    Doctor,
    /// Many launches of v0 and v1 over random shapes, each verified against cuBLAS (needs a GPU).
    Soak {
        /// Launches (alternating v0 and v1).
        #[arg(long, default_value_t = 10000)]
        launches: usize,
        /// Largest M, N, K.
        #[arg(long, default_value_t = 8192)]
        max: usize,
        /// Distinct (N, K) pairs (each a compile-time specialization).
        #[arg(long, default_value_t = 64)]
        pool: usize,
        /// Seed of the shapes and inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Inspect or clear the on-disk cache (`TILUS_CACHE_DIR`).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

#[derive(Subcommand)]
enum CacheAction {
    /// List compiled programs and dispatch tables.
    Ls,
    /// Show one program entry (by directory name or prefix) or one dispatch table.
    Show {
        /// Entry name or prefix.
        name: String,
    },
    /// Remove everything.
    Clean,
}

#[derive(clap::Args)]
struct KernelArgs {
    /// Kernel name (see `tilus list`).
    kernel: String,
    /// Hyperparameters, e.g. `--set block_m=128 --set block_k=32`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
    /// Problem size MxNxK that fixes the compile-time constants.
    #[arg(long, default_value = "4096x4096x4096")]
    size: String,
}

pub(crate) fn parse_size(s: &str) -> Result<(usize, usize, usize), String> {
    let parts: Vec<&str> = s.split('x').collect();
    let nums: Result<Vec<usize>, _> = parts.iter().map(|p| p.trim().parse::<usize>()).collect();
    match nums {
        Ok(v) if v.len() == 3 && v.iter().all(|&x| x > 0) => Ok((v[0], v[1], v[2])),
        _ => Err(format!("`{s}` is not a size MxNxK of positive integers")),
    }
}

fn parse_sets(sets: &[String]) -> Result<Vec<(String, i64)>, String> {
    sets.iter()
        .map(|s| {
            let (k, v) = s
                .split_once('=')
                .ok_or_else(|| format!("`--set {s}`: expected NAME=VALUE"))?;
            let v = v
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("`--set {s}`: {v} is not an integer"))?;
            Ok((k.trim().to_string(), v))
        })
        .collect()
}

fn entry(name: &str) -> Result<hopper_matmul::registry::Entry, String> {
    hopper_matmul::registry::find(name).ok_or_else(|| {
        let known: Vec<&str> = hopper_matmul::registry::entries()
            .iter()
            .map(|e| e.name)
            .collect();
        format!("unknown kernel `{name}`; known: {}", known.join(", "))
    })
}

fn planned(args: &KernelArgs) -> Result<(tilus::ir::Program, tilus::ir::LaunchPlan), String> {
    let e = entry(&args.kernel)?;
    let script = (e.with)(&parse_sets(&args.sets)?)?;
    let (m, n, k) = parse_size(&args.size)?;
    let program = script
        .trace(&(e.consts)(m, n, k))
        .map_err(|e| e.to_string())?;
    tilus::passes::compile_program(program).map_err(|e| e.to_string())
}

fn bench(
    versions: &str,
    sizes: &str,
    warmup: usize,
    rounds: usize,
    sets: &[String],
    fixed: bool,
) -> Result<bool, String> {
    use hopper_matmul::run::{verify_and_bench, BenchOptions, Version, V0};
    let shapes: Vec<(usize, usize, usize)> =
        sizes.split(',').map(parse_size).collect::<Result<_, _>>()?;
    let device = tilus::runtime::Device::open(0).map_err(|e| e.to_string())?;
    let mut owned: Vec<Box<dyn Version>> = vec![];
    for v in versions.split(',') {
        match v.trim() {
            "v0" => {
                let config = hopper_matmul::v0::MatmulTma::with(&parse_sets(sets)?)?;
                println!(
                    "v0 config: {}",
                    tilus::lang::config_string(&format!("{config:?}"))
                );
                owned.push(Box::new(V0::new(config, &device)));
            }
            "v1" if sets.is_empty() && !fixed => {
                println!("v1: autotuned over its 12 configurations");
                owned.push(Box::new(
                    hopper_matmul::run::V1::autotuned(&device).map_err(|e| e.to_string())?,
                ));
            }
            "v1" => {
                let config = hopper_matmul::v1::MatmulWgmma::with(&parse_sets(sets)?)?;
                println!(
                    "v1 config: {}",
                    tilus::lang::config_string(&format!("{config:?}"))
                );
                owned.push(Box::new(hopper_matmul::run::V1::new(config, &device)));
            }
            other => return Err(format!("unknown version `{other}` (available: v0, v1)")),
        }
    }
    println!("GPU: {}", device.name());
    let refs: Vec<&dyn Version> = owned.iter().map(|b| b.as_ref()).collect();
    let opts = BenchOptions {
        warmup,
        rounds,
        ..BenchOptions::default()
    };
    let (rows, ok) = verify_and_bench(&device, &refs, &shapes, &opts).map_err(|e| e.to_string())?;
    hopper_matmul::harness::print_table(&rows);
    Ok(ok)
}

fn run(cli: Cli) -> Result<bool, String> {
    match cli.command {
        Command::Emit(args) => {
            let (p, plan) = planned(&args)?;
            print!("{}", tilus::codegen::emit_cuda(&p, &plan));
            Ok(true)
        }
        Command::Ir(args) => {
            let (p, _) = planned(&args)?;
            print!("{}", tilus::ir::print_program(&p));
            Ok(true)
        }
        Command::Check { kernel, size } => check::run(&entry(&kernel)?, parse_size(&size)?),
        Command::Bench {
            what,
            versions,
            sizes,
            size,
            warmup,
            rounds,
            launches,
            sets,
            fixed,
            label,
        } => match what.as_str() {
            "tune" => bench_tune::tune(parse_size(size.as_deref().unwrap_or("4096x4096x4096"))?),
            "launch" => bench_tune::launch(
                parse_size(size.as_deref().unwrap_or("128x256x64"))?,
                launches,
            ),
            "first-call" => bench_tune::first_call(
                parse_size(size.as_deref().unwrap_or("4096x4096x4096"))?,
                &label,
            )
            .map(|_| true),
            _ => bench(&versions, &sizes, warmup, rounds, &sets, fixed),
        },
        Command::Cache { action } => {
            match action {
                CacheAction::Ls => cache::ls(),
                CacheAction::Show { name } => cache::show(&name)?,
                CacheAction::Clean => cache::clean()?,
            }
            Ok(true)
        }
        Command::Run {
            kernel,
            sets,
            size,
            interpret,
            seed,
            sequential,
        } => run::run(run::RunArgs {
            kernel,
            sets: parse_sets(&sets)?,
            size: parse_size(&size)?,
            interpret,
            seed,
            sequential,
        }),
        Command::Soak {
            launches,
            max,
            pool,
            seed,
        } => soak::soak(launches, max, pool.max(1), seed),
        Command::Doctor => {
            let r = tilus::doctor::report();
            println!("{r}");
            Ok(true)
        }
        Command::List => {
            for e in hopper_matmul::registry::entries() {
                println!("{:<20} {}", e.name, e.about);
            }
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    // Structured logs (tuning decisions, candidate timings) on request: TILUS_LOG=debug, ...
    if let Ok(filter) = std::env::var("TILUS_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
