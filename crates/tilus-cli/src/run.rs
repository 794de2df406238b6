//! `tilus run <kernel> [--size S] [--interpret]`: random inputs, one run of the kernel and a
//! check against a reference, all from the kernel's registry entry. On the GPU the reference is
//! the workload's device reference (cuBLAS for a matmul); on the CPU interpreter (with
//! `--interpret`, `TILUS_BACKEND=interp`, or when there is no GPU) a CPU reference. The
//! interpreter needs no GPU, so CI can run a kernel end to end.

use crate::out::{outln, warnln, CliResult};
use tilus::interp::{Backend, Options};
use tilus::lang::DynScript;
use tilus::runtime::Device;
use tilus_bench::harness::Check;
use tilus_bench::registry::{self, Entry};
use tilus_bench::size::Size;
use tilus_bench::workload::RunReport;

/// What `tilus run` was asked to do.
pub(crate) struct RunArgs {
    pub kernel: String,
    pub sets: Vec<String>,
    pub size: Option<String>,
    pub interpret: bool,
    pub seed: u64,
    pub sequential: bool,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn check_line(against: &str, c: &Check) -> CliResult<()> {
    outln!(
        "  check against {against}: {} ({} elements, {} non-finite, {} outside tolerance, \
         max |diff| {:.3e}, relative error {:.3e})",
        if c.passed() { "PASS" } else { "FAIL" },
        c.total,
        c.non_finite,
        c.mismatches,
        c.max_abs,
        c.rel_err
    );
    Ok(())
}

/// Runs a kernel of the registry and checks it; `Ok(false)` when the output does not match the
/// reference.
pub(crate) fn run(args: RunArgs) -> CliResult<bool> {
    let e = crate::kernels().lookup(&args.kernel)?;
    let script = (e.configure)(&registry::parse_settings(&args.sets)?)?;
    let size = e.size(args.size.as_deref(), e.run_size)?;
    let backend = if args.interpret {
        Backend::Interp
    } else {
        Backend::from_env()?
    };
    if backend == Backend::Gpu {
        match Device::open(0) {
            Ok(device) => return on_gpu(e, script.as_ref(), &size, &args, &device),
            Err(err) => warnln!("no GPU run: {err}; running on the CPU interpreter instead"),
        }
    }
    interpreted(e, script.as_ref(), &size, &args)
}

fn interpreted(e: &Entry, script: &dyn DynScript, size: &Size, args: &RunArgs) -> CliResult<bool> {
    let opts = Options {
        parallel: !args.sequential,
        ..Options::default()
    };
    let r: RunReport = e.interpret(script, size, args.seed, &opts)?;
    let report = r.interp.unwrap_or_default();
    outln!(
        "{} ({}) at {size}, interpreted on the CPU",
        e.name,
        script.config()
    );
    outln!(
        "  trace + passes: {:.1} ms; interpreter: {:.1} ms ({} blocks, {} TMA copies, {} tensor-core \
         instructions, up to {} tasks per block, {}); CPU reference: {:.1} ms",
        ms(r.prepare),
        ms(r.kernel),
        report.blocks,
        report.tma_copies,
        report.mma_instructions,
        report.max_tasks,
        if args.sequential {
            "blocks one after another"
        } else {
            "blocks in parallel"
        },
        ms(r.reference),
    );
    check_line("the CPU reference", &r.check)?;
    Ok(r.check.passed())
}

fn on_gpu(
    e: &Entry,
    script: &dyn DynScript,
    size: &Size,
    args: &RunArgs,
    device: &Device,
) -> CliResult<bool> {
    let r = e.run_on_gpu(script, size, args.seed, device)?;
    let reference = e.workload.device_reference();
    outln!(
        "{} ({}) at {size}, on {}",
        e.name,
        script.config(),
        device.name()
    );
    outln!(
        "  trace + passes + NVRTC{}: {:.1} ms; kernel: {:.3} ms (launch to completion); {reference}: {:.3} ms",
        if r.from_cache { " (from the cache)" } else { "" },
        ms(r.prepare),
        ms(r.kernel),
        ms(r.reference),
    );
    check_line(reference, &r.check)?;
    Ok(r.check.passed())
}
