//! The thresholds' verdicts as the report carries them (`volley.verdicts` in JSON, the summary's
//! `Thresholds:` block): data only; `gate` judges a report and makes them.

use serde::Serialize;

/// One threshold's verdict.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The threshold as written.
    pub threshold: String,
    /// What the run measured: nanoseconds for durations, a ratio for shares, else the number;
    /// `null` when there was nothing to measure (no calls, or no streams).
    pub observed: Option<f64>,
    /// The same, for people (`p99 = 21.36 ms`).
    pub shown: String,
    /// Whether the threshold held.
    pub held: bool,
}

/// The verdicts of a run: one per threshold, and why the run cannot be judged, if it cannot.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Verdicts {
    /// One per threshold, in the order given.
    pub thresholds: Vec<Verdict>,
    /// Set when the run is not valid for judging.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}
