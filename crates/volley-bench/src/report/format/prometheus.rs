//! ghz's Prometheus text exposition: gauges for the run's figures, a histogram of the 11 buckets
//! and a summary of the percentiles, every series labelled with the run's options. Two fixes over
//! ghz: labels in a fixed order, and histogram buckets cumulative as Prometheus defines them.

use std::io::{self, Write};

use crate::report::Report;
use volley_proto::gofmt::format_g;

fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(r: &Report) -> String {
    let o = &r.options;
    let b = |v: bool| if v { "true" } else { "false" }.to_string();
    let mut l: Vec<(&str, String)> = vec![
        ("name", r.name.clone()),
        ("end_reason", r.end_reason.clone()),
        ("call", o.call.clone()),
        ("host", o.host.clone()),
    ];
    if !o.proto.is_empty() {
        l.push(("proto", o.proto.clone()));
    }
    if !o.protoset.is_empty() {
        l.push(("protoset", o.protoset.clone()));
    }
    l.extend([
        ("import_paths", o.import_paths.join(",")),
        ("insecure", b(o.insecure)),
        ("skipTLS", b(o.skip_tls)),
        ("async", b(o.async_mode)),
        ("binary", b(o.binary)),
        ("count_errors", b(o.count_errors)),
        ("rps", o.rps.to_string()),
    ]);
    if o.load_schedule != "const" {
        l.extend([
            ("load_schedule", o.load_schedule.clone()),
            ("load_start", o.load_start.to_string()),
            ("load_end", o.load_end.to_string()),
            ("load_step", o.load_step.to_string()),
            ("load_step_duration", o.load_step_duration.to_string()),
            ("load_max_duration", o.load_max_duration.to_string()),
        ]);
    }
    l.push(("concurrency", o.concurrency.to_string()));
    if o.concurrency_schedule != "const" {
        l.extend([
            ("concurrency_schedule", o.concurrency_schedule.clone()),
            ("concurrency_start", o.concurrency_start.to_string()),
            ("concurrency_end", o.concurrency_end.to_string()),
            ("concurrency_step", o.concurrency_step.to_string()),
            (
                "concurrency_step_duration",
                o.concurrency_step_duration.to_string(),
            ),
            (
                "concurrency_max_duration",
                o.concurrency_max_duration.to_string(),
            ),
        ]);
    }
    l.extend([
        ("total", o.total.to_string()),
        ("connections", o.connections.to_string()),
        ("CPUs", o.cpus.to_string()),
        ("skipFirst", o.skip_first.to_string()),
        ("duration", o.duration.to_string()),
        ("timeout", o.timeout.to_string()),
        ("dial_timeout", o.dial_timeout.to_string()),
        ("keepalive", o.keepalive.to_string()),
    ]);
    l.iter()
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes the exposition.
pub(super) fn write(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let l = labels(r);
    let mut s = String::new();
    let gauge = |s: &mut String, name: &str, v: f64| {
        s.push_str(&format!(
            "# TYPE {name} gauge\n{name}{{{l}}} {}\n",
            format_g(v)
        ));
    };
    gauge(&mut s, "ghz_run_count", r.count as f64);
    gauge(&mut s, "ghz_run_total", r.total as f64);
    gauge(&mut s, "ghz_run_average", r.average as f64);
    gauge(&mut s, "ghz_run_fastest", r.fastest as f64);
    gauge(&mut s, "ghz_run_slowest", r.slowest as f64);
    gauge(&mut s, "ghz_run_rps", r.rps);
    s.push_str("# TYPE ghz_run_histogram histogram\n");
    let mut cumulative = 0;
    for b in r.histogram.iter().flatten() {
        cumulative += b.count;
        s.push_str(&format!(
            "ghz_run_histogram_bucket{{{l},le=\"{}\"}} {cumulative}\n",
            format_g(b.mark)
        ));
    }
    s.push_str(&format!(
        "ghz_run_histogram_bucket{{{l},le=\"+Inf\"}} {}\n",
        r.count
    ));
    s.push_str(&format!(
        "ghz_run_histogram_sum{{{l}}} {}\n",
        format_g(r.total as f64)
    ));
    s.push_str(&format!("ghz_run_histogram_count{{{l}}} {}\n", r.count));
    s.push_str("# TYPE ghz_run_latency summary\n");
    for p in r.latency_distribution.iter().flatten() {
        s.push_str(&format!(
            "ghz_run_latency{{{l},quantile=\"{}\"}} {}\n",
            format_g(f64::from(p.percentage) / 100.0),
            format_g(p.latency as f64)
        ));
    }
    s.push_str(&format!(
        "ghz_run_latency_sum{{{l}}} {}\n",
        format_g(r.total as f64)
    ));
    s.push_str(&format!("ghz_run_latency_count{{{l}}} {}\n", r.count));
    gauge(&mut s, "ghz_run_errors", r.error_count() as f64);
    w.write_all(s.as_bytes())
}
