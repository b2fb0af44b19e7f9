//! Per-thread result recording: HDR histograms (so memory does not grow with `-n`), exact
//! min/max, status counts in an array, error strings formatted only for failures, and optional
//! per-call details. Each runtime thread owns one; they are merged once at the end. Counts by
//! name print in a fixed order ([`Ordered`]), in the report and in the live ticks alike.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use serde::{Serialize, Serializer, ser::SerializeMap};
use volley_wire::{ALL_CODES, Code, Status};

/// Latencies are recorded in nanoseconds from 1 ns to one hour at 3 significant digits.
const HIGHEST: u64 = 3_600_000_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST, 3).expect("valid bounds")
}

/// The quantiles kept for each whole second of a run, for `volley report compare`'s noise.
pub const SECOND_QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// Seconds with fewer calls than this are left out of the per-second figures: their
/// quantiles say little.
const SECOND_MIN_CALLS: u64 = 20;

/// A map serialized in the order given (ghz's maps print in random order; ours are fixed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered(pub Vec<(String, u64)>);

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One call's record, kept when the report format lists calls.
#[derive(Clone, Debug)]
pub struct Detail {
    /// Call start, nanoseconds since the Unix epoch.
    pub timestamp_unix_nano: i64,
    /// Latency in nanoseconds.
    pub latency_ns: u64,
    /// Status code.
    pub code: Code,
    /// Error text (empty for OK).
    pub error: String,
}

/// Results of one thread (or, merged, of the run).
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Latencies (from the intended send time under a rate) of the calls that count in
    /// fastest/slowest/percentiles: OK calls, or all with `--count-errors`.
    pub latency: Histogram<u64>,
    /// Service time (from the actual send) of the same calls; differs from `latency` only when a
    /// rate is set and the generator fell behind its schedule.
    pub service: Histogram<u64>,
    /// Exact smallest latency recorded in `latency`.
    pub min: u64,
    /// Exact largest latency recorded in `latency`.
    pub max: u64,
    /// Calls counted (after `--skipFirst`).
    pub count: u64,
    /// Sum of all latencies, errors included (ghz's average).
    pub sum_ns: u128,
    /// Calls per status code.
    pub statuses: [u64; 17],
    /// Calls per error text.
    pub errors: HashMap<String, u64>,
    /// Per-call details, when kept.
    pub details: Vec<Detail>,
    details_cap: usize,
    count_errors: bool,
    skip_first: u64,
    /// Streaming: messages sent.
    pub messages_sent: u64,
    /// Streaming: messages received.
    pub messages_received: u64,
    /// Streaming: time to first received message.
    pub first_message: Histogram<u64>,
    /// Per-message round trip on streams where replies match requests in order.
    pub message_latency: Histogram<u64>,
    /// A figure a custom target records itself, per call or per message (`volley orders`: the
    /// time from the client's send to the server's stamp).
    pub probe: Histogram<u64>,
    /// Bytes received.
    pub bytes: u64,
    /// Calls finished in each second of the run, one row per thread (wrk's Req/Sec samples).
    pub timelines: Vec<Vec<u64>>,
    /// The latencies of the current second (two significant digits: reset every second).
    second: Histogram<u64>,
    /// Which second `second` holds.
    second_at: u64,
    /// Latency at [`SECOND_QUANTILES`] in each whole second with enough calls (per thread).
    pub per_second: Vec<[u64; 4]>,
}

impl Recorder {
    /// A recorder; `details_cap` 0 keeps no details.
    pub fn new(count_errors: bool, skip_first: u64, details_cap: usize) -> Recorder {
        Recorder {
            latency: histogram(),
            service: histogram(),
            min: u64::MAX,
            max: 0,
            count: 0,
            sum_ns: 0,
            statuses: [0; 17],
            errors: HashMap::new(),
            details: Vec::new(),
            details_cap,
            count_errors,
            skip_first,
            messages_sent: 0,
            messages_received: 0,
            first_message: histogram(),
            message_latency: histogram(),
            probe: histogram(),
            bytes: 0,
            timelines: vec![Vec::new()],
            second: Histogram::new_with_bounds(1, HIGHEST, 2).expect("valid bounds"),
            second_at: 0,
            per_second: Vec::new(),
        }
    }

