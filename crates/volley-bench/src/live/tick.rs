//! A tick: one interval of a run merged over its threads, as the live views read it (the rate
//! achieved and asked, latency and service-time quantiles, statuses by name, in flight, lag,
//! CPU, per method under a mix) and `--live` writes it, one JSON line each.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use hdrhistogram::{
    Histogram,
    serialization::{Serializer, V2DeflateSerializer},
};
use serde::Serialize;
use volley_wire::{ALL_CODES, Code};

use super::interval::{Interval, MethodInterval};
use crate::recorder::Ordered;

/// Latency quantiles of an interval, ns (0 when it had no OK call).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Quantiles {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: u64,
}

impl Quantiles {
    fn of(h: &Histogram<u64>) -> Quantiles {
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Quantiles {
            p50: q(0.5),
            p99: q(0.99),
            p999: q(0.999),
        }
    }
}

/// One method's line of a tick.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodTick {
    /// The entry's name.
    pub call: String,
    /// Calls finished in the interval.
    pub calls: u64,
    /// Failed ones.
    pub errors: u64,
    /// Calls per status name (grpc-go's names), non-zero only.
    pub statuses: Ordered,
    /// Latency of its OK calls.
    pub latency: Quantiles,
    /// Its calls' latencies, for sinks that keep histograms (not serialized).
    #[serde(skip)]
    pub histogram: Histogram<u64>,
}

/// One interval of a run, merged over its threads.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tick {
    /// Seconds from the start to the interval's end.
    pub elapsed: f64,
    /// The interval's length in seconds.
    pub interval: f64,
    /// Whether this is the last tick (the run has ended).
    pub last: bool,
    /// Calls finished in the interval.
    pub calls: u64,
    /// Calls finished per second.
    pub rate: f64,
    /// The rate the schedule asked for at the interval's end (`null` when unpaced).
    pub intended_rate: Option<f64>,
    /// Calls started and not finished at the interval's end.
    pub in_flight: u64,
    /// The latest any send of the interval was behind its intended time, ms.
    pub lag_ms: f64,
    /// The generator's CPU in the interval, in cores (1.0: one core busy).
    pub cpu: f64,
    /// Failed calls.
    pub errors: u64,
    /// Calls per status name, non-zero only.
    pub statuses: Ordered,
    /// Latency from the intended send time (what the report's percentiles are).
    pub latency: Quantiles,
    /// Service time, from the actual send.
    pub service: Quantiles,
    /// Per entry of a mix (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodTick>,
    /// The interval's latency histogram, HdrHistogram V2 deflate in base64 (`--live-histograms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// The interval's latencies, for sinks that keep histograms (not serialized).
    #[serde(skip)]
    pub latency_histogram: Histogram<u64>,
}

fn statuses(s: &[u64; 17]) -> Ordered {
    Ordered(
        ALL_CODES
            .iter()
            .zip(s)
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| (c.go_name().to_owned(), *n))
            .collect(),
    )
}

/// How the run stood at a tick, beside the calls of its interval.
pub(super) struct State<'a> {
    /// Seconds since the start.
    pub(super) elapsed: f64,
    /// Seconds since the last tick.
    pub(super) interval: f64,
    /// The run has ended.
    pub(super) last: bool,
    /// The schedule's rate now, if paced.
    pub(super) intended_rate: Option<f64>,
    /// Calls started and not finished.
    pub(super) in_flight: u64,
    /// Worst lateness of a send in the interval.
    pub(super) lag: Duration,
    /// Generator CPU time in the interval.
    pub(super) cpu: Duration,
    /// Names of the mix's entries.
    pub(super) names: &'a [String],
    /// Carry the histogram.
    pub(super) histograms: bool,
}

impl Tick {
    /// The tick of an interval's merged calls.
    pub(super) fn new(i: &Interval, s: &State<'_>) -> Tick {
        let per = s.interval.max(1e-9);
        let errors = |m: &MethodInterval| m.calls - m.statuses[Code::Ok as usize];
        Tick {
            elapsed: s.elapsed,
            interval: s.interval,
            last: s.last,
            calls: i.all.calls,
            rate: i.all.calls as f64 / per,
            intended_rate: s.intended_rate,
            in_flight: s.in_flight,
            lag_ms: s.lag.as_secs_f64() * 1e3,
            cpu: s.cpu.as_secs_f64() / per,
            errors: errors(&i.all),
            statuses: statuses(&i.all.statuses),
            latency: Quantiles::of(&i.all.latency),
            service: Quantiles::of(&i.service),
            methods: i
                .methods
                .iter()
                .zip(s.names)
                .map(|(m, name)| MethodTick {
                    call: name.clone(),
                    calls: m.calls,
                    errors: errors(m),
                    statuses: statuses(&m.statuses),
                    latency: Quantiles::of(&m.latency),
                    histogram: m.latency.clone(),
                })
                .collect(),
            histogram: s.histograms.then(|| encode(&i.all.latency)),
            latency_histogram: i.all.latency.clone(),
        }
    }
}

fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_empty_the_threads_ones() {
        let mut a = Interval::new(2);
        let mut b = Interval::new(2);
        a.record(Some(0), Code::Ok, 1_000_000, 900_000);
        a.record(Some(1), Code::Unavailable, 5_000_000, 5_000_000);
        b.record(Some(0), Code::Ok, 3_000_000, 3_000_000);
        let mut merged = Interval::new(2);
        merged.take_from(&mut a);
        merged.take_from(&mut b);
        assert_eq!(a.all.calls + b.all.calls, 0);
        let names = ["get".to_owned(), "list".to_owned()];
        let t = Tick::new(
            &merged,
            &State {
                elapsed: 2.0,
                interval: 0.5,
                last: false,
                intended_rate: Some(10.0),
                in_flight: 4,
                lag: Duration::from_millis(3),
                cpu: Duration::from_millis(250),
                names: &names,
                histograms: true,
            },
        );
        assert_eq!((t.calls, t.errors, t.rate), (3, 1, 6.0));
        assert_eq!(t.cpu, 0.5);
        assert_eq!(
            t.statuses.0,
            [("OK".to_owned(), 2), ("Unavailable".to_owned(), 1)]
        );
        assert_eq!(t.methods[0].calls, 2);
        assert_eq!(t.methods[1].errors, 1);
        assert!(t.latency.p99 >= 2_990_000 && t.latency.p99 <= 3_010_000);
        let line = serde_json::to_value(&t).unwrap();
        assert_eq!(line["statuses"]["OK"], 2);
        assert!(line["histogram"].as_str().is_some_and(|h| !h.is_empty()));
        assert_eq!(line["latency"]["p99.9"], t.latency.p999);
    }
}
