//! `tilus bench attention`: flash attention forward on a grid of head dimensions, sequence
//! lengths and masks (see `tilus_bench::attention_bench`), one line per case.

use crate::out::{outln, CliError, CliResult};
use half::{bf16, f16};
use tilus::lowp::F8E4M3;
use tilus_bench::attention_bench::{bench_attention, AttentionCase, AttentionReport, Timed};
use tilus_bench::decode_bench::{bench_decode, DecodeCase, DecodeReport};
use tilus_bench::run::BenchOptions;
use tilus_kernels::attention::decode::Tiling;
use tilus_kernels::attention::{Heads, Variant};

/// The command's grid, as given.
pub(crate) struct Grid {
    pub head_dims: String,
    pub seqs: String,
    pub tokens: usize,
    pub width: usize,
    pub kv_heads: usize,
    pub causal: String,
    pub dtypes: String,
    pub variants: String,
    pub ws_tiles: String,
}

/// The `--ws-tiles` list: `KVxSTAGES` pairs, `p` after one for a persistent grid (empty:
/// none).
fn ws_tiles(list: &str) -> CliResult<Vec<Timed>> {
    list.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|item| {
            let bad = || {
                CliError::Usage(format!(
                    "--ws-tiles: `{item}` is not KVxSTAGES (keys per step 64 or 128, stages 2 to 4; a `p` after them: a persistent grid)"
                ))
            };
            let (kv, st) = item.split_once('x').ok_or_else(bad)?;
            let (st, persistent) = match st.strip_suffix('p') {
                Some(st) => (st, true),
                None => (st, false),
            };
            match (kv.parse::<i32>(), st.parse::<i32>()) {
                (Ok(kv @ (64 | 128)), Ok(st @ 2..=4)) => Ok(Timed::Tiles(kv, st, persistent)),
                _ => Err(bad()),
            }
        })
        .collect()
}

/// The `--variants` list.
fn variants(list: &str) -> CliResult<Vec<Variant>> {
    if list.trim() == "all" {
        return Ok(Variant::ALL.to_vec());
    }
    list.split(',')
        .map(str::trim)
        .map(|name| {
            Variant::ALL
                .into_iter()
                .find(|v| v.name() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
                    CliError::Usage(format!(
                        "--variants: no kernel `{name}` (one of {}, or all)",
                        names.join(", ")
                    ))
                })
        })
        .collect()
}

fn list<T: std::str::FromStr>(flag: &str, s: &str) -> CliResult<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .map(|x| {
            x.parse()
                .map_err(|_| CliError::Usage(format!("--{flag}: `{x}` is not a valid value")))
        })
        .collect()
}

/// The `--dtypes` list: f16 and bf16 only.
fn element_types(s: &str) -> CliResult<Vec<String>> {
    let dtypes: Vec<String> = list("dtypes", s)?;
    if let Some(t) = dtypes.iter().find(|t| *t != "f16" && *t != "bf16") {
        return Err(CliError::Usage(format!("--dtypes: `{t}` (f16 or bf16)")));
    }
    Ok(dtypes)
}

/// The query and key-value heads of `--width` (query heads × head dimension) at head
/// dimension `d`, with `--kv-heads` (0: as many as query heads).
fn heads_of(width: usize, kv_heads: usize, d: usize) -> CliResult<(usize, usize)> {
    if d == 0 || !width.is_multiple_of(d) {
        return Err(CliError::Usage(format!(
            "--width {width} is not a whole number of heads of {d}"
        )));
    }
    let hq = width / d;
    Ok((hq, if kv_heads == 0 { hq } else { kv_heads }))
}

/// The cases of the grid, in order, or the first flag that does not make sense.
fn cases(g: &Grid) -> CliResult<Vec<(String, AttentionCase)>> {
    let dims: Vec<usize> = list("head-dims", &g.head_dims)?;
    let seqs: Vec<usize> = list("seqs", &g.seqs)?;
    let causal: Vec<bool> = list("causal", &g.causal)?;
    let dtypes = element_types(&g.dtypes)?;
    let mut out = Vec::new();
    for t in &dtypes {
        for &d in &dims {
            let (hq, hkv) = heads_of(g.width, g.kv_heads, d)?;
            for &s in &seqs {
                if s == 0 || !g.tokens.is_multiple_of(s) {
                    return Err(CliError::Usage(format!(
                        "--tokens {} is not a whole number of sequences of {s}",
                        g.tokens
                    )));
                }
                for &c in &causal {
                    let case = AttentionCase {
                        batch: g.tokens / s,
                        seq: s,
                        heads: Heads::new(hq, hkv, d),
                        causal: c,
                    };
                    out.push((t.clone(), case));
                }
            }
        }
    }
    Ok(out)
}

