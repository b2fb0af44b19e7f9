//! The Prometheus text exposition of a run as it goes (`--prometheus-listen`): counters by
//! method and status summed over the ticks so far, a latency histogram of OK calls in
//! Prometheus' default buckets, and gauges of the latest tick (running, in flight, lag, busy
//! cores, rate, intended rate, p99).

use hdrhistogram::Histogram;

use super::{Quantiles, Tick};

/// Latency buckets of the exposition, seconds (Prometheus' defaults, from 0.5 ms).
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One method's running totals.
#[derive(Debug)]
struct MethodTotals {
    name: String,
    calls: Vec<(String, u64)>,
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_s: f64,
}

impl MethodTotals {
    fn add(&mut self, statuses: &[(String, u64)], h: &Histogram<u64>) {
        for (code, n) in statuses {
            match self.calls.iter_mut().find(|(c, _)| c == code) {
                Some((_, total)) => *total += n,
                None => self.calls.push((code.clone(), *n)),
            }
        }
        if h.is_empty() {
            return;
        }
        for (b, le) in self.buckets.iter_mut().zip(BUCKETS) {
            *b += h.count_between(0, (le * 1e9) as u64);
        }
        self.count += h.len();
        self.sum_s += h.mean() * h.len() as f64 / 1e9;
    }
}

