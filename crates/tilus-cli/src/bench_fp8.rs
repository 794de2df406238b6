//! `tilus bench matmul --dtype e4m3` (or `e5m2`): the FP8 GEMM against cuBLASLt's, bf16 out
//! (see `tilus_bench::fp8_bench`). `--set` and `--fixed` run one configuration instead of
//! tuning per shape; `--versions` does not apply (there is one FP8 kernel).

use crate::out::{outln, CliError, CliResult};
use half::bf16;
use tilus::lowp::{F8E4M3, F8E5M2};
use tilus::tune::{Binding, Tunable};
use tilus_bench::buffers::Sample;
use tilus_bench::fp8_bench::bench_fp8;
use tilus_bench::run::BenchOptions;
use tilus_kernels::gemm::fp8::MatmulFp8;

/// The FP8 operand types `--dtype` takes.
pub(crate) const FP8_DTYPES: &[&str] = &["e4m3", "e5m2"];

/// The configuration `--set` gives (on the default's), or `None` to tune: `--fixed` alone
/// runs the default.
fn fixed<T: Sample + tilus::lang::Element>(
    sets: &[(String, i64)],
    fixed: bool,
) -> CliResult<Option<MatmulFp8<T, bf16>>> {
    if sets.is_empty() && !fixed {
        return Ok(None);
    }
    let mut b: Binding = MatmulFp8::<T, bf16>::default()
        .to_binding()
        .expect("the FP8 GEMM's configuration has a binding");
    for (name, value) in sets {
        match b.0.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = *value,
            None => {
                let names: Vec<&str> = b.0.iter().map(|(n, _)| n.as_str()).collect();
                return Err(CliError::Usage(format!(
                    "--set {name}: the FP8 GEMM's hyperparameters are {}",
                    names.join(", ")
                )));
            }
        }
    }
    MatmulFp8::from_binding(&b)
        .map(Some)
        .map_err(CliError::Usage)
}

/// Runs the benchmark for every shape; `Ok(false)` when a check failed.
pub(crate) fn fp8(
    dtype: &str,
    shapes: &[(usize, usize, usize)],
    (sets, fixed_only): (&[(String, i64)], bool),
    opts: &BenchOptions,
) -> CliResult<bool> {
    for &(m, n, k) in shapes {
        if k % 16 != 0 {
            return Err(CliError::Usage(format!(
                "{m}x{n}x{k}: the FP8 GEMM takes K a multiple of 16"
            )));
        }
    }
    match dtype {
        "e4m3" => run::<F8E4M3>(shapes, fixed::<F8E4M3>(sets, fixed_only)?, opts),
        "e5m2" => run::<F8E5M2>(shapes, fixed::<F8E5M2>(sets, fixed_only)?, opts),
        other => Err(CliError::Usage(format!(
            "unknown FP8 type `{other}` ({})",
            FP8_DTYPES.join(", ")
        ))),
    }
}

fn run<T: Sample + tilus::lang::Element + tilus::lowp::LowpElement>(
    shapes: &[(usize, usize, usize)],
    config: Option<MatmulFp8<T, bf16>>,
    opts: &BenchOptions,
) -> CliResult<bool> {
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    let mut stdout = std::io::stdout();
    let mut ok = true;
    for &shape in shapes {
        let r = bench_fp8::<T>(&mut stdout, &device, shape, config.clone(), opts)?;
        for (name, s) in [
            ("cublaslt", r.peer),
            ("gemm_fp8", r.ours),
            ("gemm_fp8 blocks", r.blocks),
        ] {
            outln!(
                "check   {name}: {} ({} sampled elements outside their bound, worst {:.3} of it, max relative error {:.3e})",
                if s.passed() { "PASS" } else { "FAIL" },
                s.outside,
                s.worst,
                s.max_rel
            );
        }
        tilus_bench::harness::write_table(&mut stdout, &r.rows)?;
        ok &= r.ours.passed() && r.blocks.passed();
    }
    Ok(ok)
}
