//! What every scenario does with a child run: its argv, a `volley bench -O json` report as a
//! [`Row`], and short runs repeated until their median is steady.

use anyhow::Result;
use serde_json::Value;

use super::{Ctx, Row};

/// Owned arguments for a child `volley` from string literals.
pub(super) fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

/// A `volley bench -O json` report as a row.
pub(super) fn bench_row(scenario: &str, case: String, seed: Option<f64>, r: &Value) -> Row {
    let count = r["count"].as_u64().unwrap_or(0);
    let ok = r["statusCodeDistribution"]["OK"].as_u64().unwrap_or(0);
    let ms = |ns: &Value| ns.as_f64().unwrap_or(0.0) / 1e6;
    let mut percentiles: Vec<(f64, f64)> = r["latencyDistribution"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(r["volley"]["latencyTail"].as_array().into_iter().flatten())
        .map(|q| (q["percentage"].as_f64().unwrap_or(0.0), ms(&q["latency"])))
        .collect();
    percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at = |p: f64| {
        percentiles
            .iter()
            .find(|(q, _)| *q == p)
            .map_or(0.0, |(_, v)| *v)
    };
    Row {
        scenario: scenario.to_owned(),
        case,
        unit: "requests/s".into(),
        ours: r["rps"].as_f64().unwrap_or(0.0),
        seed,
        calls: count,
        errors: count - ok.min(count),
        p50_ms: at(50.0),
        p99_ms: at(99.0),
        timeline: r["volley"]["timeline"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect(),
        histogram: r["histogram"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                (
                    b["mark"].as_f64().unwrap_or(0.0) * 1000.0,
                    b["count"].as_u64().unwrap_or(0),
                )
            })
            .collect(),
        percentiles,
        elapsed_s: r["total"].as_f64().unwrap_or(0.0) / 1e9,
        runs: 1,
        ..Row::default()
    }
}

/// Runs shorter than this swing widely from run to run (a thousand calls take milliseconds):
/// they are repeated.
const SHORT_RUN_S: f64 = 1.0;

/// Runs `once`; when it is shorter than [`SHORT_RUN_S`], runs it again (five runs in all,
/// three with `--quick`) and keeps the median run (by its figure) with the spread of all.
pub(super) fn steady(ctx: &Ctx, once: impl Fn() -> Result<Row>) -> Result<Row> {
    let first = once()?;
    if first.elapsed_s >= SHORT_RUN_S {
        return Ok(first);
    }
    let n = if ctx.quick { 3 } else { 5 };
    let mut all = vec![first];
    for _ in 1..n {
        all.push(once()?);
    }
    all.sort_by(|a, b| a.ours.total_cmp(&b.ours));
    let spread = (all[0].ours, all[all.len() - 1].ours);
    let calls = all.iter().map(|r| r.calls).sum();
    let errors = all.iter().map(|r| r.errors).sum();
    let mut median = all.swap_remove(all.len() / 2);
    median.runs = n;
    median.spread = Some(spread);
    median.calls = calls;
    median.errors = errors;
    Ok(median)
}
