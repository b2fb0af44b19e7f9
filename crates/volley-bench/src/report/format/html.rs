//! A self-contained HTML report: no CDN, no script; the summary, status and error tables, an
//! inline SVG of ghz's histogram and one of the percentile curve (to p99.99 from the HDR data),
//! and the options.

use std::io::{self, Write};

use crate::report::Report;
use crate::report::ghzfmt::format_nano_unit;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn histogram_svg(r: &Report) -> String {
    let Some(buckets) = &r.histogram else {
        return "<p>No successful calls.</p>".into();
    };
    let (w, row, left) = (640.0, 24.0, 110.0);
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let h = row * buckets.len() as f64 + 10.0;
    let mut s = format!(
        r#"<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="latency histogram">"#
    );
    for (i, b) in buckets.iter().enumerate() {
        let y = i as f64 * row + 4.0;
        let bw = (w - left - 80.0) * b.count as f64 / max;
        s += &format!(
            r##"<text x="{x}" y="{ty}" text-anchor="end">{:.3} ms</text><rect x="{left}" y="{y}" width="{bw:.1}" height="{bh}" fill="#2a7ab0"/><text x="{tx:.1}" y="{ty}">{}</text>"##,
            b.mark * 1000.0,
            b.count,
            x = left - 8.0,
            ty = y + 14.0,
            bh = row - 6.0,
            tx = left + bw + 6.0,
        );
    }
    s + "</svg>"
}

fn percentile_svg(r: &Report) -> String {
    let Some(h) = &r.latency_histogram else {
        return String::new();
    };
    // x: percentile on a "nines" scale (0 = p0, 1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99).
    let points: Vec<(f64, f64)> = (0..=400)
        .map(|i| {
            let x = f64::from(i) / 100.0;
            let q = 1.0 - 10f64.powf(-x);
            (
                x,
                h.value_at_quantile(q).clamp(r.fastest, r.slowest) as f64 / 1e6,
            )
        })
        .collect();
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3);
    let (w, ht, pad) = (640.0, 240.0, 50.0);
    let px = |x: f64| pad + x / 4.0 * (w - 2.0 * pad);
    let py = |y: f64| ht - pad + 10.0 - y / ymax * (ht - 2.0 * pad);
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
        .collect();
    let mut s = format!(
        r#"<svg class="chart" viewBox="0 0 {w} {ht}" width="{w}" height="{ht}" role="img" aria-label="latency by percentile">"#
    );
    s += &format!(
        r##"<polyline fill="none" stroke="#2a7ab0" stroke-width="2" points="{}"/>"##,
        path.join(" ")
    );
    for (x, label) in [
        (0.0, "p0"),
        (1.0, "p90"),
        (2.0, "p99"),
        (3.0, "p99.9"),
        (4.0, "p99.99"),
    ] {
        s += &format!(
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{label}</text>"#,
            px(x),
            ht - 12.0
        );
    }
    s += &format!(
        r#"<text x="{}" y="{:.1}" text-anchor="end">{ymax:.2} ms</text><text x="{}" y="{:.1}" text-anchor="end">0</text>"#,
        pad - 4.0,
        py(ymax) + 4.0,
        pad - 4.0,
        py(0.0)
    );
    s + "</svg>"
}

/// Writes the page.
pub(super) fn write(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let title = if r.name.is_empty() {
        "volley bench".to_string()
    } else {
        format!("volley bench - {}", esc(&r.name))
    };
    let mut s = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em auto;max-width:720px;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border-bottom:1px solid #ddd;padding:4px 12px;text-align:left}}
svg.chart text{{font-size:12px;fill:#333}}pre{{background:#f5f5f5;padding:1em;overflow:auto}}</style></head><body>
<h1>{title}</h1><p>{date} &middot; end reason: {reason}</p>
<h2 id="summary">Summary</h2><table>
<tr><th>Count</th><td>{count}</td></tr><tr><th>Total</th><td>{total}</td></tr>
<tr><th>Slowest</th><td>{slowest}</td></tr><tr><th>Fastest</th><td>{fastest}</td></tr>
<tr><th>Average</th><td>{average}</td></tr><tr><th>Requests/sec</th><td>{rps:.2}</td></tr></table>
"#,
        date = esc(&r.date),
        reason = esc(&r.end_reason),
        count = r.count,
        total = format_nano_unit(r.total),
        slowest = format_nano_unit(r.slowest),
        fastest = format_nano_unit(r.fastest),
        average = format_nano_unit(r.average),
        rps = r.rps,
    );
    s += "<h2 id=\"histogram\">Histogram</h2>";
    s += &histogram_svg(r);
    s += "<h2 id=\"latency\">Latency distribution</h2><table><tr>";
    for p in r.latency_distribution.iter().flatten() {
        s += &format!("<th>{} %</th>", p.percentage);
    }
    for q in &r.volley.latency_tail {
        s += &format!("<th>{} %</th>", q.percentage);
    }
    s += "</tr><tr>";
    for p in r.latency_distribution.iter().flatten() {
        s += &format!("<td>{}</td>", format_nano_unit(p.latency));
    }
    for q in &r.volley.latency_tail {
        s += &format!("<td>{}</td>", format_nano_unit(q.latency));
    }
    s += "</tr></table>";
    s += &percentile_svg(r);
    s += "<h2 id=\"status\">Status distribution</h2><table><tr><th>Status</th><th>Count</th><th>% of total</th></tr>";
    let pct = |n: u64| 100.0 * n as f64 / r.count.max(1) as f64;
    for (code, n) in &r.status_code_distribution.0 {
        s += &format!(
            "<tr><td>{}</td><td>{n}</td><td>{:.2} %</td></tr>",
            esc(code),
            pct(*n)
        );
    }
    s += "</table>";
    if !r.error_distribution.0.is_empty() {
        s += "<h2 id=\"errors\">Errors</h2><table><tr><th>Error</th><th>Count</th><th>% of total</th></tr>";
        for (e, n) in &r.error_distribution.0 {
            s += &format!(
                "<tr><td>{}</td><td>{n}</td><td>{:.2} %</td></tr>",
                esc(e),
                pct(*n)
            );
        }
        s += "</table>";
    }
    let options = serde_json::to_string_pretty(&r.options).unwrap_or_default();
    s += &format!(
        "<h2 id=\"options\">Options</h2><pre>{}</pre><p>Generated by volley bench.</p></body></html>\n",
        esc(&options)
    );
    w.write_all(s.as_bytes())
}
