//! ghz's InfluxDB line protocol: `ghz_run` (one line) and `ghz_detail` (one line per call).

use std::io::{self, Write};

use crate::report::Report;
use volley_proto::gofmt::{duration, format_g};

fn clean(s: &str) -> String {
    s.replace(' ', "\\ ")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// A JSON value as ghz embeds it: JSON-encoded, then JSON-encoded again as a string, cleaned.
fn double_json(v: &serde_json::Value) -> String {
    let inner = serde_json::to_string(v).unwrap_or_default();
    clean(&serde_json::to_string(&inner).unwrap_or_default())
}

fn tags(r: &Report, add_errors: bool) -> String {
    let o = &r.options;
    let mut t: Vec<String> = Vec::new();
    if !r.name.is_empty() {
        t.push(format!("name=\"{}\"", clean(r.name.trim())));
    }
    if !o.proto.is_empty() {
        t.push(format!("proto=\"{}\"", o.proto));
    } else if !o.protoset.is_empty() {
        t.push(format!("Protoset=\"{}\"", o.protoset));
    }
    t.push(format!("call=\"{}\"", o.call));
    t.push(format!("host=\"{}\"", o.host));
    t.push(format!("n={}", o.total));
    if o.concurrency_schedule == "const" {
        t.push(format!("c={}", o.concurrency));
    } else {
        t.extend(schedule_tags(
            "concurrency",
            &o.concurrency_schedule,
            [
                o.concurrency_start as i64,
                o.concurrency_end as i64,
                o.concurrency_step,
            ],
            [o.concurrency_step_duration, o.concurrency_max_duration],
        ));
    }
    if o.load_schedule == "const" {
        t.push(format!("rps={}", o.rps));
    } else {
        t.extend(schedule_tags(
            "load",
            &o.load_schedule,
            [o.load_start as i64, o.load_end as i64, o.load_step],
            [o.load_step_duration, o.load_max_duration],
        ));
    }
    t.push(format!("z={}", o.duration));
    t.push(format!("timeout={}", format_g(o.timeout as f64 / 1e9)));
    t.push(format!(
        "dial_timeout={}",
        format_g(o.dial_timeout as f64 / 1e9)
    ));
    t.push(format!("keepalive={}", format_g(o.keepalive as f64 / 1e9)));
    t.push(format!(
        "data={}",
        o.data
            .as_ref()
            .map_or_else(|| "\"\"".to_string(), double_json)
    ));
    t.push(format!(
        "metadata={}",
        o.metadata
            .as_ref()
            .map_or_else(|| "\"\"".to_string(), double_json)
    ));
    t.push(format!(
        "tags={}",
        r.tags
            .as_ref()
            .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
            .map_or_else(|| "\"\"".to_string(), double_json)
    ));
    if add_errors {
        let errors = r.error_count();
        t.push(format!("errors={errors}"));
        t.push(format!("has_errors={}", errors > 0));
    }
    t.join(",")
}

/// The six tags of a non-constant schedule (`load-*` or `concurrency-*`).
fn schedule_tags(
    prefix: &str,
    shape: &str,
    [start, end, step]: [i64; 3],
    [step_d, max_d]: [u64; 2],
) -> [String; 6] {
    [
        format!("{prefix}-schedule={shape}"),
        format!("{prefix}-start={start}"),
        format!("{prefix}-end={end}"),
        format!("{prefix}-step={step}"),
        format!("{prefix}-step-duration={}", duration(step_d as i64)),
        format!("{prefix}-max-duration={}", duration(max_d as i64)),
    ]
}

/// Writes the `ghz_run` line (no trailing newline, as ghz).
pub(super) fn write_summary(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut fields = vec![
        format!("count={}", r.count),
        format!("total={}", r.total),
        format!("average={}", r.average),
        format!("fastest={}", r.fastest),
        format!("slowest={}", r.slowest),
        format!("rps={:4.2}", r.rps),
    ];
    for p in r.latency_distribution.iter().flatten() {
        if p.percentage == 50 {
            fields.push(format!("median={}", p.latency));
        }
        if p.percentage == 95 {
            fields.push(format!("p95={}", p.latency));
        }
    }
    fields.push(format!("errors={}", r.error_count()));
    let ts = r.date_unix_nano.max(0);
    write!(w, "ghz_run,{} {} {ts}", tags(r, true), fields.join(","))
}

/// Writes one `ghz_detail` line per call.
pub(super) fn write_details(w: &mut impl Write, r: &Report) -> io::Result<()> {
    let common = tags(r, false);
    let mut out = io::BufWriter::new(w);
    for d in r.details.iter().flatten() {
        let has_error = !d.error.is_empty();
        writeln!(
            out,
            "ghz_detail,{common},hasError={has_error} latency={},error=\"{}\",status=\"{}\" {}",
            d.latency,
            clean(&d.error),
            d.status,
            d.timestamp_unix_nano.max(0)
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_values_escaped_as_influx_reads_them() {
        assert_eq!(clean("My Run,x=1"), "My\\ Run\\,x\\=1");
    }
}