/// A comma-separated list of `AxB` pairs of positive numbers.
fn pairs(flag: &str, s: &str) -> CliResult<Vec<(usize, usize)>> {
    s.split(',')
        .map(str::trim)
        .map(|x| {
            let bad = || CliError::Usage(format!("--{flag}: `{x}` is not BATCHxCONTEXT"));
            let (a, b) = x.split_once('x').ok_or_else(bad)?;
            match (a.parse(), b.parse()) {
                (Ok(a @ 1..), Ok(b @ 1..)) => Ok((a, b)),
                _ => Err(bad()),
            }
        })
        .collect()
}

/// The decode grid, as given.
pub(crate) struct DecodeGrid {
    pub head_dims: String,
    pub width: usize,
    pub kv_heads: usize,
    pub dtypes: String,
    pub contexts: String,
    pub queries: usize,
    pub pages: String,
    pub stages: String,
    pub splits: String,
    pub merge_in_kernel: bool,
    pub overlap: String,
    pub q_registers: String,
    pub converters: String,
    pub kv_dtypes: String,
}

/// A comma-separated list of `auto` (`None`: the kernel's choice), `true` and `false`, or
/// the usage error naming `--flag`.
fn tristate(flag: &str, text: &str) -> CliResult<Vec<Option<bool>>> {
    list::<String>(flag, text)?
        .iter()
        .map(|x| match x.as_str() {
            "auto" => Ok(None),
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(CliError::Usage(format!(
                "--{flag}: `{x}` (auto, true or false)"
            ))),
        })
        .collect()
}

