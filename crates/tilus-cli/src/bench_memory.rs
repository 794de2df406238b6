//! `tilus bench memory`: the memory-bound kernels of the registry (`vector_add`, `softmax`,
//! `layer_norm`, `rms_norm`), each checked against its host reference and timed interleaved with a
//! device-to-device copy of the bytes it reads and writes.

use crate::out::{outln, CliError, CliResult};
use tilus_bench::bandwidth::{verify_and_time, write_table, Choice};
use tilus_bench::registry::{self, Entry};
use tilus_bench::run::BenchOptions;
use tilus_bench::size::Size;

/// The options of `tilus bench memory`.
pub(crate) struct MemoryArgs {
    pub kernels: String,
    pub sizes: String,
    pub warmup: usize,
    pub rounds: usize,
    /// What precedes each timed run.
    pub timing: tilus_bench::harness::Timing,
    pub sets: Vec<String>,
    pub fixed: bool,
}

/// The memory-bound entries named by `--kernels`, in order; unknown, repeated and empty names
/// are errors, and so are kernels that are not memory-bound.
fn chosen(kernels: &str) -> CliResult<Vec<&'static Entry>> {
    let available: Vec<&'static str> = crate::kernels()
        .entries()
        .iter()
        .filter(|e| e.memory.is_some())
        .map(|e| e.name)
        .collect();
    let names: Vec<&str> = kernels.split(',').map(str::trim).collect();
    if names.iter().all(|n| n.is_empty()) {
        return Err(CliError::Usage(format!(
            "--kernels is empty (available: {})",
            available.join(", ")
        )));
    }
    let mut out = vec![];
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(CliError::Usage(format!(
                "kernel `{name}` is listed twice in --kernels"
            )));
        }
        match crate::kernels().find(name).filter(|e| e.memory.is_some()) {
            Some(e) => out.push(e),
            None => {
                return Err(CliError::Usage(format!(
                    "`{name}` is not a memory-bound kernel (available: {})",
                    available.join(", ")
                )))
            }
        }
    }
    Ok(out)
}

/// Runs the benchmark; `Ok(false)` when a check failed.
pub(crate) fn memory(a: &MemoryArgs) -> CliResult<bool> {
    // everything the command line says is checked before the GPU is touched
    let shapes: Vec<(usize, usize)> = Size::parse_list(tilus_bench::rows::DIMS, &a.sizes)?
        .iter()
        .map(|s| s.dims().map(|[r, c]| (r, c)))
        .collect::<Result<_, _>>()?;
    let sets = registry::parse_settings(&a.sets)?;
    if a.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    let entries = chosen(&a.kernels)?;
    for e in &entries {
        (e.configure)(&sets)?;
        for &(r, c) in &shapes {
            let memory = e.memory.as_ref().expect("chosen entries are memory-bound");
            let dims = (memory.size)(r, c);
            Size::new(e.workload.dims(), &dims)
                .map_err(|err| CliError::Usage(format!("{} at {r}x{c}: {err}", e.name)))?;
        }
    }
    let choice = if sets.is_empty() && !a.fixed {
        Choice::Tuned
    } else {
        Choice::Fixed(&sets)
    };
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    match choice {
        Choice::Tuned => outln!("configurations: autotuned for each kernel and size"),
        Choice::Fixed(_) => outln!("configurations: each kernel's default, with the --set values"),
    }
    let opts = BenchOptions {
        warmup: a.warmup,
        rounds: a.rounds,
        timing: a.timing,
        ..BenchOptions::default()
    };
    let mut stdout = std::io::stdout();
    let (rows, ok) = verify_and_time(&mut stdout, &device, &entries, &shapes, choice, &opts)?;
    write_table(&mut stdout, &rows)?;
    Ok(ok)
}
