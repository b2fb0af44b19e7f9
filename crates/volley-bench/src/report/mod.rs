//! The report: ghz's figures (and JSON layout) computed from the merged recorder, plus volley's
//! additions (more percentiles, service time beside corrected latency, streaming figures, and the
//! generator's self-check). The thresholds' verdicts are carried here (`verdicts`) but made by
//! `gate`, which the caller runs on a finished report.

use hdrhistogram::Histogram;
use serde::Serialize;

pub mod format;
pub mod ghzfmt;
mod options;
mod quantile;
pub mod server;
pub mod verdicts;

pub use options::ReportOptions;
pub use quantile::Quantile;

use crate::{
    engine::Outcome,
    recorder::{Ordered, Recorder},
};
use volley_proto::gofmt::{rfc3339, rfc3339_nano};

/// ghz's fixed percentiles.
pub const PERCENTILES: [u32; 7] = [10, 25, 50, 75, 90, 95, 99];

/// One point of the latency distribution.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencyPoint {
    /// Percent (ghz: an integer).
    pub percentage: u32,
    /// Nanoseconds.
    pub latency: u64,
}

/// One histogram bucket.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Bucket {
    /// Upper mark in seconds.
    pub mark: f64,
    /// Calls at or below the mark and above the previous one.
    pub count: u64,
    /// count / calls.
    pub frequency: f64,
}

/// One call in the JSON details.
#[derive(Clone, Debug, Serialize)]
pub struct DetailRow {
    /// RFC 3339 with nanoseconds.
    pub timestamp: String,
    /// Nanoseconds.
    pub latency: u64,
    /// Error text, empty for OK.
    pub error: String,
    /// Status name as grpc-go prints it.
    pub status: String,
    /// The timestamp as nanoseconds since the Unix epoch.
    #[serde(skip)]
    pub timestamp_unix_nano: i64,
}

/// volley's additions to the report (in JSON under `volley`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extras {
    /// p99.9 and p99.99 of the same population as `latencyDistribution`.
    pub latency_tail: Vec<Quantile>,
    /// Service time (from the actual send) at ghz's percentiles and the tail; equal to the
    /// latency distribution unless a rate was set and sends were late.
    pub service_time_distribution: Vec<Quantile>,
    /// True when a fixed rate was asked and the generator fell behind it.
    pub rate_not_kept: bool,
    /// True when the generator's threads were busy most of the run.
    pub generator_saturated: bool,
    /// True when, at the end, sends were still late: the generator never caught up with the
    /// rate asked (`rate_not_kept` alone may be a stall it recovered from).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rate_unreachable: bool,
    /// Streaming figures, when the method streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<StreamingFigures>,
    /// Bytes received (message frames for gRPC; headers and body for HTTP).
    pub bytes_received: u64,
    /// Calls finished in each second of the run.
    pub timeline: Vec<u64>,
    /// The server's own figures (`--server-metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<server::ServerFigures>,
    /// The `--abort-on` condition that stopped the run, with what was seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    /// What merging this run with others needs (`volley report merge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<crate::results::Results>,
    /// The thresholds' verdicts (`--threshold`), when there are thresholds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<verdicts::Verdicts>,
    /// Which HTTP/2 client a gRPC method's calls took: `fast` (volley's own, for unary calls),
    /// or `h2 (why)` when something the run needs is the h2 crate's alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_path: Option<String>,
    /// The same per thread (wrk's Req/Sec samples); not serialized.
    #[serde(skip)]
    pub thread_timelines: Vec<Vec<u64>>,
}

