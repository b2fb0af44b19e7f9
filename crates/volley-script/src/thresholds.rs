//! k6's thresholds: `'p(95)<300'`, `'rate<0.01'`, `'count>100'` on a metric or on a sub-metric
//! (`grpc_req_duration{method:/pkg.Svc/M}`), as strings or as `{threshold, abortOnFail,
//! delayAbortEval}`. Parsed once at start; judged against the run's metrics at the end, and
//! every second for those that abort.

use std::time::Duration;

use serde_json::Value;

use crate::metrics::{Kind, Registry, SubDef};

/// A comparison k6 allows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// One threshold expression on one (sub-)metric.
#[derive(Clone, Debug)]
pub(crate) struct Threshold {
    /// As written (`p(95)<300`), the key the summary prints.
    pub source: String,
    /// `avg`, `min`, `max`, `med`, `count`, `rate`, `value`, `p(N)`.
    pub stat: String,
    op: Op,
    limit: f64,
    pub abort_on_fail: bool,
    pub delay_abort_eval: Duration,
}

/// The thresholds of one metric key (`name` or `name{tag:value,...}`).
#[derive(Clone, Debug)]
pub(crate) struct MetricThresholds {
    /// The key as written.
    pub key: String,
    /// The metric's name.
    pub metric: String,
    /// The sub-metric's tags, empty for the metric itself.
    pub tags: Vec<(String, String)>,
    pub list: Vec<Threshold>,
}

/// Reads `options.thresholds`.
pub(crate) fn parse(
    thresholds: &std::collections::BTreeMap<String, Value>,
) -> Result<Vec<MetricThresholds>, String> {
    let mut out = Vec::new();
    for (key, v) in thresholds {
        let (metric, tags) = parse_key(key)?;
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        let mut list = Vec::new();
        for item in items {
            let (text, abort, delay) = match item {
                Value::String(s) => (s.clone(), false, Duration::ZERO),
                Value::Object(o) => {
                    let text = o.get("threshold").and_then(Value::as_str).ok_or_else(|| {
                        format!("threshold on {key:?}: an object needs a `threshold` string")
                    })?;
                    let delay = match o.get("delayAbortEval") {
                        None | Some(Value::Null) => Duration::ZERO,
                        Some(d) => crate::duration::value_duration(d)
                            .map_err(|e| format!("threshold on {key:?}: delayAbortEval: {e}"))?,
                    };
                    (
                        text.to_owned(),
                        o.get("abortOnFail")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        delay,
                    )
                }
                other => {
                    return Err(format!(
                        "threshold on {key:?}: {other} is neither a string nor an object"
                    ));
                }
            };
            let mut t = parse_expr(&text).map_err(|e| format!("threshold on {key:?}: {e}"))?;
            t.abort_on_fail = abort;
            t.delay_abort_eval = delay;
            list.push(t);
        }
        out.push(MetricThresholds {
            key: key.clone(),
            metric,
            tags,
            list,
        });
    }
    Ok(out)
}

/// `name{tag:value,tag2:value2}`.
fn parse_key(key: &str) -> Result<(String, Vec<(String, String)>), String> {
    let Some((name, rest)) = key.split_once('{') else {
        return Ok((key.trim().to_owned(), Vec::new()));
    };
    let inner = rest
        .strip_suffix('}')
        .ok_or_else(|| format!("threshold key {key:?}: a sub-metric's tags end with `}}`"))?;
    let mut tags = Vec::new();
    for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| format!("threshold key {key:?}: {pair:?} is not `tag:value`"))?;
        tags.push((
            k.trim().to_owned(),
            v.trim().trim_matches(['"', '\'']).to_owned(),
        ));
    }
    Ok((name.trim().to_owned(), tags))
}

