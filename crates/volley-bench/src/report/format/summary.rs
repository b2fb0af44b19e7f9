//! ghz's default text summary, byte for byte (tabs, the space before `%`, trailing spaces,
//! tabwriter padding), with status and error rows in a fixed order.

use std::io::{self, Write};

use crate::report::ghzfmt::{format_nano_unit, tabwrite};
use crate::report::{Report, server::ServerFigures, verdicts::Verdicts};

/// Writes the summary: ghz's block for the run; under a mix, one block per method first, then
/// the whole run's.
pub(super) fn write(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut s = String::new();
    let weights: u64 = r.methods.iter().map(|m| m.weight).sum();
    for m in &r.methods {
        s += &block(
            &m.report,
            &format!(
                "Summary of {} (weight {} of {weights}, {} of {} calls):",
                m.call, m.weight, m.report.count, r.count
            ),
        );
    }
    let title = if r.methods.is_empty() {
        "Summary:"
    } else {
        "Summary of all calls:"
    };
    s += &block(r, title);
    if let Some(v) = &r.volley.verdicts {
        s += &thresholds_section(v);
    }
    w.write_all(s.as_bytes())
}

/// ghz's block of figures, under `title`.
fn block(r: &Report, title: &str) -> String {
    let mut s = format!("\n{title}\n");
    if !r.name.is_empty() {
        s += &format!("  Name:\t\t{}\n", r.name);
    }
    s += &format!("  Count:\t{}\n", r.count);
    s += &format!("  Total:\t{}\n", format_nano_unit(r.total));
    s += &format!("  Slowest:\t{}\n", format_nano_unit(r.slowest));
    s += &format!("  Fastest:\t{}\n", format_nano_unit(r.fastest));
    s += &format!("  Average:\t{}\n", format_nano_unit(r.average));
    s += &format!("  Requests/sec:\t{:4.2}\n", r.rps);
    s += "\nResponse time histogram:\n";
    if let Some(buckets) = &r.histogram {
        let marks: Vec<String> = buckets
            .iter()
            .map(|b| format!("{:4.3}", b.mark * 1000.0))
            .collect();
        let counts: Vec<String> = buckets.iter().map(|b| format!("[{}]", b.count)).collect();
        let wm = marks.iter().map(String::len).max().unwrap_or(0);
        let wc = counts.iter().map(String::len).max().unwrap_or(0);
        let max = buckets.iter().map(|b| b.count).max().unwrap_or(0);
        for ((m, c), b) in marks.iter().zip(&counts).zip(buckets) {
            let bar = (b.count * 40 + max / 2).checked_div(max).unwrap_or(0);
            s += &format!("  {m:<wm$} {c:<wc$} |{}\n", "∎".repeat(bar as usize));
        }
    }
    s += "\nLatency distribution:";
    for p in r.latency_distribution.iter().flatten() {
        s += &format!("\n  {} % in {} ", p.percentage, format_nano_unit(p.latency));
    }
    s += "\n\n";
    if !r.status_code_distribution.0.is_empty() {
        s += "Status code distribution:\n";
        let rows: Vec<Vec<String>> = r
            .status_code_distribution
            .0
            .iter()
            .map(|(code, n)| vec![format!("  [{code}]"), format!("{n} responses")])
            .collect();
        s += &tabwrite(&rows);
    }
    s += "\n";
    if !r.error_distribution.0.is_empty() {
        s += "Error distribution:\n";
        let rows: Vec<Vec<String>> = r
            .error_distribution
            .0
            .iter()
            .map(|(e, n)| vec![format!("  [{n}]"), e.clone()])
            .collect();
        s += &tabwrite(&rows);
    }
    s += "\n";
    if let Some(server) = &r.volley.server_metrics {
        s += &server_section(server, r.average);
    }
    s
}

/// `--threshold`: each threshold, whether it held, and what was measured; only when thresholds
/// are given (ghz's sections above are unchanged).
fn thresholds_section(v: &Verdicts) -> String {
    let mut s = String::from(
        "Thresholds:
",
    );
    let rows: Vec<Vec<String>> = v
        .thresholds
        .iter()
        .map(|t| {
            let mark = if t.held { "held" } else { "FAILED" };
            vec![
                format!("  {}", t.threshold),
                mark.to_owned(),
                t.shown.clone(),
            ]
        })
        .collect();
    s += &tabwrite(&rows);
    if let Some(why) = &v.invalid {
        s += &format!("  The run cannot be judged: {why}.\n");
    }
    s += "\n";
    s
}

/// `--server-metrics`: the server's account of the same calls, after ghz's sections (which stay
/// byte for byte ghz's).
fn server_section(f: &ServerFigures, client_average: u64) -> String {
    let mut s = format!("Server ({}, {}):\n", f.url, f.method);
    s += &format!("  Count:\t{}\n", f.count);
    s += &format!("  Average:\t{}\n", format_nano_unit(f.average));
    if f.count > 0 {
        s += &format!(
            "  Client minus server (average):\t{}\n",
            format_nano_unit(client_average.saturating_sub(f.average))
        );
    }
    if !f.latency_distribution.is_empty() {
        s += "  Latency distribution (from the server's histogram buckets):";
        for p in &f.latency_distribution {
            s += &format!(
                "\n    {} % in {} ",
                p.percentage,
                format_nano_unit(p.latency)
            );
        }
        s += "\n";
    }
    for (status, n) in &f.statuses {
        s += &format!("  [{status}]\t{n} calls\n");
    }
    s += "\n";
    s
}