/// Per-message figures of streaming calls.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamingFigures {
    /// Messages sent.
    pub messages_sent: u64,
    /// Messages received.
    pub messages_received: u64,
    /// Messages sent per second.
    pub sent_per_second: f64,
    /// Messages received per second.
    pub received_per_second: f64,
    /// Time from the start of a call to its first reply message.
    pub time_to_first_message: Vec<Quantile>,
    /// Per-message round trip (bidi, replies matched to requests in order).
    pub message_latency: Vec<Quantile>,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// RFC 3339 date of the report.
    pub date: String,
    /// The same date in nanoseconds since the Unix epoch.
    #[serde(skip)]
    pub date_unix_nano: i64,
    /// `--name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// normal, cancel or timeout.
    #[serde(rename = "endReason")]
    pub end_reason: String,
    /// The options of the run.
    pub options: ReportOptions,
    /// Calls counted.
    pub count: u64,
    /// Wall time, ns.
    pub total: u64,
    /// Mean latency of all calls, ns.
    pub average: u64,
    /// Fastest counted call, ns.
    pub fastest: u64,
    /// Slowest counted call, ns.
    pub slowest: u64,
    /// Calls per second.
    pub rps: f64,
    /// Calls per error text.
    #[serde(rename = "errorDistribution")]
    pub error_distribution: Ordered,
    /// Calls per status name.
    #[serde(rename = "statusCodeDistribution")]
    pub status_code_distribution: Ordered,
    /// ghz's percentiles.
    #[serde(rename = "latencyDistribution")]
    pub latency_distribution: Option<Vec<LatencyPoint>>,
    /// ghz's 11 linear buckets.
    pub histogram: Option<Vec<Bucket>>,
    /// Per-call rows (formats that list calls).
    pub details: Option<Vec<DetailRow>>,
    /// `--tags`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<serde_json::Value>,
    /// volley's additions.
    pub volley: Extras,
    /// A mix's entries, each as a report of its own calls (none when one method was called).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodReport>,
    /// Merged HDR histogram (for charts); not serialized.
    #[serde(skip)]
    pub latency_histogram: Option<Histogram<u64>>,
    /// The other merged histograms (for thresholds); not serialized.
    #[serde(skip)]
    pub histograms: Histograms,
}

/// The report of one entry of a mix: its name and weight, then ghz's figures of its calls.
#[derive(Clone, Debug, Serialize)]
pub struct MethodReport {
    /// The entry's name (`api.Users.Get`).
    pub call: String,
    /// Its weight in the mix.
    pub weight: u64,
    /// Its calls' figures (its mergeable results are in the run's `volley.results.methods`).
    #[serde(flatten)]
    pub report: Report,
}

/// The run's merged histograms beside latency, in nanoseconds; `None` when nothing was recorded.
#[derive(Clone, Debug, Default)]
pub struct Histograms {
    /// Service time (from the actual send).
    pub service: Option<Histogram<u64>>,
    /// Time to a stream's first reply message.
    pub first_message: Option<Histogram<u64>>,
    /// Per-message round trip of bidi streams.
    pub message: Option<Histogram<u64>>,
}

fn quantiles(h: &Histogram<u64>, min: u64, max: u64, ps: &[f64]) -> Vec<Quantile> {
    if h.is_empty() {
        return Vec::new();
    }
    ps.iter()
        .map(|p| Quantile {
            percentage: *p,
            latency: h.value_at_quantile(p / 100.0).clamp(min, max),
        })
        .collect()
}

/// ghz's 11 buckets: marks from fastest to slowest in 10 equal steps; each value counts in the
/// first bucket whose mark is at or above it.
pub fn buckets(h: &Histogram<u64>, min: u64, max: u64) -> Vec<Bucket> {
    let (lo, hi) = (min as f64, max as f64);
    let step = (hi - lo) / 10.0;
    let mut marks: Vec<f64> = (0..10).map(|i| lo + step * i as f64).collect();
    marks.push(hi);
    let mut counts = [0u64; 11];
    for v in h.iter_recorded() {
        let at = v.value_iterated_to();
        // The bins holding the exact extremes stand for them; others for their midpoint.
        let value = if h.equivalent(at, min) {
            lo
        } else if h.equivalent(at, max) {
            hi
        } else {
            (h.median_equivalent(at) as f64).clamp(lo, hi)
        };
        let i = marks.iter().position(|m| value <= *m).unwrap_or(10);
        counts[i] += v.count_at_value();
    }
    let n = h.len().max(1) as f64;
    marks
        .iter()
        .zip(counts)
        .map(|(m, c)| Bucket {
            mark: m / 1e9,
            count: c,
            frequency: c as f64 / n,
        })
        .collect()
}

impl Report {
    /// Builds the report of a finished run.
    pub fn new(out: Outcome, options: ReportOptions, tags: Option<serde_json::Value>) -> Report {
        Report::build(out, options, tags, true)
    }

