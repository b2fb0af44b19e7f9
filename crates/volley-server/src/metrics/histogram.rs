//! A histogram recorded with two relaxed atomic adds and no lock, encoded as a
//! `prometheus_client` histogram.
//!
//! Written here rather than using `prometheus_client`'s `Histogram`, which takes a write lock
//! and scans its buckets on every observation: three of those per call were a third of what
//! the metrics interceptor cost (docs/benchmarks-history.md, "Interceptors, metrics and
//! traces").

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering::Relaxed},
};

use prometheus_client::{
    encoding::{EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{MetricType, TypedMetric},
};

/// A histogram of whole units (nanoseconds, bytes) exposed in a scaled unit (seconds, bytes).
/// Cheap to clone: the counts are shared.
#[derive(Clone, Debug)]
pub(crate) struct AtomicHistogram(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// The buckets' upper bounds (inclusive) in whole units, ascending.
    bounds: Box<[u64]>,
    /// The same bounds in the exposed unit.
    exposed: Box<[f64]>,
    /// How many whole units make one exposed unit.
    per_unit: f64,
    /// Observations per bucket (not cumulative), the last one above every bound (`+Inf`).
    counts: Box<[AtomicU64]>,
    /// The sum of the observations, in whole units.
    sum: AtomicU64,
}

impl AtomicHistogram {
    /// A histogram with `bounds` in the exposed unit, recording values `per_unit` times finer
    /// (1e9 for seconds recorded in nanoseconds).
    pub(crate) fn new(bounds: &[f64], per_unit: f64) -> AtomicHistogram {
        AtomicHistogram(Arc::new(Inner {
            bounds: bounds
                .iter()
                .map(|b| (b * per_unit).round() as u64)
                .collect(),
            exposed: bounds.into(),
            per_unit,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }))
    }

    /// Records one value, in whole units.
    pub(crate) fn observe(&self, value: u64) {
        // A scan from the low end: calls' durations and sizes sit in the first few buckets,
        // where it beats a binary search.
        let bounds = &self.0.bounds;
        let i = bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(bounds.len());
        self.0.counts[i].fetch_add(1, Relaxed);
        self.0.sum.fetch_add(value, Relaxed);
    }

    /// The sum (in the exposed unit), the count, and the per-bucket counts with their upper
    /// bounds (`f64::MAX` for `+Inf`), as `prometheus_client` encodes a histogram.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let inner = &*self.0;
        let buckets: Vec<(f64, u64)> = inner
            .exposed
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(inner.counts.iter().map(|c| c.load(Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = inner.sum.load(Relaxed) as f64 / inner.per_unit;
        (sum, count, buckets)
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_the_first_bucket_whose_bound_they_do_not_exceed() {
        let h = AtomicHistogram::new(&[0.0, 0.001, 0.01], 1e9);
        for ns in [0, 1, 1_000_000, 1_000_001, 10_000_000, 20_000_000] {
            h.observe(ns);
        }
        let (sum, count, buckets) = h.snapshot();
        assert_eq!(count, 6);
        let counts: Vec<u64> = buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [1, 2, 2, 1]);
        assert_eq!(buckets[3].0, f64::MAX);
        assert!((sum - 0.032000002).abs() < 1e-12, "sum {sum}");
    }

    #[test]
    fn it_encodes_as_prometheus_client_encodes_its_own_histogram() {
        use prometheus_client::{encoding::text::encode, metrics::histogram::Histogram};
        let ours = AtomicHistogram::new(&[0.0, 1024.0, 2048.0], 1.0);
        let theirs = Histogram::new([0.0, 1024.0, 2048.0]);
        for v in [0u64, 5, 1024, 1025, 4096] {
            ours.observe(v);
            theirs.observe(v as f64);
        }
        let text = |m: Box<dyn FnOnce(&mut prometheus_client::registry::Registry)>| {
            let mut r = prometheus_client::registry::Registry::default();
            m(&mut r);
            let mut out = String::new();
            encode(&mut out, &r).unwrap();
            out
        };
        let a = text(Box::new(move |r| r.register("size", "h", ours)));
        let b = text(Box::new(move |r| r.register("size", "h", theirs)));
        assert_eq!(a, b);
        assert!(a.contains("size_bucket{le=\"1024.0\"} 3"), "{a}");
    }
}
