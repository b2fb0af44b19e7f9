//! The lab's reports: `results.json` (every figure), `report.md`, and a self-contained
//! `report.html` (inline SVG charts, no scripts, no CDN): our figure beside the seed's for every
//! case, the latency histogram and percentile curve of each run, and calls per second over time.

use std::{fmt::Write as _, path::Path};

use anyhow::{Context, Result};

use super::{
    cells::{esc, fig, ours_cell},
    charts::{bars, line_chart},
    row::{Ctx, Row},
    scenarios, takeaway,
};

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
        "date": volley_proto::gofmt::rfc3339(volley_bench::callee::payload::now_unix_nanos()),
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
    let _ = writeln!(s, "{}\n", header(ctx));
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
        let _ = writeln!(s, "| {} |", COLUMNS.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(COLUMNS.len()));
        for r in mine {
            let _ = writeln!(s, "| {} |", cells(r).join(" | "));
        }
        s.push('\n');
    }
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

/// The tables' columns, in report.md and report.html alike.
const COLUMNS: [&str; 10] = [
    "case", "ours", "seed", "unit", "ours, s", "seed, s", "calls", "errors", "p50 ms", "p99 ms",
];

/// A row's cells under [`COLUMNS`], unescaped.
fn cells(r: &Row) -> [String; 10] {
    [
        r.case.clone(),
        ours_cell(r),
        r.seed.map_or_else(|| "-".into(), fig),
        r.unit.clone(),
        secs(r.not_run.is_none().then_some(r.elapsed_s)),
        secs(r.seed_elapsed_s),
        r.calls.to_string(),
        r.errors.to_string(),
        format!("{:.2}", r.p50_ms),
        format!("{:.2}", r.p99_ms),
    ]
}

/// What ran where, and how to read the figures: the first paragraph of both reports.
fn header(ctx: &Ctx) -> String {
    format!(
        "Server: {}. Machine: {}. {}{NOTE} {REPEATS}",
        ctx.target.as_deref().unwrap_or("volley serve (built in)"),
        ctx.machine,
        if ctx.quick {
            "Quick run (small counts). "
        } else {
            ""
        },
    )
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
    let _ = write!(s, "<p class=\"note\">{}</p>", esc(&header(ctx)));
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
        s += "<table><tr>";
        for c in COLUMNS {
            let _ = write!(s, "<th>{c}</th>");
        }
        s += "</tr>";
        for r in &mine {
            s += "<tr>";
            for c in cells(r) {
                let _ = write!(s, "<td>{}</td>", esc(&c));
            }
            s += "</tr>";
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
    use crate::seeds::tests::ctx;

    fn rows() -> Vec<Row> {
        vec![
            Row {
                scenario: "greeter".into(),
                case: "helloworld n=1000 c=100".into(),
                unit: "requests/s".into(),
                ours: 41_000.0,
                seed: Some(4942.17),
                calls: 3000,
                p50_ms: 2.0,
                p99_ms: 5.5,
                percentiles: vec![(50.0, 2.0), (99.0, 5.5)],
                elapsed_s: 0.2,
                runs: 3,
                spread: Some((40_000.0, 42_000.0)),
                ..Row::default()
            },
            Row {
                scenario: "orders".into(),
                case: "unary, 10 clients".into(),
                unit: "orders/s".into(),
                seed: Some(3631.0),
                elapsed_s: 9.0,
                not_run: Some("needs about 2000 open files".into()),
                ..Row::default()
            },
        ]
    }

    #[test]
    fn the_summary_is_a_table_then_the_takeaways() {
        let skipped = [("gateway", "failed: boom".to_owned())];
        assert_eq!(
            summary(&rows(), &skipped),
            "\n\
             scenario      case                            ours         seed  errors\n\
             greeter       helloworld n=1000 c=100 41000 (median)         4942       0\n\
             orders        unary, 10 clients            not run         3631       0\n\
             gateway       not run: failed: boom\n\
             \n\
             greeter: volley: 8.3 x the seed's figure.\n\
             orders: not run: needs about 2000 open files\n"
        );
        assert_eq!(
            summary(&[], &[]),
            "\nscenario      case         ours         seed  errors\n\n"
        );
    }

    #[test]
    fn the_markdown_report_has_a_section_per_scenario() {
        let skipped = [("gateway", "failed: boom".to_owned())];
        let md = markdown(&rows(), &skipped, &ctx(true, None));
        assert!(
            md.starts_with(
                "# volley lab\n\nServer: volley serve (built in). Machine: Test CPU, 2 cores. \
                 Quick run (small counts). The seeds ran on other hardware"
            ),
            "{md}"
        );
        let sections: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(sections.len(), 5);
        assert!(md.contains(
            "## users (seed 000: api.Users Get and List under ghz)\n\nNot run (not selected).\n"
        ));
        assert!(md.contains(
            "## gateway (seed 002: gateway connection strategies)\n\nNot run: failed: boom\n"
        ));
        assert!(md.contains("**volley: 8.3 x the seed's figure.**\n"));
        assert!(md.contains(
            "| case | ours | seed | unit | ours, s | seed, s | calls | errors | p50 ms | p99 ms |\n\
             |---|---|---|---|---|---|---|---|---|---|\n\
             | helloworld n=1000 c=100 | 41000 (40000-42000, 3 runs) | 4942 | requests/s | 0.2000 \
             | - | 3000 | 0 | 2.00 | 5.50 |\n"
        ));
        // A case not run shows why, and no time of its own.
        assert!(md.contains(
            "| unary, 10 clients | not run: needs about 2000 open files | 3631 | orders/s | - | - \
             | 0 | 0 | 0.00 | 0.00 |\n"
        ));
        let against = markdown(&[], &[], &ctx(false, Some("10.0.0.1:50051")));
        assert!(against.contains("Server: 10.0.0.1:50051. Machine: Test CPU, 2 cores. The seeds"));
    }

    #[test]
    fn the_html_report_escapes_text_and_charts_only_what_ran() {
        let mut rows = rows();
        rows[0].case = "a <x> & c".into();
        rows[0].timeline = vec![10, 20];
        let skipped = [("gateway", "failed: <boom>".to_owned())];
        let html = html(&rows, &skipped, &ctx(false, None));
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.ends_with("</body></html>\n"));
        assert!(html.contains("<td>a &lt;x&gt; &amp; c</td>"));
        assert!(html.contains("<p>Not run: failed: &lt;boom&gt;</p>"));
        for raw in ["<x>", "<boom>"] {
            let at = html.find(raw).map(|i| &html[i.saturating_sub(120)..i + 20]);
            assert!(at.is_none(), "{raw} unescaped: {at:?}");
        }
        assert!(!html.contains("<script"));
        // Percentiles and throughput for the greeter run; the orders row ran nothing to chart.
        assert!(html.contains("Latency: the percentile reached at each latency"));
        assert!(html.contains("Throughput over time"));
        assert!(!html.contains("Latency histogram"));
        // Bars for both scenarios (the orders one saying why it did not run), two curves.
        assert_eq!(html.matches("<svg").count(), 4);
        assert!(html.contains(">not run: needs about 2000 open files</text>"));
    }
}
