//! The engine: one single-threaded runtime per thread, connections dialled on the thread whose
//! workers use them, workers pulling call numbers from one atomic counter, pacing by intended send
//! time, and one recorder per thread (and per method of a mix) merged at the end. When something
//! watches the run ([`Observers`]' live ticks, `--abort-on`), each thread also records into its
//! `live` slot, which the run's watch loop takes as it goes.
//!
//! Here the run itself: threads started, the start (`--start-at`), the watch loop (clock, Ctrl-C,
//! `--abort-on`, ticks) and the merge. A thread is in `thread` (its dialling, and the fast path's
//! in `fast_path`), a worker and its calls in `worker`, what they share in `shared`.

mod error;
mod fast_path;
mod shared;
mod thread;
mod worker;

use std::{
    sync::{
        Arc, Barrier,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{
    callee::{Target, payload::now_unix_nanos},
    live::{Live, Slots, Watch},
    plan::options::{EndReason, RunOptions},
    recorder::Recorder,
};
pub use error::BenchError;
use shared::{Shared, method_recorder};
use thread::{Place, thread_main};

/// A run's raw results.
#[derive(Debug)]
pub struct Outcome {
    /// Everything recorded, merged.
    pub recorder: Recorder,
    /// Wall time from the start (after dialling) to the end.
    pub total: Duration,
    /// Why the run ended.
    pub end_reason: EndReason,
    /// Start, nanoseconds since the Unix epoch.
    pub started_unix_nano: i64,
    /// The pacer fell behind its schedule by more than 10% of the run (the rate asked was not kept).
    pub rate_not_kept: bool,
    /// Worker threads were busy for more than 90% of the run: the generator may have been the limit.
    pub generator_saturated: bool,
    /// At the end, sends were still late by more than 10% of the run: the generator never
    /// caught up with the rate asked (unlike a stall it recovered from, which `rate_not_kept`
    /// also flags and corrected latency charges to the server).
    pub rate_unreachable: bool,
    /// The `--abort-on` condition that stopped the run, with what was seen, if one did.
    pub aborted: Option<String>,
    /// Time to dial every connection, before the run started.
    pub connect: Duration,
    /// CPU time (user + system) of the worker threads during the run.
    pub cpu: Duration,
    /// A mix's calls, per entry, in the mix's order (empty when the target is not a mix).
    pub methods: Vec<MethodOutcome>,
    /// Which HTTP/2 client a gRPC method's calls took: `fast`, or `h2 (why)`; `None` for other
    /// targets (HTTP, mixes, custom calls).
    pub client_path: Option<String>,
}

/// The calls of one entry of a mix.
#[derive(Debug, Clone)]
pub struct MethodOutcome {
    /// The entry's name (`api.Users.Get`).
    pub name: String,
    /// Its weight in the mix.
    pub weight: u64,
    /// Its calls (per-call figures only: no details, no per-second timeline).
    pub recorder: Recorder,
}

impl Outcome {
    /// The outcome of calls recorded elsewhere (merged results, a script's calls): what
    /// `recorder` holds over `total` from `started_unix_nano`, with none of a run's flags.
    pub fn recorded(recorder: Recorder, total: Duration, started_unix_nano: i64) -> Outcome {
        Outcome {
            recorder,
            total,
            end_reason: EndReason::Normal,
            started_unix_nano,
            rate_not_kept: false,
            generator_saturated: false,
            rate_unreachable: false,
            aborted: None,
            connect: Duration::ZERO,
            cpu: Duration::ZERO,
            methods: Vec::new(),
            client_path: None,
        }
    }

    /// The outcome of one entry of a mix: the run's times and flags, the entry's calls.
    pub fn of_method(&self, m: &MethodOutcome) -> Outcome {
        Outcome {
            recorder: m.recorder.clone(),
            total: self.total,
            end_reason: self.end_reason,
            started_unix_nano: self.started_unix_nano,
            rate_not_kept: self.rate_not_kept,
            generator_saturated: self.generator_saturated,
            rate_unreachable: self.rate_unreachable,
            aborted: None,
            connect: self.connect,
            cpu: Duration::ZERO,
            methods: Vec::new(),
            client_path: None,
        }
    }
}

/// Lets another thread stop a run (Ctrl-C).
#[derive(Default)]
pub struct Control {
    cancelled: AtomicBool,
}

impl Control {
    /// Ends the run early; its report says `cancel`.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
}

/// What watches a run as it goes, handed to [`run`] beside the plan (nothing, by default). The
/// run drops it when it ends, which closes the live channel.
#[derive(Clone, Debug, Default)]
pub struct Observers {
    /// Counts finished calls, for a progress display.
    pub progress: Option<Arc<AtomicU64>>,
    /// Where the ticks go (`--live`, `--prometheus-listen`, `--tui`).
    pub live: Option<Live>,
}

/// A thread's recorders, handed back when it ends (`None`: it never started).
type ThreadResult = Option<(Recorder, Vec<Recorder>)>;

/// Runs the plan against the target and returns what happened. Blocks the calling thread.
pub fn run(
    opts: &RunOptions,
    target: Arc<Target>,
    control: Arc<Control>,
    observers: Observers,
) -> Result<Outcome, BenchError> {
    let conns = opts.connections.max(1);
    let h1 = target.has_own_connections();
    // HTTP/1.1 and custom calls: one connection per worker, split over threads. HTTP/2: each
    // thread runs a channel with its share of the strategy's connections.
    let slots = match opts.strategy {
        _ if h1 => conns,
        volley_client::Strategy::PerRequest => opts.cpus,
        s => s.max_connections(),
    };
    let threads = opts.cpus.clamp(1, slots.max(1));
    let shared = Arc::new(Shared::new(
        if observers.live.is_some() || opts.abort_on.is_some() {
            Slots::new(threads, target.methods().len())
        } else {
            Slots::default()
        },
    ));
    let dialling = Instant::now();
    let connected = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
    let handles = spawn_threads(
        opts,
        &target,
        &shared,
        &observers,
        threads,
        (&connected, &go),
    );
    connected.wait();
    // Dialling only: a shard's wait for the agreed start is not connection time.
    let connect = dialling.elapsed();
    if let Some(at) = opts.start_at {
        match at.duration_since(std::time::SystemTime::now()) {
            Ok(wait) => std::thread::sleep(wait),
            Err(late) => {
                // Every shard must start together: one that is late ends here, having sent
                // nothing.
                shared.stop();
                go.wait();
                for h in handles {
                    let _ = h.join();
                }
                return Err(BenchError::MissedStart(late.duration()));
            }
        }
    }
    let start = Instant::now();
    let started_unix_nano = now_unix_nanos();
    let _ = shared.start.set((start, started_unix_nano));
    go.wait();

    let mut watch = shared.slots.on().then(|| {
        let names = target.methods().into_iter().map(|(n, _)| n).collect();
        Watch::new(
            observers.live.as_ref(),
            opts.abort_on.as_ref(),
            names,
            opts.pace.pacer(),
            start,
        )
    });
    let (end_reason, aborted) =
        watch_until_done(opts, &shared, &control, watch.as_mut(), &handles, start);
    let end = Instant::now();
    let (merged, methods) = collect(opts, &target, handles);
    if let Some(w) = &mut watch {
        // The last tick; an --abort-on that holds only now did not stop anything.
        let _ = w.poll(&shared.slots, true);
    }
    if let Some(e) = shared.failure.lock().unwrap().take() {
        return Err(e);
    }
    let total = end - start;
    let busy = Duration::from_nanos(shared.busy_ns.load(Ordering::Relaxed));
    let lag = Duration::from_nanos(shared.lag_ns.load(Ordering::Relaxed));
    let final_lag = Duration::from_nanos(shared.final_lag_ns.load(Ordering::Relaxed));
    Ok(Outcome {
        recorder: merged.unwrap_or_else(|| Recorder::new(opts.count_errors, opts.skip_first, 0)),
        total,
        end_reason,
        started_unix_nano,
        rate_not_kept: opts.paced() && lag > total / 10,
        rate_unreachable: opts.paced() && final_lag > total / 10,
        aborted,
        generator_saturated: busy.as_secs_f64() > 0.9 * total.as_secs_f64() * threads as f64,
        connect,
        cpu: busy,
        methods,
        client_path: match &*target {
            Target::Grpc(_) | Target::Mix(_) => Some(match fast_path::why_not(opts, &target) {
                None if shared.fast_dial_failed.load(Ordering::Relaxed) => {
                    "h2 (the fast path's connections could not be made)".to_owned()
                }
                None => "fast".to_owned(),
                Some(why) => format!("h2 ({why})"),
            }),
            _ => None,
        },
    })
}

/// Starts the run's threads, each with its connections and workers (a shard's only).
fn spawn_threads(
    opts: &RunOptions,
    target: &Arc<Target>,
    shared: &Arc<Shared>,
    observers: &Observers,
    threads: usize,
    barriers: (&Arc<Barrier>, &Arc<Barrier>),
) -> Vec<JoinHandle<ThreadResult>> {
    let conns = opts.connections.max(1);
    let h1 = target.has_own_connections();
    let workers = opts.max_workers().max(1);
    let mut handles = Vec::new();
    for t in 0..threads {
        // HTTP/1.1 connections belong to workers: a shard dials only its workers' ones.
        let my_conns: Vec<usize> = (0..conns)
            .filter(|c| c % threads == t)
            .filter(|c| !h1 || (0..workers).any(|w| opts.runs_worker(w) && w % conns == *c))
            .collect();
        let my_workers: Vec<usize> = (0..workers)
            .filter(|w| opts.runs_worker(*w))
            .filter(|w| if h1 { (w % conns) % threads } else { w % threads } == t)
            .collect();
        let (opts, target, shared) = (opts.clone(), target.clone(), shared.clone());
        let (connected, go) = (barriers.0.clone(), barriers.1.clone());
        let progress = observers.progress.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("volley-bench-{t}"))
                .spawn(move || {
                    let place = Place {
                        t,
                        threads,
                        my_conns,
                        my_workers,
                    };
                    thread_main(&opts, &target, &shared, &place, progress, (&connected, &go))
                })
                .expect("spawn a bench thread"),
        );
    }
    handles
}

