//! The run's metrics, k6's by their names (`grpc_req_duration`, `checks`, `iterations`, ...) and
//! the script's own (`k6/metrics`): each VU records into a [`Sink`] of its own (no lock per
//! sample) and merges it into the run's totals every few hundred milliseconds and at its end.
//! Trends keep an HDR histogram (3 significant digits) beside their exact count, sum, min and
//! max; a sub-metric (`name{tag:value}`) exists only when a threshold names it, as in k6.

use std::sync::Mutex;

use hdrhistogram::Histogram;

/// A metric's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Rate,
    Trend,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Rate => "rate",
            Kind::Trend => "trend",
        }
    }
}

/// A metric's name, type and whether its values are times (milliseconds).
#[derive(Clone, Debug)]
pub(crate) struct Def {
    pub name: String,
    pub kind: Kind,
    pub time: bool,
}

/// k6's built-in metrics, at fixed ids.
pub(crate) mod id {
    pub(crate) const GRPC_REQ_DURATION: usize = 0;
    pub(crate) const GRPC_STREAMS: usize = 1;
    pub(crate) const GRPC_STREAMS_MSGS_SENT: usize = 2;
    pub(crate) const GRPC_STREAMS_MSGS_RECEIVED: usize = 3;
    pub(crate) const ITERATIONS: usize = 4;
    pub(crate) const ITERATION_DURATION: usize = 5;
    pub(crate) const DROPPED_ITERATIONS: usize = 6;
    pub(crate) const VUS: usize = 7;
    pub(crate) const VUS_MAX: usize = 8;
    pub(crate) const CHECKS: usize = 9;
    pub(crate) const DATA_SENT: usize = 10;
    pub(crate) const DATA_RECEIVED: usize = 11;
    pub(crate) const GROUP_DURATION: usize = 12;
    pub(crate) const HTTP_REQS: usize = 13;
    pub(crate) const HTTP_REQ_DURATION: usize = 14;
    pub(crate) const HTTP_REQ_FAILED: usize = 15;
}

const BUILT_IN: [(&str, Kind, bool); 16] = [
    ("grpc_req_duration", Kind::Trend, true),
    ("grpc_streams", Kind::Counter, false),
    ("grpc_streams_msgs_sent", Kind::Counter, false),
    ("grpc_streams_msgs_received", Kind::Counter, false),
    ("iterations", Kind::Counter, false),
    ("iteration_duration", Kind::Trend, true),
    ("dropped_iterations", Kind::Counter, false),
    ("vus", Kind::Gauge, false),
    ("vus_max", Kind::Gauge, false),
    ("checks", Kind::Rate, false),
    ("data_sent", Kind::Counter, false),
    ("data_received", Kind::Counter, false),
    ("group_duration", Kind::Trend, true),
    ("http_reqs", Kind::Counter, false),
    ("http_req_duration", Kind::Trend, true),
    ("http_req_failed", Kind::Rate, false),
];

/// The metrics the run knows: k6's, then the script's in the order first made.
#[derive(Debug)]
pub(crate) struct Registry {
    defs: Mutex<Vec<Def>>,
}

impl Registry {
    pub(crate) fn new() -> Registry {
        let defs = BUILT_IN
            .iter()
            .map(|(name, kind, time)| Def {
                name: (*name).to_owned(),
                kind: *kind,
                time: *time,
            })
            .collect();
        Registry {
            defs: Mutex::new(defs),
        }
    }

    /// The id of `name`, made on first use; the same name with another type is refused in k6's
    /// words.
    pub(crate) fn define(&self, name: &str, kind: Kind, time: bool) -> Result<usize, String> {
        if !valid_name(name) {
            return Err(format!(
                "Invalid metric name: '{name}'. Metric names must be 1-128 ASCII letters, digits and underscores, not starting with a digit"
            ));
        }
        let mut defs = self.defs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = defs.iter().position(|d| d.name == name) {
            let d = &defs[i];
            if d.kind != kind || d.time != time {
                return Err(format!(
                    "metric '{name}' already exists but with type {}, instead of {}",
                    d.kind.name(),
                    kind.name()
                ));
            }
            return Ok(i);
        }
        defs.push(Def {
            name: name.to_owned(),
            kind,
            time,
        });
        Ok(defs.len() - 1)
    }

