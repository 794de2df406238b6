//! `tilus`: look at, compile, run and benchmark the kernels of the series.
//!
//! - `tilus list`: the kernels of the registry
//! - `tilus emit hopper_matmul_v0 [--set block_m=128 ...] [--size MxNxK]`: the generated CUDA
//! - `tilus ir hopper_matmul_v0 [...]`: the planned IR
//! - `tilus check hopper_matmul_v0 [--size MxNxK]`: compile every config of the search space
//!   with NVRTC (no GPU needed) and report registers, spills, shared memory or why it failed
//! - `tilus run hopper_matmul_v0 [--size MxNxK] [--interpret]`: one run on random inputs,
//!   checked against a reference: on the GPU against cuBLAS, on the CPU interpreter with
//!   `--interpret` or without a GPU
//! - `tilus bench matmul --versions v0 --sizes 4096x4096x4096,8192x8192x8192 [--record]`: verify
//!   against cuBLAS and time beside it (`--record`: append the rows to `docs/perf/results.csv`);
//!   `tilus bench memory --kernels vector_add,softmax,layer_norm,rms_norm`:
//!   verify the memory-bound kernels and time them beside a device-to-device copy;
//!   `tilus bench tune [--version v2]`, `tilus bench launch`: host-side costs
//! - `tilus soak`: many launches over random shapes, each checked against cuBLAS (`--layouts`:
//!   the general GEMM's orders, strides and batches, each element checked exactly)
//! - `tilus cache ls`, `tilus cache show NAME`, `tilus cache clean`: the compiled programs and
//!   dispatch tables on disk
//! - `tilus doctor`: what this machine can do (driver, GPU, NVRTC, cache)
//!
//! Every kernel-specific piece comes from the [`Registry`] given to [`main`]: the `tilus`
//! binary gives the built-in one (the tutorial series and the kernel library); a crate of
//! one's own gives its kernels, from a binary of its own (see
//! `docs/tutorials/your-first-kernel-crate.md`):
//!
//! ```no_run
//! // src/bin/tilus.rs of a kernel crate
//! fn main() -> std::process::ExitCode {
//!     let registry = tilus_bench::registry::Registry::new(vec![/* my_kernels::entry() */]);
//!     match registry {
//!         Ok(registry) => tilus_cli::main(registry),
//!         Err(e) => {
//!             eprintln!("error: {e}");
//!             std::process::ExitCode::FAILURE
//!         }
//!     }
//! }
//! ```
//!
//! Bad arguments exit with status 2, failures with 1; a closed stdout ends the command quietly.
//! `TILUS_LOG=debug` (any `tracing` filter) prints the autotuner's decisions and timings.

mod bench;
mod bench_attention;
mod bench_epilogue;
mod bench_fp8;
mod bench_memory;
mod bench_quant;
mod bench_tune;
mod cache;
mod check;
mod flagship;
mod operand;
mod out;
mod plot;
mod record;
mod run;
mod soak;
mod soak_layouts;
mod utc;

use clap::{Parser, Subcommand};
use out::{out, outln, warnln, CliError, CliResult};
use std::process::ExitCode;
use tilus_bench::harness::Timing;
use tilus_bench::registry::{self, Entry, Registry};
use tilus_bench::run::BenchOptions;