/// `p(95)<300`, `rate < 0.01`, `count>=10`.
fn parse_expr(text: &str) -> Result<Threshold, String> {
    let t = text.trim();
    let ops = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("===", Op::Eq),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    let (at, (sym, op)) = ops
        .iter()
        .filter_map(|(sym, op)| t.find(sym).map(|i| (i, (*sym, *op))))
        .min_by_key(|(i, (sym, _))| (*i, usize::MAX - sym.len()))
        .ok_or_else(|| format!("{text:?} has no comparison (<, <=, >, >=, ==, ===, !=)"))?;
    let stat = t[..at].trim().replace(' ', "");
    let limit_text = t[at + sym.len()..].trim();
    let limit: f64 = limit_text
        .parse()
        .map_err(|_| format!("{text:?}: {limit_text:?} is not a number"))?;
    let known = matches!(
        stat.as_str(),
        "avg" | "min" | "max" | "med" | "count" | "rate" | "value"
    ) || stat
        .strip_prefix("p(")
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|n| n.parse::<f64>().ok())
        .is_some_and(|n| (0.0..=100.0).contains(&n));
    if !known {
        return Err(format!(
            "{text:?}: unknown aggregation {stat:?} (k6 takes avg, min, max, med, p(N), count, rate, value)"
        ));
    }
    Ok(Threshold {
        source: text.to_owned(),
        stat,
        op,
        limit,
        abort_on_fail: false,
        delay_abort_eval: Duration::ZERO,
    })
}

impl Threshold {
    /// Whether the aggregation fits a metric of `kind` (k6 refuses `rate` on a Trend, and so on).
    pub(crate) fn fits(&self, kind: Kind) -> bool {
        match kind {
            Kind::Counter => matches!(self.stat.as_str(), "count" | "rate"),
            Kind::Gauge => self.stat == "value",
            Kind::Rate => self.stat == "rate",
            Kind::Trend => !matches!(self.stat.as_str(), "count" | "rate" | "value"),
        }
    }

    /// Whether the metric passes, `stat` giving its aggregations by k6's names.
    pub(crate) fn passes(&self, stat: impl Fn(&str) -> Option<f64>) -> bool {
        let Some(v) = stat(&self.stat) else {
            return false;
        };
        match self.op {
            Op::Lt => v < self.limit,
            Op::Le => v <= self.limit,
            Op::Gt => v > self.limit,
            Op::Ge => v >= self.limit,
            Op::Eq => v == self.limit,
            Op::Ne => v != self.limit,
        }
    }
}

/// The sub-metrics the thresholds name, resolved to metric ids (a metric not known yet is made
/// when the script defines it; its thresholds are matched by name at the end).
pub(crate) fn sub_defs(registry: &Registry, thresholds: &[MetricThresholds]) -> Vec<SubDef> {
    thresholds
        .iter()
        .filter(|t| !t.tags.is_empty())
        .filter_map(|t| {
            registry.id(&t.metric).map(|metric| SubDef {
                key: t.key.clone(),
                metric,
                tags: t.tags.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_keys_read_as_k6_writes_them() {
        let t = parse_expr("p(95) < 300").unwrap();
        assert_eq!((t.stat.as_str(), t.op, t.limit), ("p(95)", Op::Lt, 300.0));
        let t = parse_expr("rate<=0.01").unwrap();
        assert_eq!((t.stat.as_str(), t.op), ("rate", Op::Le));
        assert!(
            parse_expr("p95<300")
                .unwrap_err()
                .contains("unknown aggregation")
        );
        assert!(parse_expr("avg 300").unwrap_err().contains("no comparison"));
        let (m, tags) =
            parse_key("grpc_req_duration{method:/main.FeatureExplorer/GetFeature}").unwrap();
        assert_eq!(m, "grpc_req_duration");
        assert_eq!(
            tags,
            vec![(
                "method".to_owned(),
                "/main.FeatureExplorer/GetFeature".to_owned()
            )]
        );
    }

    #[test]
    fn a_threshold_passes_or_fails_on_its_value() {
        let v = |s: &str| (s == "p(95)").then_some(250.0);
        assert!(parse_expr("p(95)<300").unwrap().passes(v));
        assert!(!parse_expr("p(95)<200").unwrap().passes(v));
        assert!(
            !parse_expr("avg<200").unwrap().passes(v),
            "a value not there fails"
        );
    }
}
