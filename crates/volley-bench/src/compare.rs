//! `volley report compare BASE NEW`: what changed between two runs (p50, p90, p99, p99.9, mean,
//! rps, errors), with each figure's 95% confidence interval, so that a change within the runs'
//! own noise is not flagged. `--fail-if 'p99>+10%'` gates on a change beyond it.
//!
//! The intervals come from the runs themselves, with no repetition. A percentile's is the wider
//! of two: the spread of the same percentile over the run's whole seconds (each second's
//! histogram, kept in the results: what drifts within a run) and the order statistics of its
//! whole histogram (the ranks q·n ± 1.96·√(n·q·(1−q)): sampling noise, distribution-free). The
//! rate's comes from the spread of its per-second counts, the error share's from the Wilson
//! interval. Drift between runs (another tenant on the machine) is not in them: gate on changes
//! larger than the drift you see between identical runs.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;

use crate::{recorder::Recorder, report::ghzfmt::tabwrite, results::Results};

/// z for a 95% interval.
const Z: f64 = 1.96;

/// One run, read from its `-O json` report.
pub struct Run {
    recorder: Recorder,
    seconds: f64,
    timeline: Vec<u64>,
    per_second: Vec<[u64; 4]>,
}

/// A run that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompareError(String);

impl Run {
    /// Reads a report's `volley.results`; `name` is for messages.
    pub fn from_report(name: &str, report: &Value) -> Result<Run, CompareError> {
        let v = report.pointer("/volley/results").ok_or_else(|| {
            CompareError(format!(
                "{name}: no volley.results (compare needs `volley bench -O json` reports)"
            ))
        })?;
        let r: Results = serde_json::from_value(v.clone())
            .map_err(|e| CompareError(format!("{name}: volley.results: {e}")))?;
        let recorder = r
            .recorder()
            .map_err(|e| CompareError(format!("{name}: {e}")))?;
        Ok(Run {
            seconds: (r.end_unix_nano - r.start_unix_nano).max(1) as f64 / 1e9,
            timeline: r.timeline.clone(),
            per_second: r.per_second.clone(),
            recorder,
        })
    }
}

/// A figure with its 95% interval.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Estimate {
    /// The figure.
    pub value: f64,
    /// Its interval's low end.
    pub low: f64,
    /// Its interval's high end.
    pub high: f64,
}

fn quantile(run: &Run, q: f64, column: usize) -> Option<Estimate> {
    let h: &Histogram<u64> = &run.recorder.latency;
    if h.is_empty() {
        return None;
    }
    let n = h.len() as f64;
    let spread = Z * (q * (1.0 - q) / n).sqrt();
    let at = |q: f64| h.value_at_quantile(q.clamp(0.0, 1.0)) as f64;
    let value = at(q);
    let (mut low, mut high) = (at(q - spread), at(q + spread));
    // The same quantile second by second: its standard error over the seconds.
    let seconds: Vec<f64> = run.per_second.iter().map(|s| s[column] as f64).collect();
    if seconds.len() >= 3 {
        let k = seconds.len() as f64;
        let mean = seconds.iter().sum::<f64>() / k;
        let sd = (seconds.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
        let half = Z * sd / k.sqrt();
        low = low.min(value - half);
        high = high.max(value + half);
    }
    Some(Estimate { value, low, high })
}

fn rate(run: &Run) -> Estimate {
    let value = run.recorder.count as f64 / run.seconds;
    // The whole seconds of the run, the first and last (partial) ones left out.
    let t = &run.timeline;
    let whole: &[u64] = if t.len() >= 4 {
        &t[1..t.len() - 1]
    } else {
        &[]
    };
    if whole.len() < 2 {
        // Too short to see its own noise: the interval is the figure.
        return Estimate {
            value,
            low: value,
            high: value,
        };
    }
    let k = whole.len() as f64;
    let mean = whole.iter().sum::<u64>() as f64 / k;
    let var = whole
        .iter()
        .map(|c| (*c as f64 - mean).powi(2))
        .sum::<f64>()
        / (k - 1.0);
    let half = Z * var.sqrt() / k.sqrt();
    Estimate {
        value,
        low: value - half,
        high: value + half,
    }
}

fn error_share(run: &Run) -> Estimate {
    let n = run.recorder.count as f64;
    let ok = run.recorder.statuses[0] as f64;
    if n == 0.0 {
        return Estimate {
            value: 0.0,
            low: 0.0,
            high: 0.0,
        };
    }
    let p = (n - ok) / n;
    // Wilson's interval: sound at 0 errors, where p ± z·√(p(1−p)/n) is not.
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Estimate {
        value: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    }
}

fn mean(run: &Run) -> Option<Estimate> {
    let h = &run.recorder.latency;
    if h.is_empty() {
        return None;
    }
    let half = Z * h.stdev() / (h.len() as f64).sqrt();
    let m = h.mean();
    Some(Estimate {
        value: m,
        low: m - half,
        high: m + half,
    })
}

/// What a compared figure is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Nanoseconds.
    Latency,
    /// Calls per second.
    Rate,
    /// A share of the calls.
    Share,
}