#[derive(Parser)]
#[command(
    name = "tilus",
    // the commit too, so that a binary copied to a GPU host says what it was built from
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TILUS_COMMIT"), ")"),
    about = "Tilus for Rust: emit, check, run and benchmark tile-level Hopper kernels"
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
    ///
    /// Fails when a configuration breaks NVRTC or when none compiles.
    Check {
        /// Kernel name (see `tilus list`).
        kernel: String,
        /// Problem size (MxNxK for a matmul, ROWSxCOLS for a row-wise kernel, N for a vector)
        /// that fixes the compile-time constants [default: the kernel's, 4096x4096x4096 for a
        /// matmul].
        #[arg(long)]
        size: Option<String>,
    },
    /// Verify kernels against references and time them beside cuBLAS or a copy; host-side
    /// costs (needs a GPU).
    Bench {
        #[command(subcommand)]
        what: Box<BenchCommand>,
    },
    /// Run a kernel once on random inputs and check it against a reference.
    ///
    /// On the GPU the reference is cuBLAS for a matmul, the host's for the memory-bound
    /// kernels; with `--interpret` (or `TILUS_BACKEND=interp`),
    /// or when there is no GPU (said on stderr), the kernel runs on the CPU interpreter and is
    /// checked against a CPU reference.
    Run {
        /// Kernel name (see `tilus list`).
        kernel: String,
        /// Hyperparameters, e.g. `--set block_m=128 --set block_k=32`.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Problem size (MxNxK for a matmul, n and k compile-time constants; ROWSxCOLS for a
        /// row-wise kernel, cols a constant; N for a vector) [default: the kernel's small
        /// size, 256x256x256 for a matmul].
        #[arg(long)]
        size: Option<String>,
        /// Run on the CPU interpreter.
        #[arg(long)]
        interpret: bool,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run blocks one after another instead of in parallel (interpreter).
        #[arg(long)]
        sequential: bool,
    },
    /// The main job: every step of the matmul series and the library's GEMM verified and timed
    /// beside cuBLAS, the memory-bound kernels beside a device copy, one table and the chart;
    /// without a GPU, each kernel on the CPU interpreter and through NVRTC.
    Flagship {
        /// The matmul size.
        #[arg(long, default_value = "4096x4096x4096", value_name = "MxNxK")]
        matmul: String,
        /// The memory-bound kernels' size.
        #[arg(long, default_value = "16384x8192", value_name = "ROWSxCOLS")]
        memory: String,
        /// Timed rounds (the median is reported).
        #[arg(long, default_value_t = 50)]
        rounds: usize,
        /// Where the chart is drawn.
        #[arg(long, default_value = "target/flagship.svg")]
        plot: std::path::PathBuf,
        /// Interpret and compile only, even where there is a GPU.
        #[arg(long)]
        no_gpu: bool,
    },
    /// List the kernels this command knows.
    List,
    /// Report what this machine can do: driver, GPU, NVRTC, cache.
    Doctor,
    /// Many launches of the matmul versions over random shapes, each verified against cuBLAS
    /// (needs a GPU).
    Soak {
        /// Launches (taking the versions in turn).
        #[arg(long, default_value_t = 10000)]
        launches: usize,
        /// Largest M, N, K (at least 8; default 8192). With `--layouts`: the largest M and N
        /// (K goes to twice it), at most 4096, default 512.
        #[arg(long)]
        max: Option<u64>,
        /// Distinct (N, K) pairs (each a compile-time specialization; at least 1).
        #[arg(long, default_value_t = 64)]
        pool: usize,
        /// Seed of the shapes and inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The operand type (f16, bf16: the versions with a bf16 kernel, against cuBLAS in
        /// bf16).
        #[arg(long, default_value = "f16")]
        dtype: String,
        /// Soak the general GEMM instead (`gemm::general`): random batches, orders, leading
        /// dimensions, batch strides and scales, every element checked exactly on the host
        /// (`--max` is then the largest M and N, at most 4096; K goes to twice it).
        #[arg(long)]
        layouts: bool,
    },
    /// Draw the matmul series from recorded rows (`docs/perf/results.csv`): per shape, cuBLAS
    /// and each version's latest passed row, TFLOPS and the ratio to cuBLAS of its run, as
    /// an SVG chart.
    Plot {
        /// The results file.
        #[arg(default_value = "docs/perf/results.csv")]
        results: std::path::PathBuf,
        /// Where the chart goes.
        #[arg(long, default_value = "docs/perf/series.svg")]
        out: std::path::PathBuf,
        /// The operand type whose rows are drawn (f16, bf16).
        #[arg(long, default_value = "f16")]
        dtype: String,
    },
    /// Inspect or clear the on-disk cache (`TILUS_CACHE_DIR`).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

