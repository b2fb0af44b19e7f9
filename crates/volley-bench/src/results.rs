//! A run's results as data, in `-O json` under `volley.results`: what merging runs exactly
//! needs (the shards of one plan, run on many hosts). HDR histograms in HdrHistogram's standard
//! V2 deflate encoding (base64), which any HdrHistogram library reads; exact count, sum, min,
//! max, statuses and errors; wall-clock start and end; the plan's hash and the shard. Percentiles
//! cannot be merged; these can, and merging them gives what one process fed every call gives.

use std::collections::BTreeMap;

use base64::{Engine, engine::general_purpose::STANDARD};
use hdrhistogram::{
    Histogram,
    serialization::{Deserializer, Serializer, V2DeflateSerializer},
};
use serde::{Deserialize, Serialize};
use volley_wire::ALL_CODES;

use crate::{engine::Outcome, plan::shard::Shard, recorder::Recorder};

/// The layout's version: a merge refuses results of another.
pub const VERSION: u32 = 1;

/// The histograms, each base64 of HdrHistogram's V2 deflate encoding (empty when nothing was
/// recorded).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct EncodedHistograms {
    /// Latency (from the intended send time), nanoseconds.
    pub latency: String,
    /// Service time (from the actual send), nanoseconds.
    pub service: String,
    /// Time to a stream's first reply, nanoseconds.
    pub first_message: String,
    /// Per-message round trip on bidi streams, nanoseconds.
    pub message_latency: String,
}

/// A run's mergeable results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Results {
    /// [`VERSION`].
    pub version: u32,
    /// A hash of the plan (the report's options, the generator's CPU count left out): shards of
    /// one plan have the same.
    pub plan_hash: String,
    /// The shard, when the run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// When the run started (after dialling), nanoseconds since the Unix epoch.
    pub start_unix_nano: i64,
    /// When it ended.
    pub end_unix_nano: i64,
    /// Calls counted.
    pub count: u64,
    /// The sum of their latencies in nanoseconds, as text (it may pass 2^53).
    pub sum_ns: String,
    /// Exact fastest counted latency (0 when none).
    pub min: u64,
    /// Exact slowest.
    pub max: u64,
    /// Calls per status (grpc-go's names, as in `statusCodeDistribution`).
    pub statuses: BTreeMap<String, u64>,
    /// Calls per error text.
    pub errors: BTreeMap<String, u64>,
    /// Streaming: messages sent.
    pub messages_sent: u64,
    /// Streaming: messages received.
    pub messages_received: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Calls finished in each second of the run.
    pub timeline: Vec<u64>,
    /// Latency p50, p90, p99 and p99.9 of each whole second (of each generator thread) with 20
    /// calls or more, nanoseconds: the run's own noise, for `volley report compare`.
    #[serde(default)]
    pub per_second: Vec<[u64; 4]>,
    /// The generator was busy most of the run.
    pub generator_saturated: bool,
    /// The generator never reached the rate asked.
    pub rate_unreachable: bool,
    /// The histograms.
    pub histograms: EncodedHistograms,
    /// A mix's entries, each with its own results (none when the run called one method).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodResults>,
}

/// The results of one entry of a mix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MethodResults {
    /// The entry's name (`api.Users.Get`).
    pub call: String,
    /// Its weight in the mix.
    pub weight: u64,
    /// Its calls.
    pub results: Results,
}

/// Results that cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ResultsError(String);

/// A histogram as results carry it: HdrHistogram's compressed V2 form in base64 (empty for an
/// empty histogram).
pub fn encode(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return String::new();
    }
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

/// Adds a histogram [`encode`] wrote to `into`; `what` names it in the error.
pub fn decode(text: &str, what: &str, into: &mut Histogram<u64>) -> Result<(), ResultsError> {
    if text.is_empty() {
        return Ok(());
    }
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| ResultsError(format!("histograms.{what}: not base64: {e}")))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| ResultsError(format!("histograms.{what}: not an HdrHistogram: {e:?}")))?;
    into.add(&h)
        .map_err(|e| ResultsError(format!("histograms.{what}: {e:?}")))
}

impl Results {
    /// The results of a finished run.
    pub fn of(out: &Outcome, plan_hash: String, shard: Option<Shard>) -> Results {
        let methods = out
            .methods
            .iter()
            .map(|m| MethodResults {
                call: m.name.clone(),
                weight: m.weight,
                results: Results::of(&out.of_method(m), plan_hash.clone(), shard),
            })
            .collect();
        let r = &out.recorder;
        Results {
            version: VERSION,
            plan_hash,
            shard,
            start_unix_nano: out.started_unix_nano,
            end_unix_nano: out.started_unix_nano + out.total.as_nanos() as i64,
            count: r.count,
            sum_ns: r.sum_ns.to_string(),
            min: if r.latency.is_empty() { 0 } else { r.min },
            max: r.max,
            statuses: r
                .status_counts()
                .into_iter()
                .map(|(c, n)| (c.go_name().to_owned(), n))
                .collect(),
            errors: r.errors.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            messages_sent: r.messages_sent,
            messages_received: r.messages_received,
            bytes: r.bytes,
            timeline: r.timeline(),
            per_second: r.per_second.clone(),
            generator_saturated: out.generator_saturated,
            rate_unreachable: out.rate_unreachable,
            histograms: EncodedHistograms {
                latency: encode(&r.latency),
                service: encode(&r.service),
                first_message: encode(&r.first_message),
                message_latency: encode(&r.message_latency),
            },
            methods,
        }
    }

