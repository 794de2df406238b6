//! `tilus plot RESULTS.csv` and `tilus bench matmul --plot FILE.svg`: a picture of the matmul
//! series, one group of bars per shape (cuBLAS, then each version), TFLOPS as the bars' height
//! and the ratio to cuBLAS of the same run written above each version's bar. The SVG is
//! written here, element by element (no plotting crate is available to this build).

use crate::out::{outln, CliError, CliResult};
use crate::record::Record;
use std::fmt::Write;

/// Whether a recorded kernel is a version of the series (not an ablation's configuration,
/// which carries its settings in brackets, nor another kernel).
fn is_series(kernel: &str) -> bool {
    kernel.starts_with("hopper_matmul_") && !kernel.contains('[')
}

/// The rows of a results file (`docs/perf/results.csv`) in operand type `dtype` (`f16`,
/// `bf16`; a file without a `dtype` column is f16), the most recent row of each series kernel
/// at each shape (a later run replaces an earlier one), passed checks only.
pub fn latest_rows(csv: &str, dtype: &str) -> Result<Vec<Record>, String> {
    let mut lines = csv.lines();
    let header = lines.next().ok_or("the results file is empty")?;
    let cols: Vec<&str> = header.split(',').collect();
    let at = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("the results file has no `{name}` column"))
    };
    let (date, kernel, m, n, k, tflops, blas, ratio, check) = (
        at("date")?,
        at("kernel")?,
        at("m")?,
        at("n")?,
        at("k")?,
        at("tflops")?,
        at("cublas_tflops")?,
        at("ratio")?,
        at("check")?,
    );
    let type_col = cols.iter().position(|c| *c == "dtype");
    let mut latest: Vec<(String, Record)> = vec![];
    for (i, line) in lines.enumerate() {
        let f = fields(line);
        let get = |c: usize| {
            f.get(c)
                .map(String::as_str)
                .ok_or_else(|| format!("line {}: too few fields", i + 2))
        };
        let num = |c: usize| -> Result<f64, String> {
            get(c)?
                .parse::<f64>()
                .map_err(|e| format!("line {}: {e}", i + 2))
        };
        let row_type = match type_col {
            Some(c) => get(c)?,
            None => "f16",
        };
        if !is_series(get(kernel)?) || get(check)? != "pass" || row_type != dtype {
            continue;
        }
        let row = Record {
            kernel: get(kernel)?.to_string(),
            m: num(m)? as usize,
            n: num(n)? as usize,
            k: num(k)? as usize,
            tflops: num(tflops)?,
            cublas_tflops: num(blas)?,
            ratio: num(ratio)?,
            passed: true,
        };
        let when = get(date)?.to_string();
        let same = |(_, r): &(String, Record)| {
            r.kernel == row.kernel && (r.m, r.n, r.k) == (row.m, row.n, row.k)
        };
        match latest.iter_mut().find(|x| same(x)) {
            // ISO 8601 in UTC: the text order is the time order
            Some(slot) if slot.0 <= when => *slot = (when, row),
            Some(_) => {}
            None => latest.push((when, row)),
        }
    }
    Ok(latest.into_iter().map(|(_, r)| r).collect())
}

/// The fields of a CSV line (RFC 4180 quotes).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (vec![], String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The version's short name (`hopper_matmul_v6` → `v6`).
fn short(kernel: &str) -> &str {
    kernel.strip_prefix("hopper_matmul_").unwrap_or(kernel)
}

/// Bar colours: cuBLAS grey, then one per version in order.
const COLOURS: &[&str] = &[
    "#9e9e9e", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b",
    "#e6550d", "#31a354",
];