    pub(crate) fn defs(&self) -> Vec<Def> {
        self.defs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Metric `id`'s definition.
    pub(crate) fn def(&self, id: usize) -> Option<Def> {
        self.defs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Metric `id`'s type, read without copying the definitions (a script's `add` asks each
    /// time).
    pub(crate) fn kind(&self, id: usize) -> Option<Kind> {
        self.defs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .map(|d| d.kind)
    }

    pub(crate) fn id(&self, name: &str) -> Option<usize> {
        self.defs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .position(|d| d.name == name)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One metric's (or sub-metric's) aggregate.
#[derive(Clone, Debug)]
pub(crate) enum Agg {
    Counter {
        sum: f64,
    },
    Gauge {
        last: f64,
        min: f64,
        max: f64,
    },
    Rate {
        trues: u64,
        total: u64,
    },
    Trend {
        hist: Box<Histogram<u64>>,
        count: u64,
        sum: f64,
        min: f64,
        max: f64,
    },
}

/// Trends keep thousandths of their unit (microseconds for times) in the histogram.
const TREND_SCALE: f64 = 1000.0;

impl Agg {
    pub(crate) fn new(kind: Kind) -> Agg {
        match kind {
            Kind::Counter => Agg::Counter { sum: 0.0 },
            Kind::Gauge => Agg::Gauge {
                last: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
            },
            Kind::Rate => Agg::Rate { trues: 0, total: 0 },
            Kind::Trend => Agg::Trend {
                hist: Box::new(Histogram::new(3).expect("3 significant digits is valid")),
                count: 0,
                sum: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
            },
        }
    }

    pub(crate) fn add(&mut self, v: f64) {
        match self {
            Agg::Counter { sum } => *sum += v,
            Agg::Gauge { last, min, max } => {
                *last = v;
                *min = min.min(v);
                *max = max.max(v);
            }
            Agg::Rate { trues, total } => {
                *total += 1;
                *trues += u64::from(v != 0.0);
            }
            Agg::Trend {
                hist,
                count,
                sum,
                min,
                max,
            } => {
                // Negative values count in the exact figures; the histogram starts at zero.
                // The histogram resizes itself to the largest value seen.
                let _ = hist.record((v.max(0.0) * TREND_SCALE).round() as u64);
                *count += 1;
                *sum += v;
                *min = min.min(v);
                *max = max.max(v);
            }
        }
    }

    fn merge(&mut self, other: &Agg) {
        match (self, other) {
            (Agg::Counter { sum }, Agg::Counter { sum: o }) => *sum += o,
            (
                Agg::Gauge { last, min, max },
                Agg::Gauge {
                    last: l,
                    min: mi,
                    max: ma,
                },
            ) if mi.is_finite() => {
                *last = *l;
                *min = min.min(*mi);
                *max = max.max(*ma);
            }
            (Agg::Rate { trues, total }, Agg::Rate { trues: t, total: n }) => {
                *trues += t;
                *total += n;
            }
            (
                Agg::Trend {
                    hist,
                    count,
                    sum,
                    min,
                    max,
                },
                Agg::Trend {
                    hist: h,
                    count: c,
                    sum: s,
                    min: mi,
                    max: ma,
                },
            ) => {
                let _ = hist.add(&**h);
                *count += c;
                *sum += s;
                *min = min.min(*mi);
                *max = max.max(*ma);
            }
            _ => {}
        }
    }

    /// Whether anything was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Agg::Counter { sum } => *sum == 0.0,
            Agg::Gauge { min, .. } => !min.is_finite(),
            Agg::Rate { total, .. } => *total == 0,
            Agg::Trend { count, .. } => *count == 0,
        }
    }

    /// An aggregation by k6's name (`avg`, `p(95)`, `count`, `rate`, `value`, ...), `elapsed`
    /// the run's seconds for a counter's rate.
    pub(crate) fn stat(&self, name: &str, elapsed: f64) -> Option<f64> {
        match self {
            Agg::Counter { sum } => match name {
                "count" => Some(*sum),
                "rate" => Some(if elapsed > 0.0 { sum / elapsed } else { 0.0 }),
                _ => None,
            },
            Agg::Gauge { last, min, max } => match name {
                "value" => Some(*last),
                "min" => Some(if min.is_finite() { *min } else { 0.0 }),
                "max" => Some(if max.is_finite() { *max } else { 0.0 }),
                _ => None,
            },
            Agg::Rate { trues, total } => match name {
                "rate" => Some(if *total > 0 {
                    *trues as f64 / *total as f64
                } else {
                    0.0
                }),
                "passes" => Some(*trues as f64),
                "fails" => Some((total - trues) as f64),
                _ => None,
            },
            Agg::Trend {
                hist,
                count,
                sum,
                min,
                max,
            } => {
                if *count == 0 {
                    return Some(0.0);
                }
                match name {
                    "avg" => Some(sum / *count as f64),
                    "min" => Some(*min),
                    "max" => Some(*max),
                    "count" => Some(*count as f64),
                    "med" => Some(quantile(hist, 0.5, *min, *max)),
                    p => {
                        let q: f64 = p.strip_prefix("p(")?.strip_suffix(')')?.parse().ok()?;
                        Some(quantile(hist, q / 100.0, *min, *max))
                    }
                }
            }
        }
    }
}

/// A quantile from the histogram, within the exact min and max (so one sample reads exactly).
fn quantile(hist: &Histogram<u64>, q: f64, min: f64, max: f64) -> f64 {
    if q >= 1.0 {
        return max;
    }
    (hist.value_at_quantile(q) as f64 / TREND_SCALE).clamp(min, max)
}

/// Moves each aggregate of `from` into `into`, merging where `into` has one already.
fn merge_slots(into: &mut Vec<Option<Agg>>, from: &mut [Option<Agg>]) {
    for (i, a) in from.iter_mut().enumerate() {
        let Some(a) = a.take() else { continue };
        if into.len() <= i {
            into.resize_with(i + 1, || None);
        }
        match &mut into[i] {
            Some(mine) => mine.merge(&a),
            slot => *slot = Some(a),
        }
    }
}

/// A check's passes and fails, under its group.
#[derive(Clone, Debug, Default)]
pub(crate) struct CheckCount {
    /// `::outer::inner`, empty at the top.
    pub group: String,
    pub name: String,
    pub passes: u64,
    pub fails: u64,
}

/// A sub-metric a threshold names: its metric and tags.
#[derive(Clone, Debug)]
pub(crate) struct SubDef {
    pub key: String,
    pub metric: usize,
    pub tags: Vec<(String, String)>,
}

/// What one VU has recorded since its last merge (or the run's totals).
#[derive(Debug, Default)]
pub(crate) struct Sink {
    aggs: Vec<Option<Agg>>,
    subs: Vec<Option<Agg>>,
    pub(crate) checks: Vec<CheckCount>,
    /// Groups in the order first entered.
    pub(crate) groups: Vec<String>,
}

impl Sink {
    /// Records `v` on metric `id` of type `kind`.
    pub(crate) fn add(&mut self, id: usize, kind: Kind, v: f64) {
        if self.aggs.len() <= id {
            self.aggs.resize_with(id + 1, || None);
        }
        self.aggs[id].get_or_insert_with(|| Agg::new(kind)).add(v);
    }