    /// The recorder these results came from (without per-call details).
    pub fn recorder(&self) -> Result<Recorder, ResultsError> {
        let mut r = Recorder::new(false, 0, 0);
        decode(&self.histograms.latency, "latency", &mut r.latency)?;
        decode(&self.histograms.service, "service", &mut r.service)?;
        decode(
            &self.histograms.first_message,
            "firstMessage",
            &mut r.first_message,
        )?;
        decode(
            &self.histograms.message_latency,
            "messageLatency",
            &mut r.message_latency,
        )?;
        r.count = self.count;
        r.sum_ns = self
            .sum_ns
            .parse()
            .map_err(|_| ResultsError(format!("sumNs: {:?} is not a whole number", self.sum_ns)))?;
        if !r.latency.is_empty() {
            r.min = self.min;
            r.max = self.max;
        }
        for (name, n) in &self.statuses {
            let code = ALL_CODES
                .iter()
                .find(|c| c.go_name() == name)
                .ok_or_else(|| ResultsError(format!("statuses: unknown status {name:?}")))?;
            r.statuses[*code as usize] += n;
        }
        r.errors = self.errors.iter().map(|(k, v)| (k.clone(), *v)).collect();
        r.messages_sent = self.messages_sent;
        r.messages_received = self.messages_received;
        r.bytes = self.bytes;
        r.timelines = vec![self.timeline.clone()];
        r.per_second = self.per_second.clone();
        Ok(r)
    }
}

/// The plan's hash: FNV-1a (64 bits) of the report's `options` as JSON, with `CPUs` (the
/// generator's own machine) left out. Not a secret: it tells shards of one plan from others.
pub fn plan_hash(options: &serde_json::Value) -> String {
    let mut options = options.clone();
    if let Some(m) = options.as_object_mut() {
        m.remove("CPUs");
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in options.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use volley_wire::Status;

    fn outcome(r: Recorder) -> Outcome {
        Outcome::recorded(r, Duration::from_secs(2), 1_700_000_000_000_000_000)
    }

    /// A small deterministic generator (no dependency for a test's randomness).
    fn values(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                1_000 + x % 500_000_000
            })
            .collect()
    }

    #[test]
    fn merging_serialized_recorders_equals_one_recorder_fed_every_value() {
        let unavailable = Status::unavailable("down");
        let mut whole = Recorder::new(false, 0, 0);
        let mut parts: Vec<Results> = Vec::new();
        for shard in 0..4u64 {
            let mut part = Recorder::new(false, 0, 0);
            for (k, v) in values(shard + 1, 5_000).into_iter().enumerate() {
                let result = if k % 97 == 0 {
                    Err(&unavailable)
                } else {
                    Ok(())
                };
                part.record(k as u64, 0, v, v / 2 + 1, result);
                whole.record(k as u64, 0, v, v / 2 + 1, result);
            }
            let results = Results::of(
                &outcome(part),
                "p".into(),
                Some(Shard {
                    index: shard,
                    count: 4,
                }),
            );
            // Through JSON, as `volley report merge` reads it.
            let text = serde_json::to_string(&results).unwrap();
            parts.push(serde_json::from_str(&text).unwrap());
        }
        let mut merged = parts[0].recorder().unwrap();
        for p in &parts[1..] {
            merged.merge(p.recorder().unwrap());
        }
        assert_eq!(merged.latency, whole.latency);
        assert_eq!(merged.service, whole.service);
        assert_eq!(
            (merged.count, merged.sum_ns, merged.min, merged.max),
            (whole.count, whole.sum_ns, whole.min, whole.max)
        );
        assert_eq!(merged.status_counts(), whole.status_counts());
        assert_eq!(merged.errors, whole.errors);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(
                merged.latency.value_at_quantile(q),
                whole.latency.value_at_quantile(q)
            );
        }
    }

    #[test]
    fn damaged_results_name_what_is_wrong() {
        let mut r = Results::of(&outcome(Recorder::new(false, 0, 0)), "p".into(), None);
        r.histograms.latency = "not base64!".into();
        assert!(
            r.recorder()
                .unwrap_err()
                .to_string()
                .starts_with("histograms.latency: not base64")
        );
        r.histograms.latency = STANDARD.encode(b"junk");
        assert!(
            r.recorder()
                .unwrap_err()
                .to_string()
                .contains("not an HdrHistogram")
        );
        r.histograms.latency.clear();
        r.statuses.insert("Fine".into(), 1);
        assert_eq!(
            r.recorder().unwrap_err().to_string(),
            "statuses: unknown status \"Fine\""
        );
    }
}
