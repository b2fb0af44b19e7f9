//! What the summary is made from: the metrics' definitions and totals, the thresholds and
//! their outcomes, the run's length and the trend statistics to show.

use crate::{
    metrics::{Agg, Def, Sink},
    thresholds::MetricThresholds,
};

/// What the summary is made from.
pub(crate) struct Report<'a> {
    pub defs: &'a [Def],
    pub totals: &'a Sink,
    pub thresholds: &'a [MetricThresholds],
    /// For each threshold key, each expression's outcome (same order as `thresholds`).
    pub outcomes: &'a [Vec<bool>],
    /// Sub-metric aggregates by threshold key.
    pub subs: &'a [(String, Option<Agg>)],
    pub elapsed: f64,
    pub trend_stats: &'a [String],
}
