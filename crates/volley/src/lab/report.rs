//! The lab's reports: `results.json` (every figure), `report.md`, and a self-contained
//! `report.html` (inline SVG charts, no scripts, no CDN): our figure beside the seed's for every
//! case, the latency histogram and percentile curve of each run, and calls per second over time.

use std::{fmt::Write as _, path::Path};

use anyhow::{Context, Result};

use super::{Ctx, Row, scenarios, takeaway};

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
        "machine": ctx.machine,
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
        let ours = match (&r.not_run, r.spread) {
            (Some(_), _) => "not run".to_owned(),
            (None, Some(_)) => format!("{} (median)", fig(r.ours)),
            (None, None) => fig(r.ours),
        };
        let _ = writeln!(
            s,
            "{:<13} {:<w$} {:>12} {:>12} {:>7}",
            r.scenario,
            r.case,
            ours,
            r.seed.map_or_else(|| "-".into(), fig),
            r.errors
        );
    }
    for (n, why) in skipped {
        let _ = writeln!(s, "{n:<13} not run: {why}");
    }
    s.push('\n');
    for sc in scenarios() {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.scenario == sc.name).collect();
        if let Some(t) = takeaway::line(sc.name, &mine) {
            let _ = writeln!(s, "{}: {t}", sc.name);
        }
    }
    for r in rows.iter().filter(|r| r.not_run.is_some()).take(1) {
        let _ = writeln!(s, "{}: {}", r.scenario, ours_cell(r));
    }
    s
}