/// The chart: one group per shape (in order of first appearance), cuBLAS's bar then each
/// version's (in name order), the ratio above each version's bar; `title` on top.
pub fn series_svg(rows: &[Record], title: &str) -> String {
    let mut shapes: Vec<(usize, usize, usize)> = vec![];
    let mut versions: Vec<String> = vec![];
    for r in rows {
        if !shapes.contains(&(r.m, r.n, r.k)) {
            shapes.push((r.m, r.n, r.k));
        }
        if !versions.contains(&r.kernel) {
            versions.push(r.kernel.clone());
        }
    }
    versions.sort_by_key(|v| (v.len(), v.clone()));
    let bars = versions.len() + 1;
    let (bar_w, gap, left, top, plot_h) = (14.0, 26.0, 60.0, 60.0, 300.0);
    let group_w = bars as f64 * bar_w + gap;
    let width = left + shapes.len().max(1) as f64 * group_w + 20.0;
    let height = top + plot_h + 90.0;
    let max = rows
        .iter()
        .flat_map(|r| [r.tflops, r.cublas_tflops])
        .fold(1.0f64, f64::max);
    let scale = (max / 100.0).ceil() * 100.0;
    let y = |t: f64| top + plot_h * (1.0 - t / scale);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    // axis and grid lines every 100 TFLOPS
    let mut t = 0.0;
    while t <= scale {
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{:.0}" y1="{:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{:.0}" y="{:.1}" text-anchor="end">{t:.0}</text>"##,
            width - 20.0,
            y(t),
            y(t),
            left - 6.0,
            y(t) + 4.0
        );
        t += 100.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="14" y="{:.0}" transform="rotate(-90 14 {:.0})" text-anchor="middle">TFLOPS</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0
    );
    for (g, &(m, n, k)) in shapes.iter().enumerate() {
        let x0 = left + gap / 2.0 + g as f64 * group_w;
        let at_shape: Vec<&Record> = rows
            .iter()
            .filter(|r| (r.m, r.n, r.k) == (m, n, k))
            .collect();
        // cuBLAS of the latest run at this shape
        let blas = at_shape.iter().map(|r| r.cublas_tflops).fold(0.0, f64::max);
        let mut bar = |i: usize, value: f64, label: Option<String>| {
            let x = x0 + i as f64 * bar_w;
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                y(value),
                bar_w - 2.0,
                top + plot_h - y(value),
                COLOURS[i % COLOURS.len()]
            );
            if let Some(l) = label {
                let (cx, cy) = (x + bar_w / 2.0 - 1.0, y(value) - 4.0);
                let _ = writeln!(
                    s,
                    r#"<text x="{cx:.1}" y="{cy:.1}" font-size="8" transform="rotate(-90 {cx:.1} {cy:.1})">{l}</text>"#
                );
            }
        };
        bar(0, blas, None);
        for (i, v) in versions.iter().enumerate() {
            if let Some(r) = at_shape.iter().find(|r| &r.kernel == v) {
                bar(i + 1, r.tflops, Some(format!("{:.2}x", r.ratio)));
            }
        }
        let cx = x0 + bars as f64 * bar_w / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{:.0}" text-anchor="middle" font-size="9">{m}×{n}×{k}</text>"#,
            top + plot_h + 14.0
        );
    }
    // legend
    let ly = top + plot_h + 40.0;
    let names =
        std::iter::once("cuBLAS".to_string()).chain(versions.iter().map(|v| short(v).to_string()));
    for (i, name) in names.enumerate() {
        let lx = left + i as f64 * 80.0;
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.0}" y="{ly:.0}" width="10" height="10" fill="{}"/><text x="{:.0}" y="{:.0}">{}</text>"#,
            COLOURS[i % COLOURS.len()],
            lx + 14.0,
            ly + 9.0,
            escape(&name)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="{:.0}" font-size="9" fill="#555">ratio to cuBLAS of the same run above each bar</text>"##,
        ly + 30.0
    );
    s.push_str("</svg>\n");
    s
}

