//! `tilus bench matmul`: the matmul versions of the registry, verified against cuBLAS and timed
//! interleaved with it; with `--record`, the measured rows appended to a results file
//! ([`crate::record`]).

use crate::operand::BenchOperand;
use crate::out::{outln, CliError, CliResult};
use crate::record::{self, Results, RunInfo};
use half::{bf16, f16};
use std::path::PathBuf;
use tilus_bench::operand::Operand;
use tilus_bench::registry::{self, Entry};
use tilus_bench::run::{verify_and_bench_to, BenchOptions, Version};
use tilus_bench::size::Size;

/// The options of `tilus bench matmul`.
pub(crate) struct MatmulArgs {
    pub versions: String,
    pub sizes: String,
    pub warmup: usize,
    pub rounds: usize,
    /// What precedes each timed run.
    pub timing: tilus_bench::harness::Timing,
    pub sets: Vec<String>,
    pub fixed: bool,
    /// The results file to append the measured rows to, if any.
    pub record: Option<PathBuf>,
    /// Where to draw the run's chart, if anywhere.
    pub plot: Option<PathBuf>,
    /// The operand type (`f16`, `bf16`).
    pub dtype: String,
}

/// One item of `--versions`: a version, and the settings written after it in brackets
/// (`v6[persistent=0 group_m=1]`: that configuration, fixed; `v6[]`: its default), which run
/// beside the others in the same process (an ablation).
struct Chosen {
    /// The registry's entry; `None` for `matmul`, the entry point that picks a kernel by shape
    /// ([`tilus_kernels::gemm::Gemm`]).
    entry: Option<&'static Entry>,
    /// The label in tables and results (`v6[persistent=0]`), or `None` for a plain name.
    label: Option<String>,
    /// The bracketed settings (`None` without brackets).
    sets: Option<Vec<(String, i64)>>,
}

/// The name of the entry point that picks a kernel by shape, in `--versions` and in results.
const GEMM: &str = "matmul";

/// The items of `--versions`, in order; unknown, repeated and empty names are errors.
fn chosen(versions: &str) -> CliResult<Vec<Chosen>> {
    let names: Vec<&str> = versions.split(',').map(str::trim).collect();
    if names.iter().all(|n| n.is_empty()) {
        return Err(CliError::Usage(format!(
            "--versions is empty (available: {})",
            crate::kernels().matmul_versions().join(", ")
        )));
    }
    let mut out = vec![];
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(CliError::Usage(format!(
                "version `{name}` is listed twice in --versions"
            )));
        }
        let (version, sets) = match name.split_once('[') {
            None => (*name, None),
            Some((version, rest)) => {
                let Some(inside) = rest.strip_suffix(']') else {
                    return Err(CliError::Usage(format!(
                        "`{name}` in --versions: settings go in brackets, `v6[persistent=0 group_m=1]`"
                    )));
                };
                let words: Vec<String> = inside.split_whitespace().map(String::from).collect();
                (version.trim(), Some(registry::parse_settings(&words)?))
            }
        };
        let label = sets.as_ref().map(|s: &Vec<(String, i64)>| {
            let shown: Vec<String> = s.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{version}[{}]", shown.join(" "))
        });
        let entry = if version == GEMM {
            if sets.is_some() {
                return Err(CliError::Usage(format!(
                    "`{name}` in --versions: `{GEMM}` picks its kernels itself and takes no settings"
                )));
            }
            None
        } else {
            Some(crate::kernels().matmul_version(version)?)
        };
        out.push(Chosen { entry, label, sets });
    }
    Ok(out)
}

/// A version shown under another name (a configuration of an ablation).
struct Labeled<T: Operand> {
    label: String,
    inner: Box<dyn Version<T>>,
}

impl<T: Operand> Version<T> for Labeled<T> {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn launch(
        &self,
        stream: &std::sync::Arc<tilus::cudarc::driver::CudaStream>,
        p: &mut tilus_bench::harness::Problem<T>,
    ) -> tilus::Result<()> {
        self.inner.launch(stream, p)
    }
    fn describe(
        &self,
        stream: &std::sync::Arc<tilus::cudarc::driver::CudaStream>,
        p: &mut tilus_bench::harness::Problem<T>,
    ) -> Option<String> {
        self.inner.describe(stream, p)
    }
}

/// Runs the benchmark; `Ok(false)` when a check failed.
pub(crate) fn matmul(a: &MatmulArgs) -> CliResult<bool> {
    // everything the command line says is checked before the GPU is touched
    let shapes: Vec<(usize, usize, usize)> =
        Size::parse_list(tilus_bench::workloads::matmul::DIMS, &a.sizes)?
            .iter()
            .map(|s| s.dims().map(|[m, n, k]| (m, n, k)))
            .collect::<Result<_, _>>()?;
    let sets = registry::parse_settings(&a.sets)?;
    if a.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    for &(m, n, k) in &shapes {
        tilus_bench::harness::Problem::ensure_host(m, n, k)?;
    }
    // FP8: one kernel beside cuBLASLt's (`--versions` does not apply)
    if crate::bench_fp8::FP8_DTYPES.contains(&a.dtype.as_str()) {
        let opts = tilus_bench::run::BenchOptions {
            warmup: a.warmup,
            rounds: a.rounds,
            timing: a.timing,
            ..Default::default()
        };
        return crate::bench_fp8::fp8(&a.dtype, &shapes, (&sets, a.fixed), &opts);
    }
    let chosen = chosen(&a.versions)?;
    for c in &chosen {
        // bracketed settings come on top of --set
        let mut all = sets.clone();
        all.extend(c.sets.iter().flatten().cloned());
        if let Some(e) = &c.entry {
            (e.configure)(&all)?;
        }
    }
    // the operand type, and a version without a kernel in it, before any file is touched
    match a.dtype.as_str() {
        "f16" => {}
        "bf16" => {
            for c in &chosen {
                let mv = c.entry.as_ref().and_then(|e| e.matmul.as_ref());
                if let Some(mv) = mv.filter(|mv| mv.bf16.is_none()) {
                    return Err(CliError::Usage(format!(
                        "`{}` has no bf16 kernel (with --dtype bf16: {})",
                        mv.version,
                        bf16_versions().join(", ")
                    )));
                }
            }
        }
        other => {
            return Err(CliError::Usage(format!(
                "unknown --dtype `{other}` (f16, bf16, e4m3, e5m2)"
            )))
        }
    }
    // a results file that cannot take the rows is said before any GPU time is spent
    let results = a.record.as_deref().map(Results::open).transpose()?;
    if let Some(path) = &a.plot {
        crate::plot::check_writable(path)?;
    }
    let checked = Checked {
        shapes,
        chosen,
        sets,
        results,
    };
    if a.dtype == "bf16" {
        run::<bf16>(a, checked)
    } else {
        run::<f16>(a, checked)
    }
}

