//! `tilus plot RESULTS.csv` and `tilus bench matmul --plot FILE.svg`: a picture of the matmul
//! series, one group of bars per shape (cuBLAS, then each version), TFLOPS as the bars' height
//! and the ratio to cuBLAS of the same run written above each version's bar. The chart is
//! drawn with `plotters`' SVG backend into a string, its text as SVG `<text>` elements: no
//! font is read or rasterized, so drawing needs neither system fonts nor a browser.

use crate::out::{outln, CliError, CliResult};
use crate::record::Record;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

/// cuBLAS's bars' colour.
const CUBLAS: RGBColor = RGBColor(0x9e, 0x9e, 0x9e);

/// The colours of versions `v0` to `v6`, light to dark.
const NUMBERED: &[RGBColor] = &[
    RGBColor(0xc6, 0xdb, 0xef),
    RGBColor(0x9e, 0xca, 0xe1),
    RGBColor(0x6b, 0xae, 0xd6),
    RGBColor(0x42, 0x92, 0xc6),
    RGBColor(0x21, 0x71, 0xb5),
    RGBColor(0x08, 0x51, 0x9c),
    RGBColor(0x08, 0x30, 0x6b),
];

/// The colours of the other versions (`split_k`), in name order.
const OTHERS: &[RGBColor] = &[
    RGBColor(0xe6, 0x55, 0x0d),
    RGBColor(0x31, 0xa3, 0x54),
    RGBColor(0x75, 0x6b, 0xb1),
    RGBColor(0xd6, 0x27, 0x28),
];

/// Each version's colour (the same in every chart for `v0` to `v6`).
fn colours(versions: &[String]) -> Vec<RGBColor> {
    let mut others = OTHERS.iter().cycle();
    versions
        .iter()
        .map(|v| {
            let number = short(v)
                .strip_prefix('v')
                .and_then(|n| n.parse::<usize>().ok());
            match number {
                Some(n) if n < NUMBERED.len() => NUMBERED[n],
                _ => *others.next().unwrap_or(&CUBLAS),
            }
        })
        .collect()
}

/// The chart's layout in pixels: a bar's width (a gap of 2 included), the space between
/// groups, a group's least width (its shape's label fits), the space right of the bars (the
/// legend's) and left of the plot (the TFLOPS axis'), and the picture's height.
const BAR_W: f64 = 16.0;
const GROUP_GAP: f64 = 24.0;
const GROUP_MIN_W: f64 = 100.0;
const AXIS_W: u32 = 64;
const LEGEND_W: u32 = 120;
const HEIGHT: u32 = 480;
/// The width of one character of the title, in pixels (20-pixel bold sans-serif, generously).
const TITLE_CHAR_W: f64 = 11.0;

/// One bar of the chart: its series (0 cuBLAS, then the versions), its left and right edges,
/// its height in TFLOPS and, for a version, its ratio to cuBLAS of the same run.
struct Bar {
    series: usize,
    x: (f64, f64),
    tflops: f64,
    ratio: Option<f64>,
}

/// The chart: one group per shape (in order of first appearance), cuBLAS's bar then the bar
/// of each version recorded at that shape (in name order), the ratio above each version's
/// bar, a legend naming the bars' colours; `title` on top.
pub fn series_svg(rows: &[Record], title: &str) -> CliResult<String> {
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

    // x in pixels from the plot's left edge: each group as wide as its bars or its label
    let (mut bars, mut labels, mut x) = (vec![], vec![], GROUP_GAP / 2.0);
    for &(m, n, k) in &shapes {
        let at_shape: Vec<&Record> = rows
            .iter()
            .filter(|r| (r.m, r.n, r.k) == (m, n, k))
            .collect();
        // cuBLAS of the latest run at this shape
        let blas = at_shape.iter().map(|r| r.cublas_tflops).fold(0.0, f64::max);
        let mut group = vec![(0, blas, None)];
        for (i, v) in versions.iter().enumerate() {
            if let Some(r) = at_shape.iter().find(|r| &r.kernel == v) {
                group.push((i + 1, r.tflops, Some(r.ratio)));
            }
        }
        let width = (group.len() as f64 * BAR_W).max(GROUP_MIN_W);
        let mut left = x + (width - group.len() as f64 * BAR_W) / 2.0;
        for (series, tflops, ratio) in group {
            bars.push(Bar {
                series,
                x: (left, left + BAR_W - 2.0),
                tflops,
                ratio,
            });
            left += BAR_W;
        }
        labels.push((x + width / 2.0, format!("{m}×{n}×{k}")));
        x += width + GROUP_GAP;
    }
    // wide enough for the title too (a run of one shape has one narrow group)
    let title_w = title.chars().count() as f64 * TITLE_CHAR_W - f64::from(LEGEND_W + AXIS_W);
    let plot_w = (x - GROUP_GAP / 2.0).max(title_w);
    let max = bars.iter().map(|b| b.tflops).fold(1.0f64, f64::max);
    // room above the highest bar for its ratio
    let top = (max * 1.12 / 100.0).ceil() * 100.0;

    let mut svg = String::new();
    draw(&mut svg, title, &versions, &bars, &labels, (plot_w, top))
        .map_err(|e| CliError::failed(format!("cannot draw the chart: {e}")))?;
    Ok(svg)
}