/// `tilus plot`: the chart of a results file's latest rows in operand type `dtype`.
pub fn plot_file(results: &std::path::Path, out: &std::path::Path, dtype: &str) -> CliResult<bool> {
    let text = std::fs::read_to_string(results)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", results.display())))?;
    let rows = latest_rows(&text, dtype)
        .map_err(|e| CliError::Usage(format!("{}: {e}", results.display())))?;
    if rows.is_empty() {
        return Err(CliError::Usage(format!(
            "{} has no passed {dtype} rows of the matmul series to draw",
            results.display()
        )));
    }
    let gpus: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1))
        .collect();
    let gpu = gpus.last().copied().unwrap_or("the GPU");
    let title = format!("Hopper matmul on {gpu} against cuBLAS, {dtype} (latest recorded rows)");
    write_svg(out, &series_svg(&rows, &title))?;
    outln!(
        "drew {} rows of {} into {}",
        rows.len(),
        results.display(),
        out.display()
    );
    Ok(true)
}

/// Says before a run when the chart's file cannot be written.
pub fn check_writable(path: &std::path::Path) -> CliResult<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "--plot {}: the directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Writes the chart.
pub fn write_svg(path: &std::path::Path, svg: &str) -> CliResult<()> {
    std::fs::write(path, svg)
        .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))
}

/// Text for SVG.
fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "date,gpu,commit,kernel,dtype,m,n,k,tflops,cublas_tflops,ratio,check\n\
2026-12-01T10:00:00Z,H200,a,hopper_matmul_v0,f16,4096,4096,4096,400,650,0.6154,pass\n\
2026-12-01T11:00:00Z,H200,b,hopper_matmul_v0,f16,4096,4096,4096,410,640,0.6406,pass\n\
2026-12-01T11:00:00Z,H200,b,hopper_matmul_v6,f16,4096,4096,4096,660,640,1.0313,pass\n\
2026-12-01T11:00:00Z,H200,b,hopper_matmul_v6[persistent=0],f16,4096,4096,4096,600,640,0.9375,pass\n\
2026-12-01T11:00:00Z,H200,b,hopper_matmul_v6,f16,8192,8192,8192,650,630,1.0317,fail\n\
2026-12-01T11:00:00Z,H200,b,\"hopper_matmul_v1\",f16,8192,8192,8192,520,630,0.8254,pass\n\
2026-12-01T12:00:00Z,H200,c,hopper_matmul_v6,bf16,4096,4096,4096,700,680,1.0294,pass\n";

    #[test]
    fn the_latest_passed_row_of_each_series_kernel_and_shape_is_drawn() {
        let rows = latest_rows(CSV, "f16").unwrap();
        let v0: Vec<&Record> = rows
            .iter()
            .filter(|r| r.kernel == "hopper_matmul_v0")
            .collect();
        assert_eq!(v0.len(), 1);
        assert_eq!(v0[0].tflops, 410.0, "the later run replaces the earlier");
        assert!(
            rows.iter().all(|r| !r.kernel.contains('[')),
            "ablations are left out"
        );
        assert!(
            !rows
                .iter()
                .any(|r| r.kernel == "hopper_matmul_v6" && r.m == 8192),
            "failed checks are left out"
        );
        assert!(
            rows.iter().any(|r| r.kernel == "hopper_matmul_v1"),
            "quoted fields parse"
        );
        let v6 = rows
            .iter()
            .find(|r| r.kernel == "hopper_matmul_v6" && r.m == 4096)
            .unwrap();
        assert_eq!(
            v6.tflops, 660.0,
            "a later bf16 row does not replace the f16 one"
        );
        let bf16 = latest_rows(CSV, "bf16").unwrap();
        assert_eq!(bf16.len(), 1);
        assert_eq!(bf16[0].tflops, 700.0);
        let svg = series_svg(&rows, "series");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        for text in [
            "1.03x",
            "0.64x",
            "0.83x",
            "4096×4096×4096",
            "8192×8192×8192",
            ">v6<",
            ">cuBLAS<",
        ] {
            assert!(svg.contains(text), "{text} missing:\n{svg}");
        }
    }

    #[test]
    fn a_file_without_the_columns_is_an_error() {
        assert!(latest_rows("", "f16").is_err());
        let e = latest_rows("date,kernel\n", "f16").unwrap_err();
        assert!(e.contains("no `m` column"), "{e}");
    }
}
