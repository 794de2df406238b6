//! `tilus bench quant`: the quantized matmul against cuBLAS f16 on the dequantized weights
//! (see `tilus_bench::quant_bench`).

use crate::out::{outln, CliError, CliResult};
use tilus_bench::quant_bench::{bench_quant_named, FewRowsTiles, Variants, DTYPES};
use tilus_bench::run::BenchOptions;
use tilus_kernels::quant::Scheme;

/// The fragment kernel's variants to time beside the host API's choice, as the command line
/// gives them (see `tilus bench quant --help`).
pub(crate) struct FragmentFlags<'a> {
    /// `--fragment-stages`.
    pub stages: &'a str,
    /// `--fragment-splits`.
    pub splits: &'a str,
    /// `--fragment-wide`.
    pub wide: &'a str,
    /// `--fragment-stage-steps`.
    pub stage_steps: &'a str,
    /// `--fragment-mma-sync`.
    pub mma_sync: bool,
    /// `--fragment-scale-sums`.
    pub scale_sums: bool,
}

/// Runs the benchmark for every size and weight type; `Ok(false)` when a check failed.
pub(crate) fn quant(
    sizes: &str,
    dtypes: &str,
    (group, few_rows, fragment): (usize, &str, &FragmentFlags),
    opts: &BenchOptions,
) -> CliResult<bool> {
    let variants = Variants {
        few_rows: few_rows_tiles(few_rows)?,
        fragment_stages: positive_counts(fragment.stages)?,
        fragment_splits: positive_counts(fragment.splits)?,
        fragment_wide: wide_configs(fragment.wide)?,
        fragment_stage_steps: positive_counts(fragment.stage_steps)?,
        fragment_mma_sync: fragment.mma_sync,
        fragment_scale_sums: fragment.scale_sums,
    };
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
            let r = bench_quant_named(&mut stdout, &device, t, shape, scheme, &variants, opts)?;
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
            ok &= c.passed() && r.rows.iter().all(|row| row.passed != Some(false));
        }
    }
    Ok(ok)
}

/// The `--fragment-wide` list: `BxS` pairs (rows of A per block, stages), comma-separated.
fn wide_configs(list: &str) -> CliResult<Vec<(i32, i32)>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let parsed = s.split_once('x').and_then(|(b, st)| {
                let (b, st) = (b.parse::<i32>().ok()?, st.parse::<i32>().ok()?);
                ((8..=256).contains(&b) && b % 8 == 0 && st >= 1).then_some((b, st))
            });
            parsed.ok_or_else(|| {
                CliError::Usage(format!(
                    "`{s}` is not BxS with B rows of A per block (a multiple of 8 up to 256) and S stages (--fragment-wide)"
                ))
            })
        })
        .collect()
}

/// The `--fragment-stages` (`--fragment-splits`, `--fragment-stage-steps`) list: positive
/// counts, comma-separated
/// (empty: none).
fn positive_counts(list: &str) -> CliResult<Vec<i32>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(CliError::Usage(format!(
                "`{s}` is not a positive count (--fragment-stages, --fragment-splits, --fragment-stage-steps)"
            ))),
        })
        .collect()
}

/// The `--few-rows` list: `NxSxW` triples, comma-separated (empty: none).
fn few_rows_tiles(list: &str) -> CliResult<Vec<FewRowsTiles>> {
    let bad = |item: &str| {
        CliError::Usage(format!(
            "--few-rows: `{item}` is not NxSxW (rows of W per block, tiles of K per step, warps; positive)"
        ))
    };
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let parts: Vec<&str> = item.split('x').collect();
            match parts[..] {
                [n, s, w] => match (n.parse::<i32>(), s.parse::<i32>(), w.parse::<u32>()) {
                    (Ok(n), Ok(s), Ok(w)) if n > 0 && s > 0 && w > 0 => Ok((n, s, w)),
                    _ => Err(bad(item)),
                },
                _ => Err(bad(item)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::few_rows_tiles;

    #[test]
    fn positive_counts_parse_and_refuse_the_rest() {
        assert_eq!(super::positive_counts("").unwrap(), Vec::<i32>::new());
        assert_eq!(super::positive_counts("4, 8").unwrap(), vec![4, 8]);
        for bad in ["0", "x", "4,-2"] {
            assert!(super::positive_counts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn few_rows_tiles_parse_triples_and_refuse_the_rest() {
        assert_eq!(few_rows_tiles("").unwrap(), vec![]);
        assert_eq!(
            few_rows_tiles("16x2x4, 32x4x8").unwrap(),
            vec![(16, 2, 4), (32, 4, 8)]
        );
        for bad in ["16x2", "16x0x4", "ax2x4", "16x2x4x1"] {
            match few_rows_tiles(bad) {
                Err(crate::out::CliError::Usage(e)) => {
                    assert!(e.contains(bad) && e.contains("NxSxW"), "{e}")
                }
                other => panic!("{bad}: {:?}", other.map_err(|_| ())),
            }
        }
    }
}