/// `--timing`, shared by the benchmarks that time kernels.
#[derive(clap::Args)]
struct TimingArg {
    /// What precedes each timed run: `flushed` (the L2 cache evicted, then left clean, and the
    /// device kept busy, so the events time the kernel alone, under sustained load),
    /// `written` (evicted by a write alone, whose dirty lines a run that reads past them
    /// writes back: nvbench's and Triton's flush) or `idle` (each run alone on an idle
    /// device, its launch counted).
    #[arg(long = "timing", value_name = "TIMING", default_value = "flushed", value_parser = Timing::parse)]
    value: Timing,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The matmul versions against cuBLAS: verified, then timed interleaved with it.
    Matmul {
        /// Versions, comma-separated (v0 to v6, split_k, stream_k); `v6[persistent=0 group_m=1]` runs
        /// that configuration of v6, fixed, beside the others (an ablation); `matmul` is the
        /// entry point that picks v6, stream-K or split-K by shape (and runs K off 16 bytes
        /// through the general GEMM).
        #[arg(long, default_value = "v0")]
        versions: String,
        /// Sizes MxNxK, comma-separated.
        #[arg(long, default_value = "4096x4096x4096")]
        sizes: String,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported; at least 1).
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        #[command(flatten)]
        timing: TimingArg,
        /// Hyperparameters, e.g. `--set block_m=128` (without: each version's default, or
        /// autotuned for the versions that tune).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Use each version's default configuration instead of autotuning.
        #[arg(long)]
        fixed: bool,
        /// Append one CSV row per kernel and shape (date, GPU, commit, TFLOPS beside cuBLAS's,
        /// check) to docs/perf/results.csv under the current directory; the file is checked
        /// before the GPU is used and created with its header when missing. A binary built from
        /// uncommitted changes (its commit ends in `-dirty`) records nothing: commit first.
        #[arg(long)]
        record: bool,
        /// Append the rows to this file instead (implies --record).
        #[arg(long, value_name = "PATH")]
        record_to: Option<std::path::PathBuf>,
        /// Draw the run's TFLOPS and ratios per shape as an SVG chart in this file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<std::path::PathBuf>,
        /// The operand type of A, B and C: f16, or bf16 (v6, split_k, stream_k and matmul; cuBLAS in
        /// bf16 beside them); or e4m3 / e5m2: the FP8 GEMM (`gemm::fp8`, bf16 out, per-tensor
        /// scales) against cuBLASLt's, `--versions` not applying.
        #[arg(long, default_value = "f16")]
        dtype: String,
    },
    /// The fused matmul epilogue against cuBLAS, cuBLAS + a separate elementwise pass and
    /// plain v6 (with the fused kernel's configuration, and autotuned): verified, then timed
    /// interleaved.
    Epilogue {
        /// Sizes MxNxK, comma-separated.
        #[arg(long, default_value = "4096x4096x4096")]
        sizes: String,
        /// The activation: identity, relu or gelu.
        #[arg(long, default_value = "gelu")]
        act: String,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported; at least 1).
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        #[command(flatten)]
        timing: TimingArg,
        /// The fused kernel's main loop with v6's hyperparameters, e.g. `--set ping_pong=1
        /// --set block_n=128` (v6's default with them applied; without: autotuned).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// The memory-bound kernels: verified against their host references, then timed
    /// interleaved with a device-to-device copy of the bytes they read and write.
    Memory {
        /// Kernels, comma-separated (vector_add, vector_add_f32, softmax, layer_norm, rms_norm).
        #[arg(long, default_value = "vector_add,softmax,layer_norm,rms_norm")]
        kernels: String,
        /// Sizes ROWSxCOLS, comma-separated: the matrix of a row-wise kernel, a vector of
        /// ROWS·COLS elements for vector_add.
        #[arg(long, default_value = "16384x8192,32768x4096")]
        sizes: String,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported; at least 1).
        #[arg(long, default_value_t = 50)]
        rounds: usize,
        #[command(flatten)]
        timing: TimingArg,
        /// Hyperparameters of every kernel, e.g. `--set warps=8` (without: autotuned).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Use each kernel's default configuration instead of autotuning.
        #[arg(long)]
        fixed: bool,
    },
    /// Flash attention forward (`tilus_kernels::attention`) on batches of sequences of one
    /// length: sampled rows verified against the exact attention, then timed (its peers,
    /// cuDNN and FlashAttention, by `scripts/peers/attention.py` in the same device call).
    Attention {
        /// Head dimensions, comma-separated (64, 128, 256).
        #[arg(long, default_value = "64,128,256")]
        head_dims: String,
        /// Sequence lengths, comma-separated.
        #[arg(long, default_value = "1024,4096,16384")]
        seqs: String,
        /// Tokens per batch: the batch is tokens / sequence length.
        #[arg(long, default_value_t = 16384)]
        tokens: usize,
        /// Query heads × head dimension.
        #[arg(long, default_value_t = 2048)]
        width: usize,
        /// Key heads (0: as many as query heads).
        #[arg(long, default_value_t = 0)]
        kv_heads: usize,
        /// Causal, non-causal or both, comma-separated (`false,true`).
        #[arg(long, default_value = "false,true")]
        causal: String,
        /// Element types, comma-separated (f16, bf16).
        #[arg(long, default_value = "f16")]
        dtypes: String,
        /// Kernels, comma-separated: plain, ws, ws+overlap, ws+pingpong, ws+overlap+pingpong
        /// (`all`: each of them).
        #[arg(long, default_value = "all")]
        variants: String,
        /// The specialized kernel (softmax under the products, no ping-pong) with other tiles
        /// too, comma-separated KVxSTAGES: keys per step (64, 128) and stages (2 to 4), `p`
        /// after them for a persistent grid (`128x2p`).
        #[arg(long, default_value = "")]
        ws_tiles: String,
        /// A decode step over a key-value cache (`attention::decode`) instead of the forward
        /// pass: `--contexts`, `--queries` and `--pages` give its shapes, `--head-dims`,
        /// `--width` and `--kv-heads` its heads; the figure is the keys' and values' bytes
        /// read per second.
        #[arg(long)]
        decode: bool,
        /// Decode: batch × context length pairs, comma-separated.
        #[arg(long, default_value = "1x8192,16x4096,64x4096,32x32768")]
        contexts: String,
        /// Decode: new tokens per sequence (1 to 8).
        #[arg(long, default_value_t = 1)]
        queries: usize,
        /// Decode: rows per page of the cache, comma-separated (0: a contiguous cache).
        #[arg(long, default_value = "0")]
        pages: String,
        /// Decode: stages of the kernel's ring, comma-separated (0: the host API's choice).
        #[arg(long, default_value = "0")]
        decode_stages: String,
        /// Decode: splits of the contexts, comma-separated (0: the host API's choice).
        #[arg(long, default_value = "0")]
        decode_splits: String,
        /// Decode: a split launch merges in the kernel (its last split's blocks) instead of
        /// by a second launch.
        #[arg(long)]
        merge_in_kernel: bool,
        /// Decode: the kernel's steps overlapped or not, comma-separated (`false,true`).
        #[arg(long, default_value = "false")]
        decode_overlap: String,
        /// Decode: Q in registers or in shared memory, comma-separated: `auto` (the
        /// kernel's choice: registers over a cache of codes up to head dimension 128),
        /// `true`, `false`.
        #[arg(long, default_value = "auto")]
        decode_q_registers: String,
        /// Decode: a warp group of converters beside the products over a cache of codes or
        /// not, comma-separated: `auto` (the kernel's choice: converters where Q comes from
        /// global memory and the splits are not merged in the kernel), `true`, `false`.
        #[arg(long, default_value = "auto")]
        decode_converters: String,
        /// Decode: the cache's element types, comma-separated: `same` (the attention's
        /// type) or `e4m3` (codes with a scale per key-value head).
        #[arg(long, default_value = "same")]
        kv_dtypes: String,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported; at least 1).
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        #[command(flatten)]
        timing: TimingArg,
    },
    /// The quantized matmul (`tilus_kernels::quant`) against cuBLAS f16 on the dequantized
    /// weights: verified against cuBLAS, then timed interleaved; the packed weights' bytes
    /// per second too.
    Quant {
        /// Sizes MxNxK (M rows of activations, N x K weights), comma-separated.
        #[arg(long, default_value = "1x28672x8192,16x28672x8192,4096x28672x8192")]
        sizes: String,
        /// Weight types, comma-separated (i8, i4, i3, i2, u4, f8e4m3, f8e5m2, f6e3m2, f4e2m1).
        #[arg(long, default_value = "i4,i8,f8e4m3")]
        dtypes: String,
        /// Elements of K that share a scale (0: one per row).
        #[arg(long, default_value_t = 128)]
        group: usize,
        /// Tiles of the few-rows kernel to time beside the picked one where M is few rows,
        /// comma-separated NxSxW: rows of W per block, tiles of K per step, warps.
        #[arg(long, default_value = "")]
        few_rows: String,
        /// Stage counts of the fragment kernel (on prepacked weights) to time beside its
        /// default where it takes the shape, comma-separated.
        #[arg(long, default_value = "")]
        fragment_stages: String,
        /// Counts of blocks sharing each tile's K steps in the fragment kernel, to time
        /// beside the host API's choice, comma-separated (each at every count of
        /// --fragment-stages, or the host's stages without them).
        #[arg(long, default_value = "")]
        fragment_splits: String,
        /// Configurations of the fragment kernel with two warp groups to time beside the host
        /// API's choice, comma-separated BxS: rows of A per block, stages.
        #[arg(long, default_value = "")]
        fragment_wide: String,
        /// Counts of K steps per stage of the fragment kernel (one warp group) to time beside
        /// the host API's choice, comma-separated (each at every count of --fragment-stages,
        /// or the host's stages without them; the host's splits).
        #[arg(long, default_value = "")]
        fragment_stage_steps: String,
        /// Also time the fragment kernel with its products by mma.sync (the host API's rows of
        /// A per block and splits, where M takes 8 or 16 rows a block; at every count of
        /// --fragment-stages or the host's stages).
        #[arg(long)]
        fragment_mma_sync: bool,
        /// Also time the fragment kernel with its scales applied to each group's f32 sums
        /// instead of each f16 pair of codes (the host API's rows of A per block and splits;
        /// one step a stage and each count of --fragment-stage-steps, at every count of
        /// --fragment-stages or the host's stages; plans it cannot take are skipped, said so).
        #[arg(long)]
        fragment_scale_sums: bool,
        /// Warm-up rounds.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Timed rounds (the median is reported; at least 1).
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        #[command(flatten)]
        timing: TimingArg,
    },
    /// Cold and warm first calls of an autotuned matmul version (a fresh cache, then new
    /// processes).
    Tune {
        /// Problem size MxNxK.
        #[arg(long, default_value = "4096x4096x4096")]
        size: String,
        /// The matmul version (v0 to v6).
        #[arg(long, default_value = "v0")]
        version: String,
    },
    /// Host time per launch of the autotuned v0: the public API against a raw cudarc launch
    /// of the same cubin.
    Launch {
        /// Problem size MxNxK.
        #[arg(long, default_value = "128x256x64")]
        size: String,
        /// Launches to time (at least 1).
        #[arg(long, default_value_t = 5000)]
        launches: usize,
    },
    /// One first call in this process (what `tune` runs in its child processes).
    #[command(hide = true)]
    FirstCall {
        /// Problem size MxNxK.
        #[arg(long, default_value = "4096x4096x4096")]
        size: String,
        /// Label of the result line.
        #[arg(long, default_value = "first")]
        label: String,
        /// The matmul version.
        #[arg(long, default_value = "v0")]
        version: String,
    },
}

