//! Watching a run as it goes: each engine thread records its calls into its [`Interval`] slot
//! ([`Slots`]: one short lock per call, only when something watches), and the engine's watch
//! loop ([`Watch`]) takes every thread's, judges `--abort-on` on what it has seen so far, and
//! once per interval sends one merged [`Tick`] down a channel: what `--live` writes as NDJSON,
//! `--prometheus-listen` adds to its counters and `--tui` draws. A last tick after the threads
//! end carries the calls the last interval had, so the ticks add up to the report.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
        mpsc::Sender,
    },
    time::{Duration, Instant},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use hdrhistogram::{
    Histogram,
    serialization::{Serializer, V2DeflateSerializer},
};
use serde::Serialize;
use volley_wire::{ALL_CODES, Code};

use crate::{
    engine::cpu_time,
    gate::{Metric, Threshold},
    plan::schedule::Pacer,
    report::Ordered,
};

/// Where ticks go, and how often.
#[derive(Clone, Debug)]
pub struct Live {
    /// One tick per this long.
    pub every: Duration,
    /// Carry each interval's latency histogram (HdrHistogram V2, base64) in its tick.
    pub histograms: bool,
    /// The ticks.
    pub tx: Sender<Tick>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// One method's calls in an interval.
#[derive(Clone, Debug)]
pub struct MethodInterval {
    /// Calls finished.
    pub calls: u64,
    /// Calls per status code.
    pub statuses: [u64; 17],
    /// Latency of the OK calls (from the intended send time), ns.
    pub latency: Histogram<u64>,
}

impl MethodInterval {
    fn new() -> MethodInterval {
        MethodInterval {
            calls: 0,
            statuses: [0; 17],
            latency: histogram(),
        }
    }

    fn add(&mut self, o: &MethodInterval) {
        self.calls += o.calls;
        for (a, b) in self.statuses.iter_mut().zip(o.statuses) {
            *a += b;
        }
        let _ = self.latency.add(&o.latency);
    }

    fn reset(&mut self) {
        self.calls = 0;
        self.statuses = [0; 17];
        self.latency.reset();
    }
}

/// What one thread (or, merged, the run) recorded in an interval.
#[derive(Clone, Debug)]
pub struct Interval {
    /// All calls.
    pub all: MethodInterval,
    /// Service time (from the actual send) of the OK calls, ns.
    pub service: Histogram<u64>,
    /// Per entry of a mix (empty otherwise).
    pub methods: Vec<MethodInterval>,
}

impl Interval {
    /// An empty interval for a run with `methods` mix entries.
    pub fn new(methods: usize) -> Interval {
        Interval {
            all: MethodInterval::new(),
            service: histogram(),
            methods: (0..methods).map(|_| MethodInterval::new()).collect(),
        }
    }

    /// Records one finished call.
    pub fn record(&mut self, method: Option<usize>, code: Code, latency_ns: u64, service_ns: u64) {
        let one = |m: &mut MethodInterval| {
            m.calls += 1;
            m.statuses[code as usize] += 1;
            if code == Code::Ok {
                m.latency.saturating_record(latency_ns.max(1));
            }
        };
        one(&mut self.all);
        if let Some(m) = method.and_then(|m| self.methods.get_mut(m)) {
            one(m);
        }
        if code == Code::Ok {
            self.service.saturating_record(service_ns.max(1));
        }
    }

    /// Empties it (its histograms keep their memory).
    pub fn clear(&mut self) {
        self.all.reset();
        self.service.reset();
        self.methods.iter_mut().for_each(MethodInterval::reset);
    }

    /// Adds `o` into this one and empties `o`.
    pub fn take_from(&mut self, o: &mut Interval) {
        self.all.add(&o.all);
        let _ = self.service.add(&o.service);
        for (a, b) in self.methods.iter_mut().zip(&o.methods) {
            a.add(b);
        }
        o.clear();
    }
}

/// The engine's side: one interval slot per thread, and the counters the watch loop reads.
/// Empty (and untouched per call) when nothing watches the run.
#[derive(Default)]
pub struct Slots {
    intervals: Vec<Mutex<Interval>>,
    started: AtomicU64,
    lag_ns: AtomicU64,
}

impl Slots {
    /// Slots for `threads` threads of a run with `methods` mix entries.
    pub fn new(threads: usize, methods: usize) -> Slots {
        Slots {
            intervals: (0..threads)
                .map(|_| Mutex::new(Interval::new(methods)))
                .collect(),
            ..Slots::default()
        }
    }

    /// Whether anything watches.
    #[inline]
    pub fn on(&self) -> bool {
        !self.intervals.is_empty()
    }

    /// Thread `t`'s slot, when something watches; counts a call started.
    #[inline]
    pub fn start_call(&self, t: usize) -> Option<&Mutex<Interval>> {
        let slot = self.intervals.get(t)?;
        self.started.fetch_add(1, Ordering::Relaxed);
        Some(slot)
    }