/// Watches the clock, the cancel flag and `--abort-on` until the threads are done; returns why
/// the run ended, and what `--abort-on` saw if it stopped the run.
fn watch_until_done(
    opts: &RunOptions,
    shared: &Shared,
    control: &Control,
    mut watch: Option<&mut Watch>,
    handles: &[JoinHandle<ThreadResult>],
    start: Instant,
) -> (EndReason, Option<String>) {
    let deadline = opts.deadline().map(|d| start + d);
    let mut end_reason = EndReason::Normal;
    let mut aborted = None;
    while !handles.iter().all(|h| h.is_finished()) {
        if let Some(why) = watch.as_mut().and_then(|w| w.poll(&shared.slots, false))
            && aborted.is_none()
        {
            aborted = Some(why);
            end_reason = EndReason::Cancel;
            shared.stop();
        }
        if control.cancelled.load(Ordering::SeqCst) && !shared.stopped() {
            end_reason = EndReason::Cancel;
            shared.stop();
        }
        if let Some(d) = deadline
            && Instant::now() >= d
            && !shared.stopped()
        {
            end_reason = EndReason::Timeout;
            shared.stop();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    (end_reason, aborted)
}

/// Joins the threads and merges their recorders: the run's, and each mix entry's.
fn collect(
    opts: &RunOptions,
    target: &Target,
    handles: Vec<JoinHandle<ThreadResult>>,
) -> (Option<Recorder>, Vec<MethodOutcome>) {
    let mut merged: Option<Recorder> = None;
    let mut methods: Vec<MethodOutcome> = target
        .methods()
        .into_iter()
        .map(|(name, weight)| MethodOutcome {
            name,
            weight,
            recorder: method_recorder(opts),
        })
        .collect();
    for h in handles {
        if let Some((r, per_method)) = h.join().expect("bench thread panicked") {
            match &mut merged {
                None => merged = Some(r),
                Some(m) => m.merge(r),
            }
            for (m, r) in methods.iter_mut().zip(per_method) {
                m.recorder.merge(r);
            }
        }
    }
    (merged, methods)
}