#[derive(Subcommand)]
enum CacheAction {
    /// List compiled programs and dispatch tables.
    Ls,
    /// Show one program entry or one dispatch table, by name or unambiguous prefix.
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
    /// Problem size (MxNxK for a matmul, ROWSxCOLS for a row-wise kernel, N for a vector)
    /// that fixes the compile-time constants [default: the kernel's, 4096x4096x4096 for a
    /// matmul].
    #[arg(long)]
    size: Option<String>,
}

/// The entry, its configuration and its size for `emit` and `ir`, traced and planned.
fn planned(args: &KernelArgs) -> CliResult<(tilus::ir::Program, tilus::ir::LaunchPlan)> {
    let e: &Entry = kernels().lookup(&args.kernel)?;
    let script = (e.configure)(&registry::parse_settings(&args.sets)?)?;
    let size = e.size(args.size.as_deref(), e.compile_size)?;
    let program = script.trace(&(e.consts)(&size))?;
    Ok(tilus::passes::compile_program(program)?)
}

fn run(cli: Cli) -> CliResult<bool> {
    match cli.command {
        Command::Emit(args) => {
            let (p, plan) = planned(&args)?;
            out!("{}", tilus::codegen::emit_cuda(&p, &plan));
            Ok(true)
        }
        Command::Ir(args) => {
            let (p, _) = planned(&args)?;
            out!("{}", tilus::ir::print_program(&p));
            Ok(true)
        }
        Command::Check { kernel, size } => {
            let e = kernels().lookup(&kernel)?;
            let size = e.size(size.as_deref(), e.compile_size)?;
            check::run(e, &size)
        }
        Command::Bench { what } => match *what {
            BenchCommand::Matmul {
                versions,
                sizes,
                warmup,
                rounds,
                timing,
                sets,
                fixed,
                record,
                record_to,
                plot,
                dtype,
            } => bench::matmul(&bench::MatmulArgs {
                dtype,
                versions,
                sizes,
                warmup,
                rounds,
                timing: timing.value,
                sets,
                fixed,
                record: record_to.or_else(|| record.then(|| crate::record::DEFAULT_PATH.into())),
                plot,
            }),
            BenchCommand::Epilogue {
                sizes,
                act,
                warmup,
                rounds,
                timing,
                sets,
            } => bench_epilogue::epilogue(
                &sizes,
                &act,
                &BenchOptions {
                    warmup,
                    rounds,
                    timing: timing.value,
                    ..BenchOptions::default()
                },
                &sets,
            ),
            BenchCommand::Memory {
                kernels,
                sizes,
                warmup,
                rounds,
                timing,
                sets,
                fixed,
            } => bench_memory::memory(&bench_memory::MemoryArgs {
                kernels,
                sizes,
                warmup,
                rounds,
                timing: timing.value,
                sets,
                fixed,
            }),
            BenchCommand::Attention {
                head_dims,
                width,
                kv_heads,
                dtypes,
                decode,
                contexts,
                queries,
                pages,
                decode_stages,
                decode_splits,
                merge_in_kernel,
                decode_overlap,
                decode_q_registers,
                decode_converters,
                kv_dtypes,
                warmup,
                rounds,
                timing,
                ..
            } if decode => bench_attention::decode(
                &bench_attention::DecodeGrid {
                    head_dims,
                    width,
                    kv_heads,
                    dtypes,
                    contexts,
                    queries,
                    pages,
                    stages: decode_stages,
                    splits: decode_splits,
                    merge_in_kernel,
                    overlap: decode_overlap,
                    q_registers: decode_q_registers,
                    converters: decode_converters,
                    kv_dtypes,
                },
                &BenchOptions {
                    warmup,
                    rounds,
                    timing: timing.value,
                    ..BenchOptions::default()
                },
            ),
            BenchCommand::Attention {
                head_dims,
                seqs,
                tokens,
                width,
                kv_heads,
                causal,
                dtypes,
                variants,
                ws_tiles,
                warmup,
                rounds,
                timing,
                ..
            } => bench_attention::attention(
                &bench_attention::Grid {
                    head_dims,
                    seqs,
                    tokens,
                    width,
                    kv_heads,
                    causal,
                    dtypes,
                    variants,
                    ws_tiles,
                },
                &BenchOptions {
                    warmup,
                    rounds,
                    timing: timing.value,
                    ..BenchOptions::default()
                },
            ),
            BenchCommand::Quant {
                sizes,
                dtypes,
                group,
                few_rows,
                fragment_stages,
                fragment_splits,
                fragment_wide,
                fragment_stage_steps,
                fragment_mma_sync,
                fragment_scale_sums,
                warmup,
                rounds,
                timing,
            } => bench_quant::quant(
                &sizes,
                &dtypes,
                (
                    group,
                    &few_rows,
                    &bench_quant::FragmentFlags {
                        stages: &fragment_stages,
                        splits: &fragment_splits,
                        wide: &fragment_wide,
                        stage_steps: &fragment_stage_steps,
                        mma_sync: fragment_mma_sync,
                        scale_sums: fragment_scale_sums,
                    },
                ),
                &BenchOptions {
                    warmup,
                    rounds,
                    timing: timing.value,
                    ..BenchOptions::default()
                },
            ),
            BenchCommand::Tune { size, version } => bench_tune::tune(&size, &version),
            BenchCommand::Launch { size, launches } => bench_tune::launch(&size, launches),
            BenchCommand::FirstCall {
                size,
                label,
                version,
            } => bench_tune::first_call(&size, &label, &version).map(|_| true),
        },
        Command::Plot {
            results,
            out,
            dtype,
        } => plot::plot_file(&results, &out, &dtype),
        Command::Cache { action } => {
            match action {
                CacheAction::Ls => cache::ls()?,
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
            sets,
            size,
            interpret,
            seed,
            sequential,
        }),
        Command::Soak {
            launches,
            max,
            pool,
            seed,
            dtype,
            layouts: true,
        } => soak_layouts::soak_layouts(soak_layouts::LayoutSoakArgs {
            launches,
            max: max.unwrap_or(512),
            pool,
            seed,
            dtype,
        }),
        Command::Soak {
            launches,
            max,
            pool,
            seed,
            dtype,
            layouts: false,
        } => soak::soak(soak::SoakArgs {
            launches,
            max: max.unwrap_or(8192),
            pool,
            seed,
            dtype,
        }),
        Command::Flagship {
            matmul,
            memory,
            rounds,
            plot,
            no_gpu,
        } => flagship::flagship(&flagship::FlagshipArgs {
            matmul,
            memory,
            rounds,
            plot,
            no_gpu,
        }),
        Command::Doctor => {
            outln!("{}", tilus::doctor::report());
            Ok(true)
        }
        Command::List => {
            for e in kernels().entries() {
                outln!("{:<20} {}", e.name, e.about);
            }
            Ok(true)
        }
    }
}

