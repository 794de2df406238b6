//! `tilus flagship`: the main job. What the project offers, verified and timed in one command:
//! every step of the matmul series and the library's GEMM entry point beside cuBLAS, and the
//! memory-bound kernels beside a device-to-device copy, ending with one table and the chart.
//! Without a GPU it says so, runs each kernel on the CPU interpreter at a small size against
//! its reference, and compiles each with NVRTC, showing the resources it needs.

use crate::check::compile_one;
use crate::out::{outln, warnln, CliError, CliResult};
use crate::record;
use tilus::runtime::Device;
use tilus_bench::bandwidth::{verify_and_time, BandwidthRow, Choice};
use tilus_bench::harness::Row;
use tilus_bench::registry::Entry;
use tilus_bench::run::{verify_and_bench_to, BenchOptions, Version};
use tilus_bench::size::Size;

/// The matmul versions of the series, in order, then the library's entry point.
const VERSIONS: &[&str] = &["v0", "v1", "v2", "v3", "v4", "v5", "v6"];

/// The name of the library's entry point in the table (`tilus_kernels::gemm::Gemm`).
const GEMM: &str = "matmul";

/// The memory-bound kernels, each timed beside a copy.
const MEMORY: &[&str] = &["vector_add", "softmax", "layer_norm", "rms_norm"];

/// The kernels behind the library's GEMM entry point that are not steps of the series, for the
/// run without a GPU (its persistent kernel is v6).
const GEMM_KERNELS: &[&str] = &["hopper_matmul_split_k"];

/// What `tilus flagship` was asked to do.
pub(crate) struct FlagshipArgs {
    /// The matmul size, `MxNxK`.
    pub matmul: String,
    /// The memory-bound size, `ROWSxCOLS`.
    pub memory: String,
    /// Timed rounds (the median is reported).
    pub rounds: usize,
    /// Where the chart goes.
    pub plot: std::path::PathBuf,
    /// Runs on the CPU interpreter and NVRTC even where there is a GPU.
    pub no_gpu: bool,
}

/// Runs the main job; `Ok(false)` when a check failed.
pub(crate) fn flagship(a: &FlagshipArgs) -> CliResult<bool> {
    // the command line is checked before anything runs
    let matmul = Size::parse(tilus_bench::workloads::matmul::DIMS, &a.matmul)?;
    let memory = Size::parse(tilus_bench::rows::DIMS, &a.memory)?;
    if a.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    let [m, n, k] = matmul.dims()?;
    let [rows, cols] = memory.dims()?;
    if a.no_gpu {
        return without_gpu();
    }
    match Device::open(0) {
        Ok(device) => {
            crate::plot::check_writable(&a.plot)?;
            on_gpu(&device, (m, n, k), (rows, cols), a)
        }
        Err(e) => {
            warnln!("no GPU here ({e}): each kernel runs on the CPU interpreter against its reference instead, and compiles with NVRTC");
            without_gpu()
        }
    }
}

/// The matmul versions and the entry point beside cuBLAS, the memory-bound kernels beside a
/// copy, one table, the chart.
fn on_gpu(
    device: &Device,
    (m, n, k): (usize, usize, usize),
    (rows, cols): (usize, usize),
    a: &FlagshipArgs,
) -> CliResult<bool> {
    let kernels = crate::kernels();
    let mut versions: Vec<Box<dyn Version>> = vec![];
    for v in VERSIONS {
        let e = kernels.matmul_version(v)?;
        let mv = e
            .matmul
            .as_ref()
            .ok_or_else(|| CliError::failed(format!("{v} has no matmul part")))?;
        if mv.tuned_in_bench {
            versions.push((mv.tuned)(device)?);
        } else {
            versions.push((mv.fixed)(&[], device)?.0);
        }
    }
    versions.push(Box::new(tilus_kernels::gemm::Gemm::<half::f16>::new(
        device,
    )?));
    outln!(
        "GPU: {}; the matmuls autotune on their first run (the choice is cached)",
        device.name()
    );
    let opts = BenchOptions {
        warmup: 3,
        rounds: a.rounds,
        ..BenchOptions::default()
    };
    let refs: Vec<&dyn Version> = versions.iter().map(|v| v.as_ref()).collect();
    let mut stdout = std::io::stdout();
    let (matmul_rows, matmul_ok) =
        verify_and_bench_to(&mut stdout, device, &refs, &[(m, n, k)], &opts)?;
    let memory_entries: Vec<&Entry> = MEMORY
        .iter()
        .map(|name| kernels.lookup(name))
        .collect::<Result<_, _>>()?;
    let (memory_rows, memory_ok) = verify_and_time(
        &mut stdout,
        device,
        &memory_entries,
        &[(rows, cols)],
        Choice::Tuned,
        &opts,
    )?;
    outln!();
    table(&matmul_rows, &memory_rows)?;
    let records = record::records(&matmul_rows, refs.len(), |v| {
        Some(format!("hopper_matmul_{v}"))
    });
    let plotted: Vec<record::Record> = records.into_iter().filter(|r| r.passed).collect();
    let title = format!("Hopper matmul on {} against cuBLAS", device.name());
    crate::plot::write_svg(&a.plot, &crate::plot::series_svg(&plotted, &title)?)?;
    outln!("chart: {}", a.plot.display());
    Ok(matmul_ok && memory_ok)
}