/// One row of the comparison.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// `p99`, `avg`, `rps`, `errors`.
    pub metric: String,
    /// What it measures.
    pub kind: Kind,
    /// The base run's figure.
    pub base: Estimate,
    /// The new run's figure.
    pub new: Estimate,
    /// The change: relative (`+0.12` is +12%) for latency and rate, in points of share for errors.
    pub change: f64,
    /// Whether the intervals do not overlap: a change beyond both runs' noise.
    pub beyond_noise: bool,
    /// Whether both runs' noise could be estimated (a rate needs runs of 4 seconds or more);
    /// when not, `beyond_noise` is true and a gate judges the change alone.
    pub noise_known: bool,
}

/// Compares two runs.
pub fn compare(base: &Run, new: &Run) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut push = |metric: &str, kind: Kind, b: Option<Estimate>, n: Option<Estimate>| {
        let (Some(b), Some(n)) = (b, n) else { return };
        let noise_known = kind != Kind::Rate || (b.low < b.high && n.low < n.high);
        let change = match kind {
            Kind::Share => n.value - b.value,
            _ if b.value == 0.0 => 0.0,
            _ => (n.value - b.value) / b.value,
        };
        rows.push(Row {
            metric: metric.to_owned(),
            kind,
            base: b,
            new: n,
            change,
            beyond_noise: n.low > b.high || n.high < b.low,
            noise_known,
        });
    };
    let quantiles = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];
    for (column, (name, q)) in quantiles.into_iter().enumerate() {
        push(
            name,
            Kind::Latency,
            quantile(base, q, column),
            quantile(new, q, column),
        );
    }
    push("avg", Kind::Latency, mean(base), mean(new));
    push("rps", Kind::Rate, Some(rate(base)), Some(rate(new)));
    push(
        "errors",
        Kind::Share,
        Some(error_share(base)),
        Some(error_share(new)),
    );
    rows
}

/// `--fail-if`: a change that fails the comparison when it is beyond the noise.
#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    /// As written.
    pub text: String,
    metric: String,
    greater: bool,
    limit: f64,
}

/// Parses `METRIC>+N%` or `METRIC<-N%` (`errors>+0.5%`: points of share).
pub fn parse_fail_if(text: &str) -> Result<FailIf, CompareError> {
    let bad = |why: &str| CompareError(format!("--fail-if {text:?}: {why}"));
    let at = text
        .find(['<', '>'])
        .ok_or_else(|| bad("expected METRIC>+N% or METRIC<-N% (p99>+10%, rps<-5%)"))?;
    let metric = text[..at].trim().to_ascii_lowercase();
    let known = ["p50", "p90", "p99", "p99.9", "avg", "rps", "errors"];
    if !known.contains(&metric.as_str()) {
        return Err(bad(&format!(
            "unknown metric {metric:?} (p50, p90, p99, p99.9, avg, rps, errors)"
        )));
    }
    let number = text[at + 1..].trim();
    let number = number
        .strip_suffix('%')
        .ok_or_else(|| bad("the change is a percentage: +10%, -5%"))?;
    let limit: f64 = number
        .parse()
        .map_err(|_| bad(&format!("{number:?} is not a number")))?;
    Ok(FailIf {
        text: text.trim().to_owned(),
        metric,
        greater: &text[at..=at] == ">",
        limit: limit / 100.0,
    })
}