    /// Records `v` on sub-metric `sub` (its tags matched by the caller).
    pub(crate) fn add_sub(&mut self, sub: usize, kind: Kind, v: f64) {
        if self.subs.len() <= sub {
            self.subs.resize_with(sub + 1, || None);
        }
        self.subs[sub].get_or_insert_with(|| Agg::new(kind)).add(v);
    }

    /// Counts a check's outcome under `group`.
    pub(crate) fn check(&mut self, group: &str, name: &str, ok: bool) {
        // A run has a few checks: a scan finds one without making a key per call.
        let i = match self
            .checks
            .iter()
            .position(|c| c.group == group && c.name == name)
        {
            Some(i) => i,
            None => {
                self.checks.push(CheckCount {
                    group: group.to_owned(),
                    name: name.to_owned(),
                    ..Default::default()
                });
                self.checks.len() - 1
            }
        };
        let c = &mut self.checks[i];
        if ok { c.passes += 1 } else { c.fails += 1 }
    }

    pub(crate) fn note_group(&mut self, path: &str) {
        if !self.groups.iter().any(|g| g == path) {
            self.groups.push(path.to_owned());
        }
    }

    /// Adds `other` into this one and empties it.
    pub(crate) fn take_from(&mut self, other: &mut Sink) {
        merge_slots(&mut self.aggs, &mut other.aggs);
        merge_slots(&mut self.subs, &mut other.subs);
        for c in other.checks.drain(..) {
            match self
                .checks
                .iter_mut()
                .find(|m| m.group == c.group && m.name == c.name)
            {
                Some(m) => {
                    m.passes += c.passes;
                    m.fails += c.fails;
                }
                None => self.checks.push(c),
            }
        }
        for g in other.groups.drain(..) {
            self.note_group(&g);
        }
    }