    /// Notes a finished call in second `second` of the run, with the bytes it received.
    pub fn note_done(&mut self, second: u64, bytes: usize) {
        if second != self.second_at {
            // The last second is whole: keep its quantiles, and start the next.
            if self.second.len() >= SECOND_MIN_CALLS {
                let h = &self.second;
                self.per_second
                    .push(SECOND_QUANTILES.map(|q| h.value_at_quantile(q)));
            }
            self.second.reset();
            self.second_at = second;
        }
        self.bytes += bytes as u64;
        let row = &mut self.timelines[0];
        let s = second as usize;
        if row.len() <= s {
            row.resize(s + 1, 0);
        }
        row[s] += 1;
    }

    /// Calls finished per second of the run, all threads together.
    pub fn timeline(&self) -> Vec<u64> {
        let len = self.timelines.iter().map(Vec::len).max().unwrap_or(0);
        (0..len)
            .map(|i| self.timelines.iter().filter_map(|t| t.get(i)).sum())
            .collect()
    }

    /// Records call number `i`: `latency_ns` from the intended send time, `service_ns` from the
    /// actual one.
    pub fn record(
        &mut self,
        i: u64,
        start_unix_nano: i64,
        latency_ns: u64,
        service_ns: u64,
        result: Result<(), &Status>,
    ) {
        if i < self.skip_first {
            return;
        }
        self.count += 1;
        self.sum_ns += u128::from(latency_ns);
        let code = match result {
            Ok(()) => Code::Ok,
            Err(s) => s.code(),
        };
        self.statuses[code as usize] += 1;
        if code == Code::Ok || self.count_errors {
            let v = latency_ns.max(1);
            self.latency.saturating_record(v);
            self.service.saturating_record(service_ns.max(1));
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            self.second.saturating_record(v);
        }
        let error = match result {
            Ok(()) => String::new(),
            Err(s) => {
                let text = s.to_string();
                *self.errors.entry(text.clone()).or_insert(0) += 1;
                text
            }
        };
        if self.details.len() < self.details_cap {
            self.details.push(Detail {
                timestamp_unix_nano: start_unix_nano,
                latency_ns,
                code,
                error,
            });
        }
    }

    /// Adds another thread's results.
    pub fn merge(&mut self, other: Recorder) {
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.first_message.add(&other.first_message);
        let _ = self.message_latency.add(&other.message_latency);
        let _ = self.probe.add(&other.probe);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        for (a, b) in self.statuses.iter_mut().zip(other.statuses) {
            *a += b;
        }
        for (k, v) in other.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        let room = self.details_cap.saturating_sub(self.details.len());
        self.details.extend(other.details.into_iter().take(room));
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.bytes += other.bytes;
        self.timelines.extend(other.timelines);
        self.per_second.extend(other.per_second);
    }

    /// Status counts, in code order, non-zero only.
    pub fn status_counts(&self) -> Vec<(Code, u64)> {
        ALL_CODES
            .iter()
            .zip(self.statuses)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (*c, n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_merges() {
        let mut a = Recorder::new(false, 0, 10);
        let mut b = Recorder::new(false, 0, 10);
        a.record(0, 1, 1_000, 900, Ok(()));
        a.record(1, 2, 5_000, 5_000, Err(&Status::unavailable("down")));
        b.record(2, 3, 3_000, 3_000, Ok(()));
        a.merge(b);
        assert_eq!(a.count, 3);
        assert_eq!(a.sum_ns, 9_000);
        assert_eq!((a.min, a.max), (1_000, 3_000));
        assert_eq!(a.latency.len(), 2);
        assert_eq!(
            a.status_counts(),
            vec![(Code::Ok, 2), (Code::Unavailable, 1)]
        );
        assert_eq!(a.errors["rpc error: code = Unavailable desc = down"], 1);
        assert_eq!(a.details.len(), 3);
    }

    #[test]
    fn skip_first_and_count_errors() {
        let mut r = Recorder::new(true, 1, 0);
        r.record(0, 0, 10, 10, Ok(()));
        r.record(1, 0, 20, 20, Err(&Status::internal("x")));
        assert_eq!(r.count, 1);
        assert_eq!(r.latency.len(), 1);
        assert_eq!(r.max, 20);
        assert!(r.details.is_empty());
    }
}
