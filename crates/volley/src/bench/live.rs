//! Where `volley bench`'s ticks go while a run goes: `--live` (one JSON line per interval),
//! `--prometheus-listen` (counters by method and code, a latency histogram and gauges, served
//! on `/metrics` and kept up `--linger` after the run) and `--tui` (`tui`). One thread takes
//! the engine's ticks and hands each to every sink asked for.

use std::{
    io::Write,
    net::SocketAddr,
    path::Path,
    sync::{
        Arc, Mutex,
        mpsc::{Receiver, RecvTimeoutError},
    },
    thread::JoinHandle,
    time::Duration,
};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use volley_bench::{
    Control,
    live::{Quantiles, Tick},
};

use super::tui::Tui;

/// The sinks of one run.
pub(super) struct Sinks {
    /// `--live`.
    pub ndjson: Option<Box<dyn Write + Send>>,
    /// `--prometheus-listen`.
    pub exposition: Option<Arc<Mutex<Exposition>>>,
    /// `--tui`.
    pub tui: Option<Tui>,
}

impl Sinks {
    /// `--live FILE|-`: where the lines go.
    pub(super) fn ndjson_to(path: &Path) -> Result<Box<dyn Write + Send>> {
        Ok(if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write --live {}", path.display()))?,
            ))
        })
    }

    /// Takes ticks until the last one, on a thread of its own.
    pub(super) fn spawn(
        mut self,
        rx: Receiver<Tick>,
        control: Arc<Control>,
    ) -> JoinHandle<Result<()>> {
        std::thread::spawn(move || {
            let result = self.run(&rx, &control);
            if let Some(tui) = self.tui.take() {
                tui.close();
            }
            result
        })
    }

    fn run(&mut self, rx: &Receiver<Tick>, control: &Control) -> Result<()> {
        loop {
            let tick = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(t) => t,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(tui) = &mut self.tui
                        && tui.quit_asked()?
                    {
                        control.cancel();
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            };
            if let Some(w) = &mut self.ndjson {
                serde_json::to_writer(&mut *w, &tick)?;
                w.write_all(b"\n")?;
                w.flush()?;
            }
            if let Some(e) = &self.exposition {
                e.lock().unwrap().add(&tick);
            }
            if let Some(tui) = &mut self.tui {
                tui.draw(&tick)?;
            }
            if tick.last {
                return Ok(());
            }
        }
    }
}

/// Latency buckets of the exposition, seconds (Prometheus' defaults, from 0.5 ms).
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One method's running totals.
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
pub(super) struct Exposition {
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
    pub(super) fn new(methods: Vec<String>) -> Exposition {
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
    pub(super) fn add(&mut self, t: &Tick) {
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
    pub(super) fn render(&self) -> String {
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

/// Serves `/metrics` from `exposition` on `addr` until the process ends; returns the address
/// bound (port 0 picks one).
pub(super) fn serve(addr: &str, exposition: Arc<Mutex<Exposition>>) -> Result<SocketAddr> {
    use http_body_util::Full;
    use hyper::Response;

    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("--prometheus-listen {addr:?}: expected host:port"))?;
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--prometheus-listen {addr}: cannot listen"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    crate::side_http::serve("volley-metrics", listener, move |req| {
        let (status, body) = if req.uri().path() == "/metrics" {
            (hyper::StatusCode::OK, exposition.lock().unwrap().render())
        } else {
            (
                hyper::StatusCode::NOT_FOUND,
                "volley bench serves /metrics\n".to_owned(),
            )
        };
        let mut reply = Response::new(Full::new(bytes::Bytes::from(body)));
        *reply.status_mut() = status;
        reply.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        std::future::ready(reply)
    })?;
    Ok(bound)
}