    pub(crate) fn agg(&self, id: usize) -> Option<&Agg> {
        self.aggs.get(id).and_then(Option::as_ref)
    }

    pub(crate) fn sub(&self, sub: usize) -> Option<&Agg> {
        self.subs.get(sub).and_then(Option::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trends_give_k6s_aggregations() {
        let mut a = Agg::new(Kind::Trend);
        for v in 1..=100 {
            a.add(v as f64);
        }
        assert_eq!(a.stat("avg", 1.0), Some(50.5));
        assert_eq!(a.stat("min", 1.0), Some(1.0));
        assert_eq!(a.stat("max", 1.0), Some(100.0));
        let p95 = a.stat("p(95)", 1.0).unwrap();
        assert!((94.9..=95.1).contains(&p95), "{p95}");
        let med = a.stat("med", 1.0).unwrap();
        assert!((49.9..=50.1).contains(&med), "{med}");
    }

    #[test]
    fn sinks_merge_counts_and_checks() {
        let mut total = Sink::default();
        let mut vu = Sink::default();
        vu.add(id::ITERATIONS, Kind::Counter, 1.0);
        vu.check("", "status is OK", true);
        vu.check("", "status is OK", false);
        total.take_from(&mut vu);
        vu.add(id::ITERATIONS, Kind::Counter, 1.0);
        vu.check("", "status is OK", true);
        total.take_from(&mut vu);
        assert_eq!(
            total.agg(id::ITERATIONS).unwrap().stat("count", 1.0),
            Some(2.0)
        );
        assert_eq!((total.checks[0].passes, total.checks[0].fails), (2, 1));
        assert!(
            vu.agg(id::ITERATIONS).is_none(),
            "a merged sink starts again empty"
        );
    }

    #[test]
    fn a_metric_name_and_type_are_checked() {
        let r = Registry::new();
        let a = r.define("my_counter", Kind::Counter, false).unwrap();
        assert_eq!(r.define("my_counter", Kind::Counter, false), Ok(a));
        assert!(
            r.define("my_counter", Kind::Trend, false)
                .unwrap_err()
                .contains("already exists")
        );
        assert!(r.define("1bad", Kind::Counter, false).is_err());
    }
}
