//! `--server-metrics URL`: the server's own account of the run, beside the client's. The
//! server's `/metrics` (gRFC A66's `grpc_server_call_duration_seconds`, as `volley serve
//! --metrics`, grpc-go's and grpc-java's OpenTelemetry plugins expose it) is scraped before and
//! after the run; the difference is the run's calls as the server timed them. The gap between
//! the two latencies is the network, the client and the queues in between.

use std::collections::BTreeMap;

use bytes::Bytes;
use http_body_util::Full;
use serde::Serialize;
use volley_client::{Endpoint, Target, load::http1::Http1Connection};

use super::quantile::Quantile;

/// The histogram read, in seconds.
const DURATION: &str = "grpc_server_call_duration_seconds";

/// The percentiles estimated from the server's buckets.
const PERCENTILES: [f64; 5] = [50.0, 75.0, 90.0, 95.0, 99.0];

/// The server's figures for the run.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerFigures {
    /// Where they were scraped.
    pub url: String,
    /// The `grpc_method` label read.
    pub method: String,
    /// Calls the server finished during the run.
    pub count: u64,
    /// Their mean duration, ns.
    pub average: u64,
    /// Calls per `grpc_status`.
    pub statuses: BTreeMap<String, u64>,
    /// Percentiles, ns, estimated from the histogram's buckets as Prometheus'
    /// `histogram_quantile` does (linear within a bucket): as fine as A66's boundaries.
    pub latency_distribution: Vec<Quantile>,
}

/// One histogram of one status: cumulative bucket counts by upper bound, sum and count.
#[derive(Clone, Debug, Default, PartialEq)]
struct Series {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

/// What one scrape says of a method: a series per status.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Snapshot(BTreeMap<String, Series>);

/// The `grpc_method` label of a `--call` (`pkg.Service.Method` or `pkg.Service/Method`).
pub(crate) fn method_label(call: &str) -> String {
    if call.contains('/') {
        return call.trim_start_matches('/').to_owned();
    }
    match call.rsplit_once('.') {
        Some((svc, m)) => format!("{svc}/{m}"),
        None => call.to_owned(),
    }
}

/// Reads `method`'s duration histograms from an exposition (OpenMetrics or Prometheus text).
pub(crate) fn snapshot(text: &str, method: &str) -> Result<Snapshot, String> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines)
        .map_err(|e| format!("the metrics do not parse: {e}"))?;
    let mut snap = Snapshot::default();
    for s in scrape.samples {
        if s.labels.get("grpc_method") != Some(method) {
            continue;
        }
        let status = s.labels.get("grpc_status").unwrap_or("").to_owned();
        let series = snap.0.entry(status).or_default();
        match (s.metric.as_str(), s.value) {
            (m, prometheus_parse::Value::Histogram(h)) if m == DURATION => {
                series.buckets = h.iter().map(|b| (b.less_than, b.count)).collect();
                series
                    .buckets
                    .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
            }
            (m, v) if m == format!("{DURATION}_sum") => series.sum = scalar(&v),
            (m, v) if m == format!("{DURATION}_count") => series.count = scalar(&v),
            _ => {}
        }
    }
    snap.0.retain(|_, s| !s.buckets.is_empty() || s.count > 0.0);
    Ok(snap)
}

fn scalar(v: &prometheus_parse::Value) -> f64 {
    match v {
        prometheus_parse::Value::Counter(x)
        | prometheus_parse::Value::Gauge(x)
        | prometheus_parse::Value::Untyped(x) => *x,
        _ => 0.0,
    }
}

/// The run's figures: `after` minus `before`.
pub(crate) fn figures(
    url: &str,
    method: &str,
    before: &Snapshot,
    after: &Snapshot,
) -> ServerFigures {
    let mut statuses = BTreeMap::new();
    let mut merged: Vec<(f64, f64)> = Vec::new();
    let (mut sum, mut count) = (0.0, 0.0);
    for (status, a) in &after.0 {
        let b = before.0.get(status).cloned().unwrap_or_default();
        let n = (a.count - b.count).max(0.0);
        if n == 0.0 {
            continue;
        }
        statuses.insert(status.clone(), n as u64);
        sum += a.sum - b.sum;
        count += n;
        for (i, (le, c)) in a.buckets.iter().enumerate() {
            let was = b
                .buckets
                .iter()
                .find(|(l, _)| l == le)
                .map_or(0.0, |(_, c)| *c);
            match merged.get_mut(i) {
                Some(m) if m.0 == *le => m.1 += c - was,
                _ => merged.push((*le, c - was)),
            }
        }
    }
    let latency_distribution = if count > 0.0 {
        PERCENTILES
            .iter()
            .map(|p| Quantile {
                percentage: *p,
                latency: (histogram_quantile(p / 100.0, &merged) * 1e9) as u64,
            })
            .collect()
    } else {
        Vec::new()
    };
    ServerFigures {
        url: url.to_owned(),
        method: method.to_owned(),
        count: count as u64,
        average: if count > 0.0 {
            (sum / count * 1e9) as u64
        } else {
            0
        },
        statuses,
        latency_distribution,
    }
}

