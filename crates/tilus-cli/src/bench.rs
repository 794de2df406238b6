//! `tilus bench matmul`: the matmul versions of the registry, verified against cuBLAS and timed
//! interleaved with it.

use crate::out::{outln, CliError, CliResult};
use hopper_matmul::registry::{self, Entry};
use hopper_matmul::run::{verify_and_bench_to, BenchOptions, Version};
use hopper_matmul::size::Size;

/// The options of `tilus bench matmul`.
pub(crate) struct MatmulArgs {
    pub versions: String,
    pub sizes: String,
    pub warmup: usize,
    pub rounds: usize,
    pub sets: Vec<String>,
    pub fixed: bool,
}

/// The entries named by `--versions`, in order; unknown, repeated and empty names are errors.
fn chosen(versions: &str) -> CliResult<Vec<Entry>> {
    let mut all: Vec<Entry> = registry::entries()
        .into_iter()
        .filter(|e| e.matmul.is_some())
        .collect();
    let available: Vec<&'static str> = all
        .iter()
        .filter_map(|e| e.matmul.as_ref().map(|m| m.version))
        .collect();
    let names: Vec<&str> = versions.split(',').map(str::trim).collect();
    if names.iter().all(|n| n.is_empty()) {
        return Err(CliError::Usage(format!(
            "--versions is empty (available: {})",
            available.join(", ")
        )));
    }
    let mut out = vec![];
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(CliError::Usage(format!(
                "version `{name}` is listed twice in --versions"
            )));
        }
        let at = all
            .iter()
            .position(|e| e.matmul.as_ref().is_some_and(|m| m.version == *name))
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "unknown version `{name}` (available: {})",
                    available.join(", ")
                ))
            })?;
        out.push(all.remove(at));
    }
    Ok(out)
}

/// Runs the benchmark; `Ok(false)` when a check failed.
pub(crate) fn matmul(a: &MatmulArgs) -> CliResult<bool> {
    // everything the command line says is checked before the GPU is touched
    let shapes: Vec<(usize, usize, usize)> =
        Size::parse_list(hopper_matmul::matmul::DIMS, &a.sizes)?
            .iter()
            .map(|s| s.dims().map(|[m, n, k]| (m, n, k)))
            .collect::<Result<_, _>>()?;
    let sets = registry::parse_settings(&a.sets)?;
    if a.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    for &(m, n, k) in &shapes {
        hopper_matmul::harness::Problem::ensure_host(m, n, k)?;
    }
    let entries = chosen(&a.versions)?;
    for e in &entries {
        (e.configure)(&sets)?;
    }
    let device = tilus::runtime::Device::open(0)?;
    let mut owned: Vec<Box<dyn Version>> = vec![];
    for e in &entries {
        let Some(mv) = e.matmul.as_ref() else {
            continue;
        };
        match mv.tuned {
            Some(tuned) if sets.is_empty() && !a.fixed => {
                outln!(
                    "{}: autotuned over its {} configurations",
                    mv.version,
                    (e.space)().len()
                );
                owned.push(tuned(&device)?);
            }
            _ => {
                let (v, shown) = (mv.fixed)(&sets, &device)?;
                outln!("{} config: {shown}", mv.version);
                owned.push(v);
            }
        }
    }
    outln!("GPU: {}", device.name());
    let refs: Vec<&dyn Version> = owned.iter().map(|b| b.as_ref()).collect();
    let opts = BenchOptions {
        warmup: a.warmup,
        rounds: a.rounds,
        ..BenchOptions::default()
    };
    let mut stdout = std::io::stdout();
    let (rows, ok) = verify_and_bench_to(&mut stdout, &device, &refs, &shapes, &opts)?;
    hopper_matmul::harness::write_table(&mut stdout, &rows)?;
    Ok(ok)
}