    /// Notes how late a paced send was.
    #[inline]
    pub fn late(&self, lag: Duration) {
        if self.on() {
            self.lag_ns
                .fetch_max(lag.as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// The watch loop's side: takes the threads' slots, judges `--abort-on` on every call seen so
/// far, and sends the ticks.
pub struct Watch {
    live: Option<Live>,
    abort: Option<Threshold>,
    names: Vec<String>,
    pacer: Option<Pacer>,
    start: Instant,
    last_tick: Instant,
    last_take: Instant,
    cpu: Duration,
    /// Calls finished, and per status, over the whole run so far.
    calls: u64,
    statuses: [u64; 17],
    /// Calls finished by the last tick.
    ticked: u64,
    merged: Interval,
}

/// How often `--abort-on` is judged (the slots are taken this often when it is given).
const ABORT_EVERY: Duration = Duration::from_millis(20);

impl Watch {
    /// The watch of a run that started at `start` (`names`: its mix's entries).
    pub fn new(
        live: Option<&Live>,
        abort: Option<&Threshold>,
        names: Vec<String>,
        pacer: Option<Pacer>,
        start: Instant,
    ) -> Watch {
        Watch {
            live: live.cloned(),
            abort: abort.cloned(),
            merged: Interval::new(names.len()),
            names,
            pacer,
            start,
            last_tick: start,
            last_take: start,
            cpu: cpu_time("/proc/self/stat"),
            calls: 0,
            statuses: [0; 17],
            ticked: 0,
        }
    }

    /// Takes the slots when due and sends a tick when one is due (`last`: the run is over, take
    /// and send what is left). Returns what was seen when `--abort-on` holds.
    pub fn poll(&mut self, slots: &Slots, last: bool) -> Option<String> {
        let now = Instant::now();
        let take_every = match (&self.abort, &self.live) {
            (Some(_), _) => ABORT_EVERY,
            (None, Some(l)) => l.every,
            (None, None) => return None,
        };
        if last || now - self.last_take >= take_every {
            let (calls, statuses) = (self.merged.all.calls, self.merged.all.statuses);
            for slot in &slots.intervals {
                self.merged.take_from(&mut slot.lock().unwrap());
            }
            self.calls += self.merged.all.calls - calls;
            for (total, (after, before)) in self
                .statuses
                .iter_mut()
                .zip(self.merged.all.statuses.iter().zip(statuses))
            {
                *total += after - before;
            }
            self.last_take = now;
        }
        let tick_due = self
            .live
            .as_ref()
            .is_some_and(|l| last || now - self.last_tick >= l.every);
        if tick_due {
            let tick = self.tick(slots, now, last);
            if let Some(live) = &self.live {
                let _ = live.tx.send(tick);
            }
        }
        let t = self.abort.as_ref()?;
        let matching = match t.metric {
            Metric::Status(c) => self.statuses[c as usize],
            _ => self.calls - self.statuses[Code::Ok as usize],
        };
        // Judged once there is something to judge: 50 calls.
        (self.calls >= 50 && t.op.holds(matching as f64 / self.calls as f64, t.limit))
            .then(|| format!("{} ({matching} of {} calls)", t.text, self.calls))
    }

    fn tick(&mut self, slots: &Slots, now: Instant, last: bool) -> Tick {
        let cpu = cpu_time("/proc/self/stat");
        let elapsed = now - self.start;
        let started = slots.started.load(Ordering::Relaxed);
        self.ticked += self.merged.all.calls;
        let tick = Tick::new(
            &self.merged,
            &State {
                elapsed: elapsed.as_secs_f64(),
                interval: (now - self.last_tick).as_secs_f64(),
                last,
                intended_rate: self.pacer.as_ref().map(|p| p.rate_at(elapsed)),
                in_flight: started.saturating_sub(self.ticked),
                lag: Duration::from_nanos(slots.lag_ns.swap(0, Ordering::Relaxed)),
                cpu: cpu.saturating_sub(self.cpu),
                names: &self.names,
                histograms: self.live.as_ref().is_some_and(|l| l.histograms),
            },
        );
        self.merged.clear();
        self.last_tick = now;
        self.cpu = cpu;
        tick
    }
}

/// Latency quantiles of an interval, ns (0 when it had no OK call).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Quantiles {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: u64,
}

impl Quantiles {
    fn of(h: &Histogram<u64>) -> Quantiles {
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Quantiles {
            p50: q(0.5),
            p99: q(0.99),
            p999: q(0.999),
        }
    }
}

/// One method's line of a tick.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodTick {
    /// The entry's name.
    pub call: String,
    /// Calls finished in the interval.
    pub calls: u64,
    /// Failed ones.
    pub errors: u64,
    /// Calls per status name (grpc-go's names), non-zero only.
    pub statuses: Ordered,
    /// Latency of its OK calls.
    pub latency: Quantiles,
    /// Its calls' latencies, for sinks that keep histograms (not serialized).
    #[serde(skip)]
    pub histogram: Histogram<u64>,
}

/// One interval of a run, merged over its threads.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tick {
    /// Seconds from the start to the interval's end.
    pub elapsed: f64,
    /// The interval's length in seconds.
    pub interval: f64,
    /// Whether this is the last tick (the run has ended).
    pub last: bool,
    /// Calls finished in the interval.
    pub calls: u64,
    /// Calls finished per second.
    pub rate: f64,
    /// The rate the schedule asked for at the interval's end (`null` when unpaced).
    pub intended_rate: Option<f64>,
    /// Calls started and not finished at the interval's end.
    pub in_flight: u64,
    /// The latest any send of the interval was behind its intended time, ms.
    pub lag_ms: f64,
    /// The generator's CPU in the interval, in cores (1.0: one core busy).
    pub cpu: f64,
    /// Failed calls.
    pub errors: u64,
    /// Calls per status name, non-zero only.
    pub statuses: Ordered,
    /// Latency from the intended send time (what the report's percentiles are).
    pub latency: Quantiles,
    /// Service time, from the actual send.
    pub service: Quantiles,
    /// Per entry of a mix (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodTick>,
    /// The interval's latency histogram, HdrHistogram V2 deflate in base64 (`--live-histograms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// The interval's latencies, for sinks that keep histograms (not serialized).
    #[serde(skip)]
    pub latency_histogram: Histogram<u64>,
}

fn statuses(s: &[u64; 17]) -> Ordered {
    Ordered(
        ALL_CODES
            .iter()
            .zip(s)
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| (c.go_name().to_owned(), *n))
            .collect(),
    )
}

/// How the run stood at a tick, beside the calls of its interval.
pub struct State<'a> {
    /// Seconds since the start.
    pub elapsed: f64,
    /// Seconds since the last tick.
    pub interval: f64,
    /// The run has ended.
    pub last: bool,
    /// The schedule's rate now, if paced.
    pub intended_rate: Option<f64>,
    /// Calls started and not finished.
    pub in_flight: u64,
    /// Worst lateness of a send in the interval.
    pub lag: Duration,
    /// Generator CPU time in the interval.
    pub cpu: Duration,
    /// Names of the mix's entries.
    pub names: &'a [String],
    /// Carry the histogram.
    pub histograms: bool,
}