/// Draws the bars laid out by [`series_svg`] into `svg`: `plot_w` is the bars' width in
/// pixels (the legend goes right of them), `top` the TFLOPS at the top of the axis.
fn draw(
    svg: &mut String,
    title: &str,
    versions: &[String],
    bars: &[Bar],
    labels: &[(f64, String)],
    (plot_w, top): (f64, f64),
) -> Result<(), Box<dyn std::error::Error>> {
    let margin = 10;
    let width = plot_w.ceil() as u32 + LEGEND_W + AXIS_W + 2 * margin;
    let root = SVGBackend::with_string(svg, (width, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20).into_font().style(FontStyle::Bold))
        .margin(margin)
        .margin_bottom(margin + 20)
        .x_label_area_size(24)
        .y_label_area_size(AXIS_W)
        .build_cartesian_2d(0.0..plot_w + LEGEND_W as f64, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels((top / 100.0) as usize + 1)
        .y_label_formatter(&|t| format!("{t:.0}"))
        .y_desc("TFLOPS")
        .bold_line_style(RGBColor(0xe0, 0xe0, 0xe0))
        .light_line_style(TRANSPARENT)
        .label_style(("sans-serif", 14))
        .draw()?;

    let names = std::iter::once("cuBLAS").chain(versions.iter().map(|v| short(v)));
    let colours = std::iter::once(CUBLAS).chain(colours(versions));
    for (series, (name, colour)) in names.zip(colours).enumerate() {
        chart
            .draw_series(
                bars.iter()
                    .filter(|b| b.series == series)
                    .map(|b| Rectangle::new([(b.x.0, 0.0), (b.x.1, b.tflops)], colour.filled())),
            )?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], colour.filled()));
    }

    // the ratios, upwards from above each version's bar
    let ratio_style = ("sans-serif", 12)
        .into_font()
        .transform(FontTransform::Rotate270)
        .into_text_style(&root)
        .pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(bars.iter().filter_map(|b| {
        let ratio = b.ratio?;
        let at = ((b.x.0 + b.x.1) / 2.0, b.tflops);
        Some(EmptyElement::at(at) + Text::new(format!("{ratio:.2}×"), (0, -4), ratio_style.clone()))
    }))?;

    // the shapes under their groups
    let shape_style = ("sans-serif", 13)
        .into_text_style(&root)
        .pos(Pos::new(HPos::Center, VPos::Top));
    chart.draw_series(labels.iter().map(|(x, label)| {
        EmptyElement::at((*x, 0.0)) + Text::new(label.clone(), (0, 6), shape_style.clone())
    }))?;

    // the legend in the space right of the last group (positioned within the plotting area)
    let origin = chart.plotting_area().get_pixel_range().0.start;
    let legend_x = chart.backend_coord(&(plot_w, top)).0 - origin + 12;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::Coordinate(legend_x, 8))
        .label_font(("sans-serif", 14))
        .background_style(WHITE)
        .border_style(RGBColor(0xbd, 0xbd, 0xbd))
        .draw()?;

    root.draw(&Text::new(
        "ratio to cuBLAS of the same run above each bar",
        ((margin + AXIS_W) as i32, HEIGHT as i32 - margin as i32 - 4),
        ("sans-serif", 13)
            .into_font()
            .color(&RGBColor(0x55, 0x55, 0x55)),
    ))?;
    root.present()?;
    Ok(())
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
    write_svg(out, &series_svg(&rows, &title)?)?;
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
    }

    /// The text of each `<text>` element of an SVG, trimmed.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                body.trim().to_string()
            })
            .collect()
    }

    /// An attribute's value in an element's text.
    fn attr<'a>(element: &'a str, name: &str) -> &'a str {
        let at = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        &element[at..at + element[at..].find('"').unwrap()]
    }

    /// The bars of an SVG: the coloured `<rect>`s standing on the axis (the bottom most of
    /// them share), as (colour, height in pixels).
    fn bars(svg: &str) -> Vec<(String, f64)> {
        let rects: Vec<(String, f64, f64)> = svg
            .split("<rect")
            .skip(1)
            .map(|r| {
                let num = |n: &str| attr(r, n).parse::<f64>().unwrap();
                (
                    attr(r, "fill").to_string(),
                    num("y") + num("height"),
                    num("height"),
                )
            })
            .filter(|(fill, ..)| fill != "#FFFFFF" && fill != "none")
            .collect();
        let mut bottoms: Vec<f64> = rects.iter().map(|r| r.1).collect();
        bottoms.sort_by(f64::total_cmp);
        let axis = bottoms
            .iter()
            .max_by_key(|b| bottoms.iter().filter(|c| c == b).count())
            .copied()
            .unwrap();
        rects
            .into_iter()
            .filter(|r| r.1 == axis)
            .map(|(fill, _, height)| (fill, height))
            .collect()
    }

    #[test]
    fn the_chart_has_a_bar_per_row_and_per_shape_and_each_versions_ratio() {
        let rows = latest_rows(CSV, "f16").unwrap();
        assert_eq!(rows.len(), 3);
        let svg = series_svg(&rows, "series & more").unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let words = texts(&svg);
        for text in [
            "series &amp; more",
            "TFLOPS",
            "4096×4096×4096",
            "8192×8192×8192",
            "cuBLAS",
            "v0",
            "v1",
            "v6",
        ] {
            assert!(words.iter().any(|t| t == text), "{text} missing: {words:?}");
        }
        // each version's row its ratio, the later run's (0.64, not v0's earlier 0.62)
        let mut ratios: Vec<&str> = words
            .iter()
            .filter(|t| t.ends_with('×'))
            .map(String::as_str)
            .collect();
        ratios.sort();
        assert_eq!(ratios, ["0.64×", "0.83×", "1.03×"]);
        // cuBLAS's bar at each shape and a bar per row, TFLOPS as the height
        let drawn = bars(&svg);
        assert_eq!(drawn.len(), rows.len() + 2, "{drawn:?}");
        let grey = drawn.iter().filter(|b| b.0 == "#9E9E9E").count();
        assert_eq!(grey, 2, "one cuBLAS bar per shape");
        let mut heights: Vec<f64> = drawn.iter().map(|b| b.1).collect();
        heights.sort_by(f64::total_cmp);
        // 410 (v0), 520 (v1), 630 and 640 (cuBLAS), 660 (v6) TFLOPS
        let per_tflop = heights[4] / 660.0;
        for (h, t) in heights.iter().zip([410.0, 520.0, 630.0, 640.0, 660.0]) {
            assert!((h - t * per_tflop).abs() <= 1.0, "{heights:?}");
        }
        // a row fewer, a bar and a ratio fewer
        let fewer = series_svg(&rows[1..], "series").unwrap();
        assert_eq!(bars(&fewer).len(), drawn.len() - 1);
        let fewer_ratios = texts(&fewer).iter().filter(|t| t.ends_with('×')).count();
        assert_eq!(fewer_ratios, ratios.len() - 1);
        // a run none of whose rows passed still draws (an empty chart)
        let empty = series_svg(&[], "series").unwrap();
        assert!(!texts(&empty).iter().any(|t| t.ends_with('×')));
    }

    #[test]
    fn a_file_without_the_columns_is_an_error() {
        assert!(latest_rows("", "f16").is_err());
        let e = latest_rows("date,kernel\n", "f16").unwrap_err();
        assert!(e.contains("no `m` column"), "{e}");
    }
}