/// The one table of a GPU run: each kernel's speed beside its reference's.
fn table(matmul: &[Row], memory: &[BandwidthRow]) -> CliResult<()> {
    outln!(
        "{:>14} {:>16} {:>6} {:>12} {:>12} {:>8}",
        "kernel",
        "size",
        "check",
        "measured",
        "reference",
        "ratio"
    );
    let cublas = matmul.iter().find(|r| r.name == "cublas");
    for r in matmul.iter().filter(|r| r.name != "cublas") {
        let check = match r.passed {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "-",
        };
        outln!(
            "{:>14} {:>16} {:>6} {:>7.1} TF/s {:>7.1} TF/s {:>7.3}x",
            r.name,
            format!("{}x{}x{}", r.m, r.n, r.k),
            check,
            r.tflops,
            cublas.map_or(f64::NAN, |c| c.tflops),
            r.ratio
        );
    }
    for r in memory {
        outln!(
            "{:>14} {:>16} {:>6} {:>7.0} GB/s {:>7.0} GB/s {:>7.1}%",
            r.kernel,
            r.size,
            "PASS",
            r.kernel_gbs(),
            r.copy_gbs(),
            100.0 * r.ratio()
        );
    }
    outln!("(reference: cuBLAS for the matmuls, a device-to-device copy of the same bytes for the others; every row was checked before it was timed)");
    Ok(())
}

/// The kernels the run without a GPU takes: the series' steps, the GEMM entry point's other
/// kernels, the memory-bound kernels.
fn offline_entries() -> CliResult<Vec<&'static Entry>> {
    let kernels = crate::kernels();
    let mut out = vec![];
    for v in VERSIONS {
        out.push(kernels.matmul_version(v)?);
    }
    for name in GEMM_KERNELS.iter().chain(MEMORY) {
        out.push(kernels.lookup(name)?);
    }
    Ok(out)
}

/// Each kernel on the interpreter at its small size against its reference, then its default
/// configuration through NVRTC at its compile size; one table.
fn without_gpu() -> CliResult<bool> {
    let entries = offline_entries()?;
    let (mut all_passed, mut all_compiled) = (true, true);
    let mut lines = vec![];
    for e in entries {
        let script = (e.configure)(&[])?;
        let run_size = e.size(None, e.run_size)?;
        let started = std::time::Instant::now();
        let check = e.interpret(
            script.as_ref(),
            &run_size,
            1,
            &tilus::interp::Options::default(),
        );
        let (passed, detail) = match &check {
            Ok(r) => (
                r.check.passed(),
                format!("rel. error {:.2e}", r.check.rel_err),
            ),
            Err(err) => (
                false,
                err.to_string().lines().next().unwrap_or("").to_string(),
            ),
        };
        outln!(
            "interpret {} [{}] {run_size}: {} ({detail}; {:.1} s)",
            e.name,
            script.config(),
            if passed { "PASS" } else { "FAIL" },
            started.elapsed().as_secs_f64()
        );
        let compile_size = e.size(None, e.compile_size)?;
        let o = compile_one(script.as_ref(), &(e.consts)(&compile_size));
        let resources = match (o.registers, o.spills, o.smem) {
            (Some(r), Some(s), Some(m)) => {
                format!("{r} registers, {s} bytes spilled, {m} bytes of shared memory")
            }
            _ => o.reason.clone(),
        };
        outln!(
            "compile   {} at {compile_size}: {} ({resources})",
            e.name,
            o.status
        );
        all_passed &= passed;
        all_compiled &= o.ok;
        lines.push((
            e.name,
            run_size.to_string(),
            passed,
            compile_size.to_string(),
            o,
        ));
    }
    outln!();
    outln!(
        "{:>22} {:>14} {:>9} {:>16} {:>8} {:>5} {:>7} {:>9}",
        "kernel",
        "interpreted",
        "check",
        "compiled",
        "nvrtc",
        "regs",
        "spills",
        "smem"
    );
    for (name, run, passed, compile, o) in &lines {
        let show = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
        outln!(
            "{:>22} {:>14} {:>9} {:>16} {:>8} {:>5} {:>7} {:>9}",
            name,
            run,
            if *passed { "PASS" } else { "FAIL" },
            compile,
            o.status,
            show(o.registers),
            show(o.spills),
            show(o.smem)
        );
    }
    outln!("(no GPU: timings need one; `{GEMM}`, the library's entry point, runs v6 or split-K, both above)");
    if all_passed && !all_compiled {
        return Err(CliError::failed(
            "every kernel passed on the interpreter, but not every one compiled with NVRTC (see above)",
        ));
    }
    Ok(all_passed)
}