impl FailIf {
    /// The row this gate reads, and whether it fails there.
    pub fn judge<'a>(&self, rows: &'a [Row]) -> Option<(&'a Row, bool)> {
        let row = rows.iter().find(|r| r.metric == self.metric)?;
        let crossed = if self.greater {
            row.change > self.limit
        } else {
            row.change < self.limit
        };
        Some((row, crossed && row.beyond_noise))
    }
}

fn shown(kind: Kind, v: f64) -> String {
    match kind {
        Kind::Latency => crate::report::ghzfmt::format_nano_unit(v.max(0.0) as u64),
        Kind::Rate => format!("{v:.1}"),
        Kind::Share => format!("{:.3} %", v * 100.0),
    }
}

fn change_text(r: &Row) -> String {
    match r.kind {
        Kind::Share => format!("{:+.3} pt", r.change * 100.0),
        _ => format!("{:+.1} %", r.change * 100.0),
    }
}

fn note(r: &Row) -> &'static str {
    match (r.noise_known, r.beyond_noise) {
        (false, _) => "noise unknown (runs under 4 s)",
        (true, true) => "beyond noise",
        (true, false) => "within noise",
    }
}

/// The comparison as a Markdown table (for a pull-request comment).
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from("| metric | base | new | change | |\n|---|---|---|---|---|\n");
    for r in rows {
        let note = note(r);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {note} |",
            r.metric,
            shown(r.kind, r.base.value),
            shown(r.kind, r.new.value),
            change_text(r)
        );
    }
    s
}

/// The comparison as aligned text.
pub fn text(rows: &[Row]) -> String {
    let mut cells = vec![
        ["metric", "base", "new", "change", ""]
            .map(String::from)
            .to_vec(),
    ];
    for r in rows {
        cells.push(vec![
            r.metric.clone(),
            shown(r.kind, r.base.value),
            shown(r.kind, r.new.value),
            change_text(r),
            note(r).to_owned(),
        ]);
    }
    // ghz's column layout, without the trailing padding.
    let mut s = String::new();
    for line in tabwrite(&cells).lines() {
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(latencies: impl Iterator<Item = u64>, seconds: f64) -> Run {
        let mut recorder = Recorder::new(false, 0, 0);
        for (i, v) in latencies.enumerate() {
            recorder.record(i as u64, 0, v, v, Ok(()));
        }
        let per = recorder.count / seconds as u64;
        Run {
            recorder,
            seconds,
            timeline: vec![per; seconds as usize],
            per_second: Vec::new(),
        }
    }

    #[test]
    fn a_shift_beyond_the_noise_is_flagged_and_the_same_distribution_is_not() {
        let spread = |base: u64| (0..20_000u64).map(move |i| base + (i * 7919) % 1_000_000);
        let a = run(spread(10_000_000), 10.0);
        let b = run(spread(10_000_000), 10.0);
        let c = run(spread(12_000_000), 10.0);
        let same = compare(&a, &b);
        assert!(same.iter().all(|r| !r.beyond_noise), "{same:?}");
        let slower = compare(&a, &c);
        let p99 = slower.iter().find(|r| r.metric == "p99").unwrap();
        assert!(p99.beyond_noise && p99.change > 0.15, "{p99:?}");
        let gate = parse_fail_if("p99>+10%").unwrap();
        assert!(gate.judge(&slower).unwrap().1);
        assert!(!gate.judge(&same).unwrap().1);
        assert!(!parse_fail_if("p99>+30%").unwrap().judge(&slower).unwrap().1);
    }

    #[test]
    fn bad_gates_say_what_is_wrong() {
        for (text, want) in [
            ("p99 10%", "expected METRIC>+N%"),
            ("latency>+1%", "unknown metric \"latency\""),
            ("p99>+10", "the change is a percentage"),
            ("rps<-x%", "\"-x\" is not a number"),
        ] {
            let e = parse_fail_if(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
