//! Watching a run as it goes: each engine thread records its calls into its `Interval` slot
//! (`Slots`: one short lock per call, only when something watches), and the engine's watch
//! loop (`Watch`) takes every thread's, judges `--abort-on` on what it has seen so far, and
//! once per interval sends one merged [`Tick`] down a channel: what `--live` writes as NDJSON,
//! `--prometheus-listen` adds to its counters ([`Exposition`]) and `--tui` draws. A last tick
//! after the threads end carries the calls the last interval had, so the ticks add up to the
//! report. The tick itself, as the views read it, is in `tick`.

mod exposition;
mod interval;
mod tick;

pub use exposition::Exposition;
pub use tick::{MethodTick, Quantiles, Tick};

use std::{
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
        mpsc::Sender,
    },
    time::{Duration, Instant},
};

use volley_wire::Code;

use crate::{
    clock::process_cpu_time,
    plan::{
        schedule::Pacer,
        threshold::{Metric, Threshold},
    },
};
pub(crate) use interval::Interval;
use tick::State;

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

/// The engine's side: one interval slot per thread, and the counters the watch loop reads.
/// Empty (and untouched per call) when nothing watches the run.
#[derive(Default)]
pub(crate) struct Slots {
    intervals: Vec<Slot>,
    lag_ns: AtomicU64,
}

/// One engine thread's: its interval, and the calls it has started.
struct Slot {
    interval: Mutex<Interval>,
    /// Written by its thread alone (a current-thread runtime), read by the watch loop: a load
    /// and a store, not a shared read-modify-write (one locked instruction less per call, and
    /// no cache line that every thread writes).
    started: AtomicU64,
}

impl Slots {
    /// Slots for `threads` threads of a run with `methods` mix entries.
    pub(crate) fn new(threads: usize, methods: usize) -> Slots {
        Slots {
            intervals: (0..threads)
                .map(|_| Slot {
                    interval: Mutex::new(Interval::new(methods)),
                    started: AtomicU64::new(0),
                })
                .collect(),
            ..Slots::default()
        }
    }

    /// Whether anything watches.
    #[inline]
    pub(crate) fn on(&self) -> bool {
        !self.intervals.is_empty()
    }

    /// Thread `t`'s slot, when something watches; counts a call started (only thread `t` calls
    /// this with `t`).
    #[inline]
    pub(crate) fn start_call(&self, t: usize) -> Option<&Mutex<Interval>> {
        let slot = self.intervals.get(t)?;
        let n = slot.started.load(Ordering::Relaxed);
        slot.started.store(n + 1, Ordering::Relaxed);
        Some(&slot.interval)
    }

    /// Calls started so far, over every thread.
    fn started(&self) -> u64 {
        self.intervals
            .iter()
            .map(|s| s.started.load(Ordering::Relaxed))
            .sum()
    }

    /// Notes how late a paced send was.
    #[inline]
    pub(crate) fn late(&self, lag: Duration) {
        if self.on() {
            self.lag_ns
                .fetch_max(lag.as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// The watch loop's side: takes the threads' slots, judges `--abort-on` on every call seen so
/// far, and sends the ticks.
pub(crate) struct Watch {
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
    pub(crate) fn new(
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
            cpu: process_cpu_time(),
            calls: 0,
            statuses: [0; 17],
            ticked: 0,
        }
    }

    /// Takes the slots when due and sends a tick when one is due (`last`: the run is over, take
    /// and send what is left). Returns what was seen when `--abort-on` holds.
    pub(crate) fn poll(&mut self, slots: &Slots, last: bool) -> Option<String> {
        let now = Instant::now();
        let take_every = match (&self.abort, &self.live) {
            (Some(_), _) => ABORT_EVERY,
            (None, Some(l)) => l.every,
            (None, None) => return None,
        };
        if last || now - self.last_take >= take_every {
            let (calls, statuses) = (self.merged.all.calls, self.merged.all.statuses);
            for slot in &slots.intervals {
                self.merged.take_from(&mut slot.interval.lock().unwrap());
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
        let cpu = process_cpu_time();
        let elapsed = now - self.start;
        let started = slots.started();
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
