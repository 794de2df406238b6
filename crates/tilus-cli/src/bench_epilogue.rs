//! `tilus bench epilogue`: the fused matmul epilogue (on v6) against what it replaces (see
//! `tilus_bench::epilogue_bench`).

use crate::out::{outln, CliError, CliResult};
use tilus_bench::epilogue_bench::{bench_epilogue, ROW_PLAIN, ROW_V6};
use tilus_bench::run::BenchOptions;
use tilus_bench::size::Size;
use tilus_kernels::gemm::epilogue::{Activation, GeluTanh, Identity, Relu};
use tilus_kernels::gemm::persistent::MatmulPersistent;

fn one<A: Activation>(
    device: &tilus::runtime::Device,
    shape: (usize, usize, usize),
    opts: &BenchOptions,
    fixed: Option<&MatmulPersistent>,
) -> CliResult<bool> {
    let mut stdout = std::io::stdout();
    let r = bench_epilogue::<A>(&mut stdout, device, shape, opts, fixed)?;
    let show = |what: &str, c: &tilus_bench::harness::Check| -> CliResult<()> {
        outln!(
            "check   {what}: {} (non-finite {}, mismatches {} of {}, max |diff| {:.3e}, relative error {:.3e})",
            if c.passed() { "PASS" } else { "FAIL" },
            c.non_finite,
            c.mismatches,
            c.total,
            c.max_abs,
            c.rel_err
        );
        Ok(())
    };
    show(
        &format!("matmul_epilogue_{} ({})", A::NAME, r.config),
        &r.fused,
    )?;
    show("cublas + pass (product rounded to f16 first)", &r.unfused)?;
    tilus_bench::harness::write_table(&mut stdout, &r.rows)?;
    let (fused, unfused) = (r.rows[r.rows.len() - 1].latency_ms, r.rows[1].latency_ms);
    match (r.latency(ROW_PLAIN), &r.plain_missing) {
        (Some(plain), _) => outln!(
            "fused vs the plain kernel with its configuration: {:+.1}% time",
            (fused / plain - 1.0) * 100.0
        ),
        (None, why) => outln!(
            "the plain kernel with the fused kernel's configuration was not timed: {}",
            why.as_deref().unwrap_or("no reason given")
        ),
    }
    if let Some(v6) = r.latency(ROW_V6) {
        outln!(
            "fused vs v6 autotuned: {:+.1}% time; vs cublas + pass: {:.3}x faster",
            (fused / v6 - 1.0) * 100.0,
            unfused / fused
        );
    }
    Ok(r.fused.passed())
}

/// The `MxNxK` sizes of a comma-separated list.
pub(crate) fn matmul_shapes(sizes: &str) -> CliResult<Vec<(usize, usize, usize)>> {
    Ok(
        Size::parse_list(tilus_bench::workloads::matmul::DIMS, sizes)?
            .iter()
            .map(|s| s.dims().map(|[m, n, k]| (m, n, k)))
            .collect::<Result<_, _>>()?,
    )
}

/// Runs the benchmark (the fused kernel autotuned, or v6's default with `sets` applied when
/// there are any); `Ok(false)` when the fused kernel's check failed.
pub(crate) fn epilogue(
    sizes: &str,
    act: &str,
    opts: &BenchOptions,
    sets: &[String],
) -> CliResult<bool> {
    let shapes = matmul_shapes(sizes)?;
    if opts.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    if !["identity", "relu", "gelu"].contains(&act) {
        return Err(CliError::Usage(format!(
            "unknown activation `{act}` (identity, relu, gelu)"
        )));
    }
    for &(m, n, k) in &shapes {
        tilus_bench::harness::Problem::ensure_host(m, n, k)?;
    }
    let fixed = if sets.is_empty() {
        None
    } else {
        let settings = tilus_bench::registry::parse_settings(sets)?;
        Some(
            tilus::tune::with_settings(&MatmulPersistent::default(), &settings)
                .map_err(CliError::Usage)?,
        )
    };
    let fixed = fixed.as_ref();
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    let mut ok = true;
    for &shape in &shapes {
        ok &= match act {
            "identity" => one::<Identity>(&device, shape, opts, fixed)?,
            "relu" => one::<Relu>(&device, shape, opts, fixed)?,
            _ => one::<GeluTanh>(&device, shape, opts, fixed)?,
        };
    }
    Ok(ok)
}