/// What the command line says, checked.
struct Checked {
    shapes: Vec<(usize, usize, usize)>,
    chosen: Vec<Chosen>,
    sets: Vec<(String, i64)>,
    results: Option<Results>,
}

/// The versions `--dtype bf16` runs.
fn bf16_versions() -> Vec<String> {
    let mut names: Vec<String> = crate::kernels()
        .entries()
        .iter()
        .filter_map(|e| e.matmul.as_ref())
        .filter(|mv| mv.bf16.is_some())
        .map(|mv| mv.version.to_string())
        .collect();
    names.push(GEMM.to_string());
    names
}

/// The run itself, in operand type `T`, once the command line has been checked.
fn run<T: BenchOperand>(a: &MatmulArgs, checked: Checked) -> CliResult<bool> {
    let Checked {
        shapes,
        chosen,
        sets,
        results,
    } = checked;
    let device = tilus::runtime::Device::open(0)?;
    if results.is_some() {
        record::check_commit(record::COMMIT)?;
    }
    let started = std::time::SystemTime::now();
    let mut owned: Vec<Box<dyn Version<T>>> = vec![];
    for c in &chosen {
        let Some(entry) = &c.entry else {
            outln!("{GEMM}: v6, stream-K or split-K by shape, each autotuned (K off 16 bytes: the general GEMM)");
            owned.push(Box::new(tilus_kernels::gemm::Gemm::<T>::new(&device)?));
            continue;
        };
        let Some(mv) = entry.matmul.as_ref() else {
            continue;
        };
        let (Some(fixed), Some(tuned)) = (T::fixed(mv), T::tuned(mv)) else {
            // checked with the command line
            continue;
        };
        if let (Some(label), Some(own)) = (&c.label, &c.sets) {
            let mut all = sets.to_vec();
            all.extend(own.iter().cloned());
            let (v, shown) = fixed(&all, &device)?;
            outln!("{label} config: {shown}");
            owned.push(Box::new(Labeled {
                label: label.clone(),
                inner: v,
            }));
        } else if mv.tuned_in_bench && sets.is_empty() && !a.fixed {
            outln!(
                "{}: autotuned over its {} configurations",
                mv.version,
                (entry.space)().len()
            );
            owned.push(tuned(&device)?);
        } else {
            let (v, shown) = fixed(&sets, &device)?;
            outln!("{} config: {shown}", mv.version);
            owned.push(v);
        }
    }
    outln!("GPU: {}, {}", device.name(), T::NAME);
    let refs: Vec<&dyn Version<T>> = owned.iter().map(|b| b.as_ref()).collect();
    let opts = BenchOptions {
        warmup: a.warmup,
        rounds: a.rounds,
        timing: a.timing,
        ..BenchOptions::default()
    };
    let mut stdout = std::io::stdout();
    let (rows, ok) = verify_and_bench_to(&mut stdout, &device, &refs, &shapes, &opts)?;
    tilus_bench::harness::write_table(&mut stdout, &rows)?;
    if let Some(results) = results {
        // failed checks are recorded as FAIL, not left out: the file keeps what happened
        let run = RunInfo {
            date: crate::utc::iso8601(started),
            gpu: device.name().to_string(),
            commit: record::COMMIT.to_string(),
            dtype: T::NAME.to_string(),
            timing: a.timing.name().to_string(),
        };
        // a labeled configuration keeps its settings after the kernel's name
        let kernel_of = |shown: &str| {
            let (version, settings) = match shown.split_once('[') {
                Some((v, rest)) => (v, format!("[{rest}")),
                None => (shown, String::new()),
            };
            if version == GEMM {
                return Some(GEMM.to_string());
            }
            chosen
                .iter()
                .filter_map(|c| c.entry.as_ref())
                .find(|e| e.matmul.as_ref().is_some_and(|m| m.version == version))
                .map(|e| format!("{}{settings}", e.name))
        };
        let records = record::records(&rows, refs.len(), kernel_of);
        let n = results.append(&run, &records)?;
        outln!("recorded {n} rows in {}", results.path().display());
    }
    if let Some(path) = &a.plot {
        let records = record::records(&rows, refs.len(), |v| Some(format!("hopper_matmul_{v}")));
        let plotted: Vec<record::Record> = records.into_iter().filter(|r| r.passed).collect();
        let title = format!("Hopper matmul on {} against cuBLAS", device.name());
        crate::plot::write_svg(path, &crate::plot::series_svg(&plotted, &title)?)?;
        outln!("drew {}", path.display());
    }
    Ok(ok)
}