/// The decode cases of the grid, in order, or the first flag that does not make sense.
fn decode_cases(g: &DecodeGrid) -> CliResult<Vec<((String, String), DecodeCase)>> {
    let dims: Vec<usize> = list("head-dims", &g.head_dims)?;
    let pages: Vec<usize> = list("pages", &g.pages)?;
    let dtypes = element_types(&g.dtypes)?;
    let contexts = pairs("contexts", &g.contexts)?;
    let stages: Vec<i32> = list("decode-stages", &g.stages)?;
    let splits: Vec<usize> = list("decode-splits", &g.splits)?;
    let overlap: Vec<bool> = list("decode-overlap", &g.overlap)?;
    let caches: Vec<String> = list("kv-dtypes", &g.kv_dtypes)?;
    let converters = tristate("decode-converters", &g.converters)?;
    let q_registers = tristate("decode-q-registers", &g.q_registers)?;
    if let Some(c) = caches.iter().find(|c| *c != "same" && *c != "e4m3") {
        return Err(CliError::Usage(format!(
            "--kv-dtypes: `{c}` (same: the attention's type, or e4m3)"
        )));
    }
    let types: Vec<(String, String)> = dtypes
        .iter()
        .flat_map(|t| caches.iter().map(move |c| (t.clone(), c.clone())))
        .collect();
    let choices: Vec<(bool, Option<bool>, Option<bool>)> = overlap
        .iter()
        .flat_map(|&o| {
            let converters = &converters;
            q_registers
                .iter()
                .flat_map(move |&q| converters.iter().map(move |&c| (o, q, c)))
        })
        .collect();
    let mut out = Vec::new();
    for t in &types {
        for &d in &dims {
            let (hq, hkv) = heads_of(g.width, g.kv_heads, d)?;
            for &(batch, context) in &contexts {
                for &p in &pages {
                    for &st in &stages {
                        for &sp in &splits {
                            for &(ov, qr, cv) in &choices {
                                let case = DecodeCase {
                                    batch,
                                    context,
                                    queries: g.queries,
                                    heads: Heads::new(hq, hkv, d),
                                    page_size: (p > 0).then_some(p),
                                    tiling: Tiling {
                                        stages: (st > 0).then_some(st),
                                        splits: (sp > 0).then_some(sp),
                                        merge: g.merge_in_kernel.then_some(true),
                                        overlap: Some(ov),
                                        q_in_registers: qr,
                                        converters: cv,
                                    },
                                };
                                out.push((t.clone(), case));
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Runs every decode case; `Ok(false)` when a check failed.
pub(crate) fn decode(g: &DecodeGrid, opts: &BenchOptions) -> CliResult<bool> {
    if opts.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    let cases = decode_cases(g)?;
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    let mut ok = true;
    for (t, case) in cases {
        let r: DecodeReport = match (t.0.as_str(), t.1.as_str()) {
            ("bf16", "e4m3") => bench_decode::<bf16, F8E4M3>(&device, case, opts)?,
            ("bf16", _) => bench_decode::<bf16, bf16>(&device, case, opts)?,
            (_, "e4m3") => bench_decode::<f16, F8E4M3>(&device, case, opts)?,
            _ => bench_decode::<f16, f16>(&device, case, opts)?,
        };
        let h = case.heads;
        let cache = if t.1 == "same" {
            String::new()
        } else {
            format!(" cache={}", t.1)
        };
        outln!(
            "decode {}{cache} d={} b={} ctx={} queries={} heads={}/{} page={} stages={} splits={}{}{}{}: {:.4} ms {:.3} TB/s check {} ({} rows, max err {:.2e}, lse {:.2e})",
            t.0,
            h.head_dim,
            case.batch,
            case.context,
            case.queries,
            h.q_heads,
            h.kv_heads,
            case.page_size.unwrap_or(0),
            case.tiling.stages.map_or("auto".to_string(), |s| s.to_string()),
            case.tiling.splits.map_or("auto".to_string(), |s| s.to_string()),
            if g.merge_in_kernel { " merged in the kernel" } else { "" },
            if case.tiling.overlap == Some(true) { " overlapped" } else { "" },
            match (case.tiling.q_in_registers, case.tiling.converters) {
                (Some(true), Some(true)) => " q=registers converters",
                (_, Some(true)) => " converters",
                (Some(true), _) => " q=registers",
                (Some(false), _) => " q=shared",
                (None, Some(false)) => " no converters",
                (None, None) => "",
            },
            r.ms,
            r.tbps,
            if r.passed { "PASS" } else { "FAIL" },
            r.rows_checked,
            r.max_err,
            r.max_lse_err
        );
        ok &= r.passed;
    }
    Ok(ok)
}

/// Runs every case; `Ok(false)` when a check failed.
pub(crate) fn attention(g: &Grid, opts: &BenchOptions) -> CliResult<bool> {
    if opts.rounds == 0 {
        return Err(CliError::Usage("--rounds must be at least 1".into()));
    }
    let cases = cases(g)?;
    let mut kernels: Vec<Timed> = variants(&g.variants)?
        .into_iter()
        .map(Timed::Variant)
        .collect();
    kernels.extend(ws_tiles(&g.ws_tiles)?);
    let device = tilus::runtime::Device::open(0)?;
    outln!("GPU: {}", device.name());
    let mut ok = true;
    for (t, case) in cases {
        let reports: Vec<AttentionReport> = match t.as_str() {
            "bf16" => bench_attention::<bf16>(&device, case, &kernels, opts)?,
            _ => bench_attention::<f16>(&device, case, &kernels, opts)?,
        };
        let h = case.heads;
        for r in &reports {
            outln!(
                "attention {} {t} d={} s={} b={} heads={}/{} causal={}: {:.4} ms {:.1} TFLOPS check {} ({} rows, max err {:.2e}, lse {:.2e})",
                r.kernel.name(),
                h.head_dim,
                case.seq,
                case.batch,
                h.q_heads,
                h.kv_heads,
                case.causal,
                r.ms,
                r.tflops,
                if r.passed { "PASS" } else { "FAIL" },
                r.rows_checked,
                r.max_err,
                r.max_lse_err
            );
            ok &= r.passed;
        }
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(dims: &str, seqs: &str) -> Grid {
        Grid {
            head_dims: dims.into(),
            seqs: seqs.into(),
            tokens: 16384,
            width: 2048,
            kv_heads: 0,
            causal: "false,true".into(),
            dtypes: "f16,bf16".into(),
            variants: "all".into(),
            ws_tiles: String::new(),
        }
    }

    #[test]
    fn tiles_are_pairs_of_keys_and_stages() {
        assert_eq!(ws_tiles("").unwrap(), vec![]);
        assert_eq!(
            ws_tiles("128x3, 64x4p").unwrap(),
            vec![Timed::Tiles(128, 3, false), Timed::Tiles(64, 4, true)]
        );
        for bad in ["128", "96x2", "128x9", "ax2"] {
            match ws_tiles(bad) {
                Err(CliError::Usage(e)) => assert!(e.contains(bad), "{e}"),
                _ => panic!("`{bad}` was taken"),
            }
        }
    }

    #[test]
    fn variants_are_named_or_all() {
        assert_eq!(variants("all").unwrap(), Variant::ALL.to_vec());
        assert_eq!(
            variants("plain, ws+overlap+pingpong").unwrap(),
            vec![Variant::Plain, Variant::DEFAULT]
        );
        match variants("fast") {
            Err(CliError::Usage(e)) => assert!(e.contains("`fast`") && e.contains("plain"), "{e}"),
            _ => panic!("`fast` is no kernel"),
        }
    }

    #[test]
    fn the_grid_takes_whole_heads_and_sequences_and_refuses_the_rest() {
        let c = cases(&grid("64,128", "1024,16384")).unwrap();
        assert_eq!(c.len(), 2 * 2 * 2 * 2);
        let (t, first) = &c[0];
        assert_eq!((t.as_str(), first.batch, first.seq), ("f16", 16, 1024));
        assert_eq!((first.heads.q_heads, first.heads.kv_heads), (32, 32));
        assert!(!first.causal && c[1].1.causal);
        for (dims, seqs, needle) in [
            ("96", "1024", "--width 2048"),
            ("64", "1000", "--tokens 16384"),
            ("x", "1024", "--head-dims"),
        ] {
            match cases(&grid(dims, seqs)) {
                Err(CliError::Usage(e)) => assert!(e.contains(needle), "{e}"),
                other => panic!(
                    "{dims} {seqs}: {:?}",
                    other.map(|c| c.len()).map_err(|_| ())
                ),
            }
        }
    }

    fn decode_grid(contexts: &str, pages: &str) -> DecodeGrid {
        DecodeGrid {
            head_dims: "128".into(),
            width: 4096,
            kv_heads: 8,
            dtypes: "f16".into(),
            contexts: contexts.into(),
            queries: 1,
            pages: pages.into(),
            stages: "0,2".into(),
            splits: "0".into(),
            merge_in_kernel: false,
            overlap: "false".into(),
            q_registers: "auto".into(),
            converters: "auto".into(),
            kv_dtypes: "same".into(),
        }
    }

    /// The decode grid: batch × context pairs, pages (0: contiguous), stages and splits given
    /// or the host API's (0), each combination a case; a pair that is not two positive
    /// numbers is refused with the flag named.
    #[test]
    fn the_decode_grid_takes_pairs_pages_and_choices() {
        let c = decode_cases(&decode_grid("1x8192, 16x4096", "0,16")).unwrap();
        assert_eq!(c.len(), 2 * 2 * 2);
        let first = &c[0].1;
        assert_eq!(
            (first.batch, first.context, first.page_size),
            (1, 8192, None)
        );
        assert_eq!((first.heads.q_heads, first.heads.kv_heads), (32, 8));
        assert_eq!((first.tiling.stages, c[1].1.tiling.stages), (None, Some(2)));
        assert_eq!(c[2].1.page_size, Some(16));
        for bad in ["8192", "0x8192", "1x", "ax2"] {
            match decode_cases(&decode_grid(bad, "0")) {
                Err(CliError::Usage(e)) => assert!(e.contains("--contexts"), "{e}"),
                other => panic!("{bad}: {:?}", other.map(|c| c.len()).map_err(|_| ())),
            }
        }
        // the cache's types: each case once per type, in the order given; others refused
        let mut g = decode_grid("1x8192", "0");
        g.kv_dtypes = "same,e4m3".into();
        let c = decode_cases(&g).unwrap();
        assert_eq!(c.len(), 2 * 2);
        let types: Vec<&str> = c.iter().map(|((_, t), _)| t.as_str()).collect();
        assert_eq!(types, ["same", "same", "e4m3", "e4m3"]);
        g.kv_dtypes = "e5m2".into();
        match decode_cases(&g) {
            Err(CliError::Usage(e)) => assert!(e.contains("--kv-dtypes"), "{e}"),
            other => panic!("e5m2: {:?}", other.map(|c| c.len()).map_err(|_| ())),
        }
        // where Q lives: each choice a case, in the order given; others refused
        let mut g = decode_grid("1x8192", "0");
        g.stages = "0".into();
        g.q_registers = "false,auto,true".into();
        let q: Vec<Option<bool>> = decode_cases(&g)
            .unwrap()
            .iter()
            .map(|(_, c)| c.tiling.q_in_registers)
            .collect();
        assert_eq!(q, [Some(false), None, Some(true)]);
        g.q_registers = "yes".into();
        match decode_cases(&g) {
            Err(CliError::Usage(e)) => assert!(e.contains("--decode-q-registers"), "{e}"),
            other => panic!("yes: {:?}", other.map(|c| c.len()).map_err(|_| ())),
        }
        // the converters likewise: the kernel's choice unless asked
        let mut g = decode_grid("1x8192", "0");
        g.stages = "0".into();
        let auto: Vec<Option<bool>> = decode_cases(&g)
            .unwrap()
            .iter()
            .map(|(_, c)| c.tiling.converters)
            .collect();
        assert_eq!(auto, [None]);
        g.converters = "true,false".into();
        let asked: Vec<Option<bool>> = decode_cases(&g)
            .unwrap()
            .iter()
            .map(|(_, c)| c.tiling.converters)
            .collect();
        assert_eq!(asked, [Some(true), Some(false)]);
        g.converters = "on".into();
        match decode_cases(&g) {
            Err(CliError::Usage(e)) => assert!(e.contains("--decode-converters"), "{e}"),
            other => panic!("on: {:?}", other.map(|c| c.len()).map_err(|_| ())),
        }
    }
}