/// Prometheus' `histogram_quantile`: the bucket holding rank `q * count`, linearly
/// interpolated between its bounds (the lowest bucket from 0; the `+Inf` bucket answers with
/// the highest finite bound).
fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let Some(&(_, total)) = buckets.last() else {
        return 0.0;
    };
    let rank = q * total;
    let mut prev = (0.0, 0.0);
    for &(le, c) in buckets {
        if c >= rank {
            if le.is_infinite() {
                return prev.0;
            }
            if c == prev.1 {
                return le;
            }
            return prev.0 + (le - prev.0) * (rank - prev.1) / (c - prev.1);
        }
        prev = (le, c);
    }
    prev.0
}

/// Fetches an exposition with `GET url` (plain HTTP).
pub(crate) async fn fetch(url: &str) -> Result<String, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("--server-metrics {url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "--server-metrics {url:?}: only http:// URLs are scraped"
        ));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("--server-metrics {url:?} has no host"))?
        .to_string();
    let target = Target::parse(&authority).map_err(|e| format!("--server-metrics {url:?}: {e}"))?;
    let ep = Endpoint::new(target).map_err(|e| format!("--server-metrics {url:?}: {e}"))?;
    let conn = Http1Connection::connect(&ep)
        .await
        .map_err(|e| format!("--server-metrics: cannot reach {authority}: {e}"))?;
    let req = http::Request::get(uri.clone())
        .header(http::header::HOST, authority)
        .body(Full::new(Bytes::new()))
        .map_err(|e| format!("--server-metrics {url:?}: {e}"))?;
    let (status, body) = conn
        .fetch(req)
        .await
        .map_err(|e| format!("--server-metrics: GET {url} failed: {e}"))?;
    if status != 200 {
        return Err(format!(
            "--server-metrics: GET {url} answered HTTP {status} (is the server started with --metrics?)"
        ));
    }
    String::from_utf8(body.to_vec()).map_err(|_| format!("--server-metrics: {url} is not text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# TYPE grpc_server_call_duration_seconds histogram
grpc_server_call_duration_seconds_bucket{le="0.001",grpc_method="api.Users/Get",grpc_status="OK"} 10
grpc_server_call_duration_seconds_bucket{le="0.002",grpc_method="api.Users/Get",grpc_status="OK"} 10
grpc_server_call_duration_seconds_bucket{le="+Inf",grpc_method="api.Users/Get",grpc_status="OK"} 10
grpc_server_call_duration_seconds_sum{grpc_method="api.Users/Get",grpc_status="OK"} 0.005
grpc_server_call_duration_seconds_count{grpc_method="api.Users/Get",grpc_status="OK"} 10
# EOF
"#;

    const AFTER: &str = r#"# TYPE grpc_server_call_duration_seconds histogram
grpc_server_call_duration_seconds_bucket{le="0.001",grpc_method="api.Users/Get",grpc_status="OK"} 60
grpc_server_call_duration_seconds_bucket{le="0.002",grpc_method="api.Users/Get",grpc_status="OK"} 110
grpc_server_call_duration_seconds_bucket{le="+Inf",grpc_method="api.Users/Get",grpc_status="OK"} 110
grpc_server_call_duration_seconds_sum{grpc_method="api.Users/Get",grpc_status="OK"} 0.155
grpc_server_call_duration_seconds_count{grpc_method="api.Users/Get",grpc_status="OK"} 110
grpc_server_call_duration_seconds_bucket{le="0.001",grpc_method="other",grpc_status="UNIMPLEMENTED"} 4
grpc_server_call_duration_seconds_bucket{le="+Inf",grpc_method="other",grpc_status="UNIMPLEMENTED"} 4
grpc_server_call_duration_seconds_count{grpc_method="other",grpc_status="UNIMPLEMENTED"} 4
# EOF
"#;

    #[test]
    fn the_run_is_after_minus_before() {
        let m = method_label("api.Users.Get");
        assert_eq!(m, "api.Users/Get");
        let f = figures(
            "u",
            &m,
            &snapshot(BEFORE, &m).unwrap(),
            &snapshot(AFTER, &m).unwrap(),
        );
        assert_eq!(f.count, 100);
        assert_eq!(f.statuses["OK"], 100);
        assert_eq!(f.average, 1_500_000);
        // 50 calls under 1 ms, 50 between 1 and 2 ms: the median is the 1 ms bound, p90 is
        // 80% of the way through the second bucket.
        assert_eq!(f.latency_distribution[0].latency, 1_000_000);
        assert_eq!(f.latency_distribution[2].latency, 1_800_000);
    }

    #[test]
    fn a_server_without_the_method_counts_nothing() {
        let f = figures(
            "u",
            "x.Y/Z",
            &Snapshot::default(),
            &snapshot(AFTER, "x.Y/Z").unwrap(),
        );
        assert_eq!(f.count, 0);
        assert!(f.latency_distribution.is_empty());
    }
}
