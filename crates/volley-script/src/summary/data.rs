//! The data `handleSummary(data)` receives, in k6's shape (`metrics` with each metric's
//! `type`, `contains`, `values` and `thresholds`; `root_group` with the checks; `options`;
//! `state`), and `--summary-export`'s older flat JSON.

use serde_json::{Map, Value, json};

use super::{
    format::{Contains, contains},
    report::Report,
};
use crate::metrics::{Agg, Def, Kind};

/// The data `handleSummary(data)` gets, in k6's shape (`metrics`, `root_group`, `options`,
/// `state`).
pub(crate) fn data(r: &Report<'_>, stdout_tty: bool) -> Value {
    let mut metrics = Map::new();
    for (i, d) in r.defs.iter().enumerate() {
        let Some(a) = r.totals.agg(i).filter(|a| !a.is_empty()) else {
            continue;
        };
        let mut m = metric_json(d, a, r);
        let own: Vec<usize> = (0..r.thresholds.len())
            .filter(|&ti| r.thresholds[ti].metric == d.name && r.thresholds[ti].tags.is_empty())
            .collect();
        if !own.is_empty() {
            m.insert("thresholds".into(), outcomes(r, &own));
        }
        metrics.insert(d.name.clone(), Value::Object(m));
        for (ti, t) in r.thresholds.iter().enumerate() {
            if t.metric != d.name || t.tags.is_empty() {
                continue;
            }
            if let Some((_, Some(sa))) = r.subs.iter().find(|(k, _)| *k == t.key) {
                let mut m = metric_json(d, sa, r);
                m.insert("thresholds".into(), outcomes(r, &[ti]));
                metrics.insert(t.key.clone(), Value::Object(m));
            }
        }
    }
    let checks: Vec<Value> = r
        .totals
        .checks
        .iter()
        .map(|c| json!({"name": c.name, "path": format!("{}::{}", c.group, c.name), "passes": c.passes, "fails": c.fails}))
        .collect();
    json!({
        "root_group": {"name": "", "path": "", "groups": [], "checks": checks},
        "options": {"summaryTrendStats": r.trend_stats, "summaryTimeUnit": "", "noColor": false},
        "state": {"isStdOutTTY": stdout_tty, "isStdErrTTY": false, "testRunDurationMs": r.elapsed * 1000.0},
        "metrics": metrics,
    })
}

/// `{"p(95)<300": {"ok": true}, ...}` for the thresholds at `which`.
fn outcomes(r: &Report<'_>, which: &[usize]) -> Value {
    let mut o = Map::new();
    for &ti in which {
        for (j, th) in r.thresholds[ti].list.iter().enumerate() {
            let ok = r
                .outcomes
                .get(ti)
                .and_then(|x| x.get(j))
                .copied()
                .unwrap_or(true);
            o.insert(th.source.clone(), json!({ "ok": ok }));
        }
    }
    Value::Object(o)
}

fn metric_json(d: &Def, a: &Agg, r: &Report<'_>) -> Map<String, Value> {
    let mut values = Map::new();
    let stats: Vec<String> = match d.kind {
        Kind::Counter => vec!["count".into(), "rate".into()],
        Kind::Gauge => vec!["value".into(), "min".into(), "max".into()],
        Kind::Rate => vec!["rate".into(), "passes".into(), "fails".into()],
        Kind::Trend => r.trend_stats.to_vec(),
    };
    for s in stats {
        if let Some(v) = a.stat(&s, r.elapsed) {
            values.insert(s, json!(v));
        }
    }
    let mut m = Map::new();
    m.insert("type".into(), d.kind.name().into());
    m.insert(
        "contains".into(),
        match contains(d) {
            Contains::Time => "time",
            Contains::Data => "data",
            Contains::Default => "default",
        }
        .into(),
    );
    m.insert("values".into(), Value::Object(values));
    m
}

/// `--summary-export`: k6's older flat JSON (`metrics.NAME.{avg, p(95), count, ...}`).
pub(crate) fn export(r: &Report<'_>) -> Value {
    let full = data(r, false);
    let mut metrics = Map::new();
    if let Some(Value::Object(ms)) = full.get("metrics") {
        for (name, m) in ms {
            let mut flat = m
                .get("values")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(Value::Object(th)) = m.get("thresholds") {
                let t: Map<String, Value> = th
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(!v["ok"].as_bool().unwrap_or(true))))
                    .collect();
                flat.insert("thresholds".into(), Value::Object(t));
            }
            metrics.insert(name.clone(), Value::Object(flat));
        }
    }
    json!({ "root_group": full["root_group"], "metrics": metrics })
}
