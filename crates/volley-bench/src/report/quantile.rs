//! A point of a latency distribution past ghz's (p99.9, p99.99), in the report and the server's
//! figures alike.

use serde::Serialize;

/// A finer point for volley's additions (p99.9, p99.99).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Quantile {
    /// Percent, e.g. 99.9.
    pub percentage: f64,
    /// Nanoseconds.
    pub latency: u64,
}