impl Tick {
    /// The tick of an interval's merged calls.
    pub fn new(i: &Interval, s: &State<'_>) -> Tick {
        let per = s.interval.max(1e-9);
        let errors = |m: &MethodInterval| m.calls - m.statuses[Code::Ok as usize];
        Tick {
            elapsed: s.elapsed,
            interval: s.interval,
            last: s.last,
            calls: i.all.calls,
            rate: i.all.calls as f64 / per,
            intended_rate: s.intended_rate,
            in_flight: s.in_flight,
            lag_ms: s.lag.as_secs_f64() * 1e3,
            cpu: s.cpu.as_secs_f64() / per,
            errors: errors(&i.all),
            statuses: statuses(&i.all.statuses),
            latency: Quantiles::of(&i.all.latency),
            service: Quantiles::of(&i.service),
            methods: i
                .methods
                .iter()
                .zip(s.names)
                .map(|(m, name)| MethodTick {
                    call: name.clone(),
                    calls: m.calls,
                    errors: errors(m),
                    statuses: statuses(&m.statuses),
                    latency: Quantiles::of(&m.latency),
                    histogram: m.latency.clone(),
                })
                .collect(),
            histogram: s.histograms.then(|| encode(&i.all.latency)),
            latency_histogram: i.all.latency.clone(),
        }
    }
}

fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_empty_the_threads_ones() {
        let mut a = Interval::new(2);
        let mut b = Interval::new(2);
        a.record(Some(0), Code::Ok, 1_000_000, 900_000);
        a.record(Some(1), Code::Unavailable, 5_000_000, 5_000_000);
        b.record(Some(0), Code::Ok, 3_000_000, 3_000_000);
        let mut merged = Interval::new(2);
        merged.take_from(&mut a);
        merged.take_from(&mut b);
        assert_eq!(a.all.calls + b.all.calls, 0);
        let names = ["get".to_owned(), "list".to_owned()];
        let t = Tick::new(
            &merged,
            &State {
                elapsed: 2.0,
                interval: 0.5,
                last: false,
                intended_rate: Some(10.0),
                in_flight: 4,
                lag: Duration::from_millis(3),
                cpu: Duration::from_millis(250),
                names: &names,
                histograms: true,
            },
        );
        assert_eq!((t.calls, t.errors, t.rate), (3, 1, 6.0));
        assert_eq!(t.cpu, 0.5);
        assert_eq!(
            t.statuses.0,
            [("OK".to_owned(), 2), ("Unavailable".to_owned(), 1)]
        );
        assert_eq!(t.methods[0].calls, 2);
        assert_eq!(t.methods[1].errors, 1);
        assert!(t.latency.p99 >= 2_990_000 && t.latency.p99 <= 3_010_000);
        let line = serde_json::to_value(&t).unwrap();
        assert_eq!(line["statuses"]["OK"], 2);
        assert!(line["histogram"].as_str().is_some_and(|h| !h.is_empty()));
        assert_eq!(line["latency"]["p99.9"], t.latency.p999);
    }
}
