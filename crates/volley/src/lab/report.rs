//! The lab's reports: `results.json` (every figure), `report.md`, and a self-contained
//! `report.html` (inline SVG charts, no scripts, no CDN): our figure beside the seed's for every
//! case, the latency histogram and percentile curve of each run, and calls per second over time.

use std::{fmt::Write as _, path::Path};

use anyhow::{Context, Result};

use super::{Ctx, Row, scenarios};

const NOTE: &str = "The seeds ran on other hardware (and other stacks); compare shapes and \
                    ratios, not absolute figures.";

/// Writes the three report files into `out`.
pub(super) fn write_all(
    out: &Path,
    rows: &[Row],
    skipped: &[(&str, String)],
    ctx: &Ctx,
) -> Result<()> {
    let results = serde_json::json!({
        "date": volley_bench::report::gofmt::rfc3339(volley_bench::target::payload::now_unix_nanos()),
        "quick": ctx.quick,
        "target": ctx.target,
        "rows": rows,
        "notRun": skipped.iter().map(|(n, why)| serde_json::json!({"scenario": n, "why": why})).collect::<Vec<_>>(),
    });
    let write = |name: &str, body: String| {
        let p = out.join(name);
        std::fs::write(&p, body).with_context(|| format!("cannot write {}", p.display()))
    };
    write("results.json", serde_json::to_string_pretty(&results)?)?;
    write("report.md", markdown(rows, skipped, ctx))?;
    write("report.html", html(rows, skipped, ctx))?;
    Ok(())
}

fn fig(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The terminal's closing table.
pub(super) fn summary(rows: &[Row], skipped: &[(&str, String)]) -> String {
    let mut s = String::from("\n");
    let w = rows.iter().map(|r| r.case.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        s,
        "{:<13} {:<w$} {:>12} {:>12} {:>7}",
        "scenario", "case", "ours", "seed", "errors"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<13} {:<w$} {:>12} {:>12} {:>7}",
            r.scenario,
            r.case,
            fig(r.ours),
            r.seed.map_or_else(|| "-".into(), fig),
            r.errors
        );
    }
    for (n, why) in skipped {
        let _ = writeln!(s, "{n:<13} not run: {why}");
    }
    s
}

fn markdown(rows: &[Row], skipped: &[(&str, String)], ctx: &Ctx) -> String {
    let mut s = String::from("# volley lab\n\n");
    let _ = writeln!(
        s,
        "Server: {}. {}{}\n",
        ctx.target.as_deref().unwrap_or("volley serve (built in)"),
        if ctx.quick {
            "Quick run (small counts). "
        } else {
            ""
        },
        NOTE
    );
    for sc in scenarios() {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.scenario == sc.name).collect();
        let _ = writeln!(s, "## {} ({})\n", sc.name, sc.seed);
        if let Some((_, why)) = skipped.iter().find(|(n, _)| *n == sc.name) {
            let _ = writeln!(s, "Not run: {why}\n");
            continue;
        }
        if mine.is_empty() {
            let _ = writeln!(s, "Not run (not selected).\n");
            continue;
        }
        s += "| case | ours | seed | unit | calls | errors | p50 ms | p99 ms |\n";
        s += "|---|---|---|---|---|---|---|---|\n";
        for r in mine {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} |",
                r.case,
                fig(r.ours),
                r.seed.map_or_else(|| "-".into(), fig),
                r.unit,
                r.calls,
                r.errors,
                r.p50_ms,
                r.p99_ms
            );
        }
        s.push('\n');
    }
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Horizontal bars: ours and the seed's for each case of a scenario.
fn bars(rows: &[&Row]) -> String {
    let max = rows
        .iter()
        .flat_map(|r| [r.ours, r.seed.unwrap_or(0.0)])
        .fold(1.0_f64, f64::max);
    let (label_w, bar_w, row_h) = (330.0, 420.0, 34.0);
    let h = row_h * rows.len() as f64 + 30.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" role=\"img\">",
        label_w + bar_w + 90.0
    );
    for (i, r) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 6.0;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>",
            y + 13.0,
            esc(&r.case)
        );
        let ours = r.ours / max * bar_w;
        let _ = write!(
            s,
            "<rect x=\"{label_w}\" y=\"{y}\" width=\"{ours:.1}\" height=\"12\" fill=\"#2f6fdb\"/>\
             <text x=\"{:.1}\" y=\"{}\" font-size=\"10\">{} {}</text>",
            label_w + ours + 4.0,
            y + 10.0,
            fig(r.ours),
            esc(&r.unit)
        );
        if let Some(seed) = r.seed {
            let w = seed / max * bar_w;
            let _ = write!(
                s,
                "<rect x=\"{label_w}\" y=\"{}\" width=\"{w:.1}\" height=\"12\" fill=\"#aaaaaa\"/>\
                 <text x=\"{:.1}\" y=\"{}\" font-size=\"10\">seed {}</text>",
                y + 14.0,
                label_w + w + 4.0,
                y + 24.0,
                fig(seed)
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{label_w}\" y=\"{}\" font-size=\"10\" fill=\"#2f6fdb\">ours</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#777\">seed (published)</text></svg>",
        h - 4.0,
        label_w + 40.0,
        h - 4.0
    );
    s
}