    /// The report; `with_results` adds the mergeable results (a mix entry's are in the run's).
    fn build(
        out: Outcome,
        options: ReportOptions,
        tags: Option<serde_json::Value>,
        with_results: bool,
    ) -> Report {
        let r: &Recorder = &out.recorder;
        let total_ns = out.total.as_nanos() as u64;
        let secs = out.total.as_secs_f64().max(1e-9);
        let has = !r.latency.is_empty();
        let (min, max) = if has { (r.min, r.max) } else { (0, 0) };
        let latency_distribution = has.then(|| {
            PERCENTILES
                .iter()
                .map(|p| LatencyPoint {
                    percentage: *p,
                    latency: r
                        .latency
                        .value_at_quantile(f64::from(*p) / 100.0)
                        .clamp(min, max),
                })
                .collect()
        });
        let mut errors: Vec<(String, u64)> =
            r.errors.iter().map(|(k, v)| (k.clone(), *v)).collect();
        errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let statuses = r
            .status_counts()
            .into_iter()
            .map(|(c, n)| (c.go_name().to_owned(), n))
            .collect();
        let details = (!r.details.is_empty()).then(|| {
            r.details
                .iter()
                .map(|d| DetailRow {
                    timestamp: rfc3339_nano(d.timestamp_unix_nano),
                    latency: d.latency_ns,
                    error: d.error.clone(),
                    status: d.code.go_name().to_owned(),
                    timestamp_unix_nano: d.timestamp_unix_nano,
                })
                .collect()
        });
        let all_ps = [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];
        let streaming = (r.messages_sent + r.messages_received > r.count * 2
            || !r.first_message.is_empty())
        .then(|| StreamingFigures {
            messages_sent: r.messages_sent,
            messages_received: r.messages_received,
            sent_per_second: r.messages_sent as f64 / secs,
            received_per_second: r.messages_received as f64 / secs,
            time_to_first_message: quantiles(&r.first_message, 0, u64::MAX, &all_ps),
            message_latency: quantiles(&r.message_latency, 0, u64::MAX, &all_ps),
        });
        let methods = out
            .methods
            .iter()
            .map(|m| {
                let mut options = options.clone();
                options.call = m.name.clone();
                let report = Report::build(out.of_method(m), options, None, false);
                MethodReport {
                    call: m.name.clone(),
                    weight: m.weight,
                    report,
                }
            })
            .collect();
        let now = crate::callee::payload::now_unix_nanos();
        let results = with_results.then(|| {
            let hash =
                crate::results::plan_hash(&serde_json::to_value(&options).unwrap_or_default());
            crate::results::Results::of(&out, hash, None)
        });
        Report {
            date: rfc3339(now),
            date_unix_nano: now,
            name: options.name.clone(),
            end_reason: out.end_reason.as_str().to_owned(),
            options,
            count: r.count,
            total: total_ns,
            average: if r.count > 0 {
                (r.sum_ns / u128::from(r.count)) as u64
            } else {
                0
            },
            fastest: min,
            slowest: max,
            rps: r.count as f64 / secs,
            error_distribution: Ordered(errors),
            status_code_distribution: Ordered(statuses),
            histogram: has.then(|| buckets(&r.latency, min, max)),
            latency_distribution,
            details,
            tags,
            volley: Extras {
                latency_tail: quantiles(&r.latency, min, max, &[99.9, 99.99]),
                service_time_distribution: quantiles(&r.service, 0, u64::MAX, &all_ps),
                rate_not_kept: out.rate_not_kept,
                generator_saturated: out.generator_saturated,
                rate_unreachable: out.rate_unreachable,
                streaming,
                bytes_received: r.bytes,
                timeline: r.timeline(),
                thread_timelines: r.timelines.clone(),
                server_metrics: None,
                aborted: out.aborted.clone(),
                client_path: out.client_path.clone(),
                results,
                verdicts: None,
            },
            methods,
            latency_histogram: has.then(|| r.latency.clone()),
            histograms: Histograms {
                service: (!r.service.is_empty()).then(|| r.service.clone()),
                first_message: (!r.first_message.is_empty()).then(|| r.first_message.clone()),
                message: (!r.message_latency.is_empty()).then(|| r.message_latency.clone()),
            },
        }
    }

    /// Total errors.
    pub fn error_count(&self) -> u64 {
        self.error_distribution.0.iter().map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_ghz_rules() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in [1_000_000u64, 2_500_000, 2_500_000, 11_000_000] {
            h.record(v).unwrap();
        }
        let b = buckets(&h, 1_000_000, 11_000_000);
        assert_eq!(b.len(), 11);
        assert_eq!(b[0].mark, 0.001);
        assert_eq!(b[10].mark, 0.011);
        assert_eq!(b[0].count, 1);
        assert_eq!(b[2].count, 2);
        assert_eq!(b[10].count, 1);
        assert_eq!(b.iter().map(|x| x.count).sum::<u64>(), 4);
    }
}
