//! What every scenario does with a child run: its argv, a `volley bench -O json` report as a
//! [`Row`], and short runs repeated until their median is steady.

use anyhow::Result;
use serde_json::Value;

use super::row::{Ctx, Row};

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

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use serde_json::json;

    use super::*;
    use crate::seeds::tests::ctx;

    #[test]
    fn a_bench_report_becomes_a_row() {
        let r = json!({
            "count": 1000,
            "rps": 2500.5,
            "total": 400_000_000u64,
            "statusCodeDistribution": {"OK": 990, "Unavailable": 10},
            "latencyDistribution": [
                {"percentage": 99, "latency": 4_000_000},
                {"percentage": 50, "latency": 1_500_000}
            ],
            "volley": {
                "latencyTail": [{"percentage": 99.9, "latency": 9_000_000}],
                "timeline": [1200, 1300, "x"]
            },
            "histogram": [{"mark": 0.001, "count": 600}, {"mark": 0.004, "count": 400}]
        });
        let row = bench_row("users", "Get c=1".into(), Some(2000.0), &r);
        assert_eq!(
            (row.scenario.as_str(), row.case.as_str()),
            ("users", "Get c=1")
        );
        assert_eq!(row.unit, "requests/s");
        assert_eq!((row.ours, row.seed), (2500.5, Some(2000.0)));
        assert_eq!((row.calls, row.errors), (1000, 10));
        assert_eq!((row.p50_ms, row.p99_ms), (1.5, 4.0));
        // Sorted by percentile, the tail after the distribution.
        assert_eq!(row.percentiles, [(50.0, 1.5), (99.0, 4.0), (99.9, 9.0)]);
        assert_eq!(row.timeline, [1200, 1300]);
        assert_eq!(row.histogram, [(1.0, 600), (4.0, 400)]);
        assert_eq!((row.elapsed_s, row.runs), (0.4, 1));
        assert!(row.spread.is_none() && row.not_run.is_none());

        // An empty report: zeros, and never more errors than calls.
        let empty = bench_row("x", "y".into(), None, &json!({}));
        assert_eq!((empty.calls, empty.errors, empty.ours), (0, 0, 0.0));
        assert!(empty.percentiles.is_empty());
    }

    fn run(ours: f64, elapsed_s: f64) -> Row {
        Row {
            ours,
            elapsed_s,
            calls: 100,
            errors: 1,
            runs: 1,
            ..Row::default()
        }
    }

    #[test]
    fn short_runs_are_repeated_and_the_median_kept_with_the_spread() {
        let figures = RefCell::new(vec![3.0, 5.0, 2.0, 4.0, 1.0].into_iter());
        let row = steady(&ctx(false, None), || {
            Ok(run(figures.borrow_mut().next().unwrap(), 0.1))
        })
        .unwrap();
        assert_eq!(row.ours, 3.0);
        assert_eq!(row.spread, Some((1.0, 5.0)));
        assert_eq!((row.runs, row.calls, row.errors), (5, 500, 5));

        // --quick: three runs.
        let calls = Cell::new(0);
        let row = steady(&ctx(true, None), || {
            calls.set(calls.get() + 1);
            Ok(run(f64::from(calls.get()), 0.1))
        })
        .unwrap();
        assert_eq!((calls.get(), row.runs, row.ours), (3, 3, 2.0));

        // A run of a second or more is kept as it is.
        let calls = Cell::new(0);
        let row = steady(&ctx(false, None), || {
            calls.set(calls.get() + 1);
            Ok(run(7.0, 1.0))
        })
        .unwrap();
        assert_eq!((calls.get(), row.runs, row.spread), (1, 1, None));

        // A failed run fails the case.
        let calls = Cell::new(0);
        let e = steady(&ctx(false, None), || {
            calls.set(calls.get() + 1);
            if calls.get() == 2 {
                anyhow::bail!("second run failed");
            }
            Ok(run(1.0, 0.1))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "second run failed");
    }
}