/// A polyline chart of `points` (x, y) in a small box, with axis labels.
fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (w, h, pad) = (360.0, 180.0, 36.0);
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (xmax, ymax) = all.fold((1e-9_f64, 1e-9_f64), |(a, b), (x, y)| {
        (a.max(*x), b.max(*y))
    });
    let colors = [
        "#2f6fdb", "#d9822b", "#3a9b5c", "#b04b9e", "#777777", "#c23b3b",
    ];
    let mut s = format!(
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">\
         <rect x=\"{pad}\" y=\"6\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>\
         <text x=\"{pad}\" y=\"{}\" font-size=\"10\">0</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{} {}</text>\
         <text x=\"2\" y=\"14\" font-size=\"10\">{}</text><text x=\"2\" y=\"26\" font-size=\"10\">{y_label}</text>",
        w - pad - 6.0,
        h - pad - 6.0,
        h - pad + 14.0,
        w - 6.0,
        h - pad + 14.0,
        fig(xmax),
        x_label,
        fig(ymax)
    );
    for (i, (_, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| {
                format!(
                    "{:.1},{:.1}",
                    pad + x / xmax * (w - pad - 6.0),
                    h - pad - y / ymax * (h - pad - 12.0)
                )
            })
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
            colors[i % colors.len()],
            path.join(" ")
        );
    }
    s += "</svg><figcaption>";
    s += &esc(title);
    for (i, (name, _)) in series.iter().enumerate() {
        let _ = write!(
            s,
            " <span style=\"color:{}\">&#9632; {}</span>",
            colors[i % colors.len()],
            esc(name)
        );
    }
    s += "</figcaption></figure>";
    s
}

fn html(rows: &[Row], skipped: &[(&str, String)], ctx: &Ctx) -> String {
    let mut s = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>volley lab</title>\
         <style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}\
         table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}\
         td:first-child,th:first-child{text-align:left}figure{display:inline-block;margin:0 1em 1em 0}\
         figcaption{font-size:12px}.note{color:#555}</style></head><body><h1>volley lab</h1>",
    );
    let _ = write!(
        s,
        "<p class=\"note\">Server: {}. {}{}</p>",
        esc(ctx.target.as_deref().unwrap_or("volley serve (built in)")),
        if ctx.quick {
            "Quick run (small counts). "
        } else {
            ""
        },
        NOTE
    );
    for sc in scenarios() {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.scenario == sc.name).collect();
        let _ = write!(s, "<h2>{} <small>({})</small></h2>", sc.name, esc(sc.seed));
        if let Some((_, why)) = skipped.iter().find(|(n, _)| *n == sc.name) {
            let _ = write!(s, "<p>Not run: {}</p>", esc(why));
            continue;
        }
        if mine.is_empty() {
            s += "<p>Not run (not selected).</p>";
            continue;
        }
        s += &bars(&mine);
        s += "<table><tr><th>case</th><th>ours</th><th>seed</th><th>unit</th><th>calls</th>\
              <th>errors</th><th>p50 ms</th><th>p99 ms</th></tr>";
        for r in &mine {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
                esc(&r.case),
                fig(r.ours),
                r.seed.map_or_else(|| "-".into(), fig),
                esc(&r.unit),
                r.calls,
                r.errors,
                r.p50_ms,
                r.p99_ms
            );
        }
        s += "</table><div>";
        let curves: Vec<(String, Vec<(f64, f64)>)> = mine
            .iter()
            .filter(|r| !r.percentiles.is_empty())
            .map(|r| {
                (
                    r.case.clone(),
                    r.percentiles.iter().map(|(p, v)| (*v, *p)).collect(),
                )
            })
            .collect();
        let histograms: Vec<(String, Vec<(f64, f64)>)> = mine
            .iter()
            .filter(|r| !r.histogram.is_empty())
            .map(|r| {
                (
                    r.case.clone(),
                    r.histogram.iter().map(|(m, c)| (*m, *c as f64)).collect(),
                )
            })
            .collect();
        if !histograms.is_empty() {
            s += &line_chart("Latency histogram", "ms", "calls", &histograms);
        }
        if !curves.is_empty() {
            s += &line_chart(
                "Latency: percentile reached at each latency",
                "ms",
                "percentile",
                &curves,
            );
        }
        let timelines: Vec<(String, Vec<(f64, f64)>)> = mine
            .iter()
            .filter(|r| r.timeline.len() > 1)
            .map(|r| {
                (
                    r.case.clone(),
                    r.timeline
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (i as f64 + 1.0, *c as f64))
                        .collect(),
                )
            })
            .collect();
        if !timelines.is_empty() {
            s += &line_chart("Throughput over time", "s", "calls/s", &timelines);
        }
        s += "</div>";
    }
    s += "</body></html>\n";
    s
}