/// The registry the command runs with (set once, by [`main`]).
static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();

/// The kernels this command knows.
fn kernels() -> &'static Registry {
    REGISTRY.get_or_init(Registry::builtin)
}

/// Runs the `tilus` command line (`std::env::args`) over the kernels of `registry`, and returns
/// the process's exit status: 0 on success, 1 when the command fails, 2 for bad arguments.
pub fn main(registry: Registry) -> ExitCode {
    // a second call in one process keeps the first registry
    let _ = REGISTRY.set(registry);
    // Structured logs (tuning decisions, candidate timings) on request: TILUS_LOG=debug, ...
    if let Ok(filter) = std::env::var("TILUS_LOG") {
        match tracing_subscriber::EnvFilter::try_new(&filter) {
            Ok(f) => {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(f)
                    .with_writer(std::io::stderr)
                    .try_init();
            }
            Err(e) => {
                warnln!("tilus: warning: TILUS_LOG={filter:?} is not a filter ({e}); no logs")
            }
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // help and version on stdout, mistakes on stderr (status 2); a reader that went
            // away is not worth a panic
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match run(cli).and_then(|ok| out::flush().map(|_| ok)) {
        Ok(true) | Err(CliError::Closed) => ExitCode::SUCCESS,
        Ok(false) => {
            warnln!(
                "error: the output does not match the reference, or a version was refused \
                 (see above)"
            );
            ExitCode::FAILURE
        }
        Err(CliError::Usage(m)) => {
            warnln!("error: {m}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(m)) => {
            warnln!("error: {m}");
            ExitCode::FAILURE
        }
    }
}