fn markdown(rows: &[Row], skipped: &[(&str, String)], ctx: &Ctx) -> String {
    let mut s = String::from("# volley lab\n\n");
    let _ = writeln!(
        s,
        "Server: {}. Machine: {}. {}{} {REPEATS}\n",
        ctx.target.as_deref().unwrap_or("volley serve (built in)"),
        ctx.machine,
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
        if let Some(t) = takeaway::line(sc.name, &mine) {
            let _ = writeln!(s, "**{t}**\n");
        }
        s += "| case | ours | seed | unit | ours, s | seed, s | calls | errors | p50 ms | p99 ms |\n";
        s += "|---|---|---|---|---|---|---|---|---|---|\n";
        for r in mine {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} |",
                r.case,
                ours_cell(r),
                r.seed.map_or_else(|| "-".into(), fig),
                r.unit,
                secs(r.not_run.is_none().then_some(r.elapsed_s)),
                secs(r.seed_elapsed_s),
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

/// A generous estimate of a text's width in pixels at `size` px (sans-serif digits and lower
/// case run about 0.55-0.62 em; the charts leave room for 0.64).
fn text_w(t: &str, size: f64) -> f64 {
    t.chars().count() as f64 * size * 0.64
}

/// An SVG that scales down with the page (its viewBox is `w` x `h`) and never past its size.
fn svg_open(w: f64, h: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" \
         style=\"width:100%;max-width:{w:.0}px\" role=\"img\">"
    )
}

/// A row's figure as the tables show it: the median and spread of repeated runs, or why the
/// case was not run.
fn ours_cell(r: &Row) -> String {
    if let Some(why) = &r.not_run {
        return format!("not run: {why}");
    }
    match r.spread {
        Some((lo, hi)) => format!("{} ({}-{}, {} runs)", fig(r.ours), fig(lo), fig(hi), r.runs),
        None => fig(r.ours),
    }
}

/// Horizontal bars, ours and the seed's for each case; each case's name on the line above its
/// bars, so a long name never runs into them.
fn bars(rows: &[&Row]) -> String {
    let max = rows
        .iter()
        .flat_map(|r| [r.ours, r.seed.unwrap_or(0.0)])
        .fold(1.0_f64, f64::max);
    let value = |r: &Row| format!("{} {}", fig(r.ours), r.unit);
    let label_w = rows
        .iter()
        .map(|r| text_w(&r.case, 12.0))
        .fold(0.0, f64::max);
    let value_w = rows
        .iter()
        .map(|r| {
            text_w(&value(r), 11.0).max(text_w(
                &format!("seed {}", fig(r.seed.unwrap_or(0.0))),
                11.0,
            ))
        })
        .fold(0.0, f64::max)
        + 8.0;
    let bar_w = 520.0;
    let w = label_w.max(bar_w + value_w) + 4.0;
    let row_h = 50.0;
    let h = row_h * rows.len() as f64 + 24.0;
    let mut s = svg_open(w, h);
    for (i, r) in rows.iter().enumerate() {
        let y = i as f64 * row_h;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 13.0,
            esc(&r.case)
        );
        if r.not_run.is_some() {
            let _ = write!(
                s,
                "<text x=\"0\" y=\"{}\" font-size=\"11\" fill=\"#777\">{}</text>",
                y + 30.0,
                esc(&ours_cell(r))
            );
        } else {
            let ours = r.ours / max * bar_w;
            let _ = write!(
                s,
                "<rect x=\"0\" y=\"{}\" width=\"{ours:.1}\" height=\"13\" fill=\"#2f6fdb\"/>\
                 <text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{}</text>",
                y + 18.0,
                ours + 4.0,
                y + 29.0,
                esc(&value(r))
            );
        }
        if let Some(seed) = r.seed {
            let sw = seed / max * bar_w;
            let _ = write!(
                s,
                "<rect x=\"0\" y=\"{}\" width=\"{sw:.1}\" height=\"13\" fill=\"#aaaaaa\"/>\
                 <text x=\"{:.1}\" y=\"{}\" font-size=\"11\">seed {}</text>",
                y + 33.0,
                sw + 4.0,
                y + 44.0,
                fig(seed)
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"0\" y=\"{}\" font-size=\"11\" fill=\"#2f6fdb\">&#9632; ours</text>\
         <text x=\"60\" y=\"{}\" font-size=\"11\" fill=\"#777\">&#9632; seed (published)</text></svg>",
        h - 6.0,
        h - 6.0
    );
    s
}

/// Axis ticks from 0 to at least `max`: steps of 1, 2 or 5 times a power of ten, at most six.
fn ticks(max: f64) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|st| max / st <= 5.0)
        .unwrap_or(10.0 * pow);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick's label: no more digits than the step needs.
fn tick_label(v: f64) -> String {
    if v == 0.0 || v.abs() >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if (v * 10.0).fract().abs() < 1e-9 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A line chart of one or more series of (x, y) points, with ticked axes in the given units.
fn line_chart(
    title: &str,
    x_unit: &str,
    y_unit: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (xmax, ymax) = all.fold((0.0_f64, 0.0_f64), |(a, b), (x, y)| (a.max(*x), b.max(*y)));
    let (xt, yt) = (ticks(xmax), ticks(ymax));
    let (xtop, ytop) = (xt[xt.len() - 1], yt[yt.len() - 1]);
    let left = yt
        .iter()
        .map(|v| text_w(&tick_label(*v), 10.0))
        .fold(0.0, f64::max)
        + 8.0;
    let (w, h, top, bottom, right) = (380.0, 210.0, 22.0, 34.0, 14.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let px = |x: f64| left + x / xtop * pw;
    let py = |y: f64| top + ph - y / ytop * ph;
    let colors = [
        "#2f6fdb", "#d9822b", "#3a9b5c", "#b04b9e", "#777777", "#c23b3b",
    ];
    let mut s = String::from("<figure>");
    s += &svg_open(w, h);
    let _ = write!(
        s,
        "<text x=\"0\" y=\"12\" font-size=\"10\">{}</text>\
         <rect x=\"{left:.1}\" y=\"{top}\" width=\"{pw:.1}\" height=\"{ph:.1}\" fill=\"none\" stroke=\"#bbb\"/>",
        esc(y_unit)
    );
    for v in &yt {
        let y = py(*v);
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            left,
            left + pw,
            left - 4.0,
            y + 3.5,
            tick_label(*v)
        );
    }
    for (i, v) in xt.iter().enumerate() {
        let x = px(*v);
        // The first and last labels are anchored inside the plot's span, so none overhangs.
        let anchor = match i {
            0 => "start",
            _ if i == xt.len() - 1 => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#bbb\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"{anchor}\">{}</text>",
            top + ph,
            top + ph + 4.0,
            top + ph + 15.0,
            tick_label(*v)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        left + pw,
        h - 4.0,
        esc(x_unit)
    );
    for (i, (_, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
            colors[i % colors.len()],
            path.join(" ")
        );
    }
    s += "</svg><figcaption><b>";
    s += &esc(title);
    s += "</b>";
    for (i, (name, _)) in series.iter().enumerate() {
        let _ = write!(
            s,
            "<br><span style=\"color:{}\">&#9632;</span> {}",
            colors[i % colors.len()],
            esc(name)
        );
    }
    s += "</figcaption></figure>";
    s
}

/// How repeated runs are shown, said once at the top of each report.
const REPEATS: &str = "A run shorter than a second (a thousand calls take milliseconds) swings \
                       widely from run to run: it is repeated, five runs in all (three with \
                       --quick), and shown as the median run's figure with the lowest and \
                       highest.";

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

fn html(rows: &[Row], skipped: &[(&str, String)], ctx: &Ctx) -> String {
    let mut s = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>volley lab</title>\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}\
         table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}\
         td:first-child,th:first-child{text-align:left}figure{display:inline-block;vertical-align:top;width:380px;max-width:100%;margin:0 1em 1em 0}\
         figcaption{font-size:12px}.note{color:#555}.takeaway{font-weight:600}</style></head><body><h1>volley lab</h1>",
    );
    let _ = write!(
        s,
        "<p class=\"note\">Server: {}. Machine: {}. {}{} {}</p>",
        esc(ctx.target.as_deref().unwrap_or("volley serve (built in)")),
        esc(&ctx.machine.to_string()),
        if ctx.quick {
            "Quick run (small counts). "
        } else {
            ""
        },
        NOTE,
        REPEATS
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
        if let Some(t) = takeaway::line(sc.name, &mine) {
            let _ = write!(s, "<p class=\"takeaway\">{}</p>", esc(&t));
        }
        s += &bars(&mine);
        s += "<table><tr><th>case</th><th>ours</th><th>seed</th><th>unit</th><th>ours, s</th>\
              <th>seed, s</th><th>calls</th><th>errors</th><th>p50 ms</th><th>p99 ms</th></tr>";
        for r in &mine {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
                esc(&r.case),
                esc(&ours_cell(r)),
                r.seed.map_or_else(|| "-".into(), fig),
                esc(&r.unit),
                secs(r.not_run.is_none().then_some(r.elapsed_s)),
                secs(r.seed_elapsed_s),
                r.calls,
                r.errors,
                r.p50_ms,
                r.p99_ms
            );
        }
        s += "</table><div>";
        let mine: Vec<&Row> = mine.into_iter().filter(|r| r.not_run.is_none()).collect();
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
            s += &line_chart("Latency histogram", "latency, ms", "calls", &histograms);
        }
        if !curves.is_empty() {
            s += &line_chart(
                "Latency: the percentile reached at each latency",
                "latency, ms",
                "percentile, %",
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
            s += &line_chart(
                "Throughput over time",
                "time into the run, s",
                "calls/s",
                &timelines,
            );
        }
        s += "</div>";
    }
    s += "</body></html>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(ticks(100.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(7.3), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(ticks(0.42), [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5]);
        assert_eq!(ticks(0.0), [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(25000.0), "25000");
    }
}