/// The run's figures as Prometheus text: counters summed over the ticks so far, gauges of the
/// latest tick.
#[derive(Debug)]
pub struct Exposition {
    methods: Vec<MethodTotals>,
    in_flight: u64,
    lag_s: f64,
    cpu: f64,
    rate: f64,
    intended: Option<f64>,
    latency: Quantiles,
    running: bool,
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Exposition {
    /// Empty totals for a run calling `methods` (one name, or a mix's entries in order).
    pub fn new(methods: Vec<String>) -> Exposition {
        Exposition {
            methods: methods
                .into_iter()
                .map(|name| MethodTotals {
                    name,
                    calls: Vec::new(),
                    buckets: [0; BUCKETS.len()],
                    count: 0,
                    sum_s: 0.0,
                })
                .collect(),
            in_flight: 0,
            lag_s: 0.0,
            cpu: 0.0,
            rate: 0.0,
            intended: None,
            latency: Quantiles {
                p50: 0,
                p99: 0,
                p999: 0,
            },
            running: true,
        }
    }

    /// Adds a tick.
    pub fn add(&mut self, t: &Tick) {
        if t.methods.is_empty() {
            self.methods[0].add(&t.statuses.0, &t.latency_histogram);
        } else {
            for (totals, m) in self.methods.iter_mut().zip(&t.methods) {
                totals.add(&m.statuses.0, &m.histogram);
            }
        }
        self.in_flight = t.in_flight;
        self.lag_s = t.lag_ms / 1e3;
        self.cpu = t.cpu;
        self.rate = t.rate;
        self.intended = t.intended_rate;
        self.latency = t.latency.clone();
        self.running = !t.last;
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s += "# HELP volley_bench_calls_total Calls finished, by method and status.\n";
        s += "# TYPE volley_bench_calls_total counter\n";
        for m in &self.methods {
            for (code, n) in &m.calls {
                s += &format!(
                    "volley_bench_calls_total{{method=\"{}\",code=\"{code}\"}} {n}\n",
                    escape(&m.name)
                );
            }
        }
        s += "# HELP volley_bench_latency_seconds Latency of OK calls, from their intended send time.\n";
        s += "# TYPE volley_bench_latency_seconds histogram\n";
        for m in &self.methods {
            let name = escape(&m.name);
            for (le, n) in BUCKETS.iter().zip(m.buckets) {
                s += &format!(
                    "volley_bench_latency_seconds_bucket{{method=\"{name}\",le=\"{le}\"}} {n}\n"
                );
            }
            s += &format!(
                "volley_bench_latency_seconds_bucket{{method=\"{name}\",le=\"+Inf\"}} {}\n",
                m.count
            );
            s += &format!(
                "volley_bench_latency_seconds_sum{{method=\"{name}\"}} {}\n",
                m.sum_s
            );
            s += &format!(
                "volley_bench_latency_seconds_count{{method=\"{name}\"}} {}\n",
                m.count
            );
        }
        let gauges: [(&str, &str, f64); 7] = [
            (
                "volley_bench_running",
                "1 while the run goes, 0 after it.",
                f64::from(u8::from(self.running)),
            ),
            (
                "volley_bench_in_flight",
                "Calls started and not finished.",
                self.in_flight as f64,
            ),
            (
                "volley_bench_lag_seconds",
                "The latest a send of the last interval was behind its intended time.",
                self.lag_s,
            ),
            (
                "volley_bench_busy_cores",
                "Generator CPU in the last interval, in cores.",
                self.cpu,
            ),
            (
                "volley_bench_rate",
                "Calls finished per second in the last interval.",
                self.rate,
            ),
            (
                "volley_bench_intended_rate",
                "The rate the schedule asks for now (0 when unpaced).",
                self.intended.unwrap_or(0.0),
            ),
            (
                "volley_bench_p99_seconds",
                "p99 latency of the last interval.",
                self.latency.p99 as f64 / 1e9,
            ),
        ];
        for (name, help, v) in gauges {
            s += &format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{live::MethodTick, recorder::Ordered};

    fn histogram(ms: &[f64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in ms {
            h.record((v * 1e6) as u64).unwrap();
        }
        h
    }

    fn statuses(s: &[(&str, u64)]) -> Ordered {
        Ordered(s.iter().map(|(c, n)| (c.to_string(), *n)).collect())
    }

    fn tick(last: bool, codes: &[(&str, u64)], ms: &[f64], methods: Vec<MethodTick>) -> Tick {
        let q = Quantiles {
            p50: 0,
            p99: 2_000_000,
            p999: 0,
        };
        Tick {
            elapsed: 1.0,
            interval: 1.0,
            last,
            calls: codes.iter().map(|(_, n)| n).sum(),
            rate: 250.0,
            intended_rate: Some(300.0),
            in_flight: 7,
            lag_ms: 1.5,
            cpu: 0.25,
            errors: 0,
            statuses: statuses(codes),
            latency: q.clone(),
            service: q,
            methods,
            histogram: None,
            latency_histogram: histogram(ms),
        }
    }

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{text}"))
    }

    #[test]
    fn counters_add_up_over_ticks_and_gauges_are_the_latest() {
        let mut e = Exposition::new(vec!["api.Users.Get".into()]);
        e.add(&tick(
            false,
            &[("OK", 2), ("Unavailable", 1)],
            &[0.4, 3.0],
            vec![],
        ));
        e.add(&tick(true, &[("OK", 1)], &[20.0], vec![]));
        let text = e.render();
        let calls = "volley_bench_calls_total{method=\"api.Users.Get\",code=";
        assert_eq!(
            line(&text, &format!("{calls}\"OK\"}}")),
            format!("{calls}\"OK\"}} 3")
        );
        assert_eq!(
            line(&text, &format!("{calls}\"Unavailable\"}}")),
            format!("{calls}\"Unavailable\"}} 1")
        );
        // Buckets are cumulative: 0.4 ms under 0.5 ms, 3 ms under 5 ms, 20 ms under 25 ms.
        let bucket = |le: &str| {
            let p = format!(
                "volley_bench_latency_seconds_bucket{{method=\"api.Users.Get\",le=\"{le}\"}} "
            );
            line(&text, &p)[p.len()..].parse::<u64>().unwrap()
        };
        assert_eq!(
            [
                bucket("0.0005"),
                bucket("0.0025"),
                bucket("0.005"),
                bucket("0.01")
            ],
            [1, 1, 2, 2]
        );
        assert_eq!([bucket("0.025"), bucket("10"), bucket("+Inf")], [3, 3, 3]);
        let sum = line(&text, "volley_bench_latency_seconds_sum{");
        let sum: f64 = sum.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((sum - 0.0234).abs() < 0.0001, "{sum}");
        // Gauges: the last tick's; the run has ended.
        assert_eq!(
            line(&text, "volley_bench_running "),
            "volley_bench_running 0"
        );
        assert_eq!(
            line(&text, "volley_bench_in_flight "),
            "volley_bench_in_flight 7"
        );
        assert_eq!(
            line(&text, "volley_bench_lag_seconds "),
            "volley_bench_lag_seconds 0.0015"
        );
        assert_eq!(
            line(&text, "volley_bench_intended_rate "),
            "volley_bench_intended_rate 300"
        );
        assert_eq!(
            line(&text, "volley_bench_p99_seconds "),
            "volley_bench_p99_seconds 0.002"
        );
        // Every sample line follows its HELP and TYPE lines.
        assert_eq!(text.matches("# TYPE ").count(), 9);
    }

    #[test]
    fn a_mix_counts_each_entry_apart_and_names_are_escaped() {
        let entry = |call: &str, n: u64, ms: &[f64]| MethodTick {
            call: call.into(),
            calls: n,
            errors: 0,
            statuses: statuses(&[("OK", n)]),
            latency: Quantiles {
                p50: 0,
                p99: 0,
                p999: 0,
            },
            histogram: histogram(ms),
        };
        let mut e = Exposition::new(vec!["a\"b".into(), "c".into()]);
        e.add(&tick(
            false,
            &[("OK", 3)],
            &[1.0, 1.0, 1.0],
            vec![entry("a\"b", 1, &[1.0]), entry("c", 2, &[1.0, 1.0])],
        ));
        let text = e.render();
        assert!(text.contains("volley_bench_calls_total{method=\"a\\\"b\",code=\"OK\"} 1\n"));
        assert!(text.contains("volley_bench_calls_total{method=\"c\",code=\"OK\"} 2\n"));
        assert!(text.contains("volley_bench_latency_seconds_count{method=\"c\"} 2\n"));
        assert_eq!(
            line(&text, "volley_bench_running "),
            "volley_bench_running 1"
        );
    }
}
