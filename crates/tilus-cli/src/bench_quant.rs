//! `tilus bench quant`: the quantized matmul against cuBLAS f16 on the dequantized weights
//! (see `tilus_bench::quant_bench`).

use crate::out::{outln, CliError, CliResult};
use tilus_bench::quant_bench::{bench_quant_named, DTYPES};
use tilus_bench::run::BenchOptions;
use tilus_kernels::quant::Scheme;

/// Runs the benchmark for every size and weight type; `Ok(false)` when a check failed.
pub(crate) fn quant(
    sizes: &str,
    dtypes: &str,
    group: usize,
    opts: &BenchOptions,
) -> CliResult<bool> {
    let shapes = crate::bench_epilogue::matmul_shapes(sizes)?;
    let types: Vec<&str> = dtypes.split(',').map(str::trim).collect();
    if let Some(bad) = types.iter().find(|t| !DTYPES.contains(t)) {
        return Err(CliError::Usage(format!(
            "unknown weight type `{bad}` (one of {})",
            DTYPES.join(", ")
        )));
    }
    if opts.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    let scheme = if group == 0 {
        Scheme::per_channel()
    } else {
        Scheme::grouped(group)
    };
    for &(m, n, k) in &shapes {
        tilus_bench::harness::Problem::ensure_host(m, n, k)?;
    }
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    let mut ok = true;
    let mut stdout = std::io::stdout();
    for &shape in &shapes {
        for t in &types {
            let r = bench_quant_named(&mut stdout, &device, t, shape, scheme, opts)?;
            let c = &r.check;
            outln!(
                "check   quant_matmul {t}: {} (non-finite {}, mismatches {} of {}, max |diff| {:.3e}, relative error {:.3e})",
                if c.passed() { "PASS" } else { "FAIL" },
                c.non_finite,
                c.mismatches,
                c.total,
                c.max_abs,
                c.rel_err
            );
            tilus_bench::harness::write_table(&mut stdout, &r.rows)?;
            outln!(
                "weights read at {:.0} GB/s ({} kernel); {:.2}x cuBLAS f16's time",
                r.weight_gbps,
                r.kernel,
                r.rows[1].ratio
            );
            ok &= c.passed();
        }
    }
    Ok(ok)
}
