//! The engine: one single-threaded runtime per thread, connections dialled on the thread whose
//! workers use them, workers pulling call numbers from one atomic counter, pacing by intended send
//! time, and one recorder per thread (and per method of a mix) merged at the end. When something
//! watches the run (`--live`, `--tui`, `--prometheus-listen`, `--abort-on`), each thread also
//! records into its `live` slot, which the run's watch loop takes as it goes.
//!
//! One file although over 400 lines: the run, a thread, a worker and one call are the one loop
//! of the engine, and they share its private state (`Shared`, `ThreadCtx`); what each call does is
//! in `call`.

use std::{
    cell::RefCell,
    rc::Rc,
    sync::{
        Arc, Barrier, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{sync::watch, task::LocalSet, time::sleep_until};
use volley_client::{Channel, Connection, Strategy, fast::Redialing, http1::Http1Connection};
use volley_wire::Status;

use crate::{
    call::{self, Conn},
    live::{Slots, Watch},
    plan::{
        options::{DurationStop, EndReason, RunOptions},
        schedule::{Pacer, Ramp, Shape},
    },
    recorder::Recorder,
    target::{
        Target,
        payload::{Payload, now_unix_nanos},
    },
};

/// How much before a call is due a paced worker asks to wake: tokio's timer rounds up to its
/// millisecond ticks, and the runtime's park rounds up again, so this makes a wake early, not
/// late (measured: 1 ms left half the sends a fraction of a millisecond late).
const TIMER_TICK: Duration = Duration::from_millis(2);

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
        }
    }
}

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A connection could not be opened.
    #[error("{0}")]
    Connect(String),
    /// Request data could not be made.
    #[error("{0}")]
    Data(String),
    /// `--start-at` had passed when every connection was ready.
    #[error("the start time had passed by {0:?} when every connection was ready")]
    MissedStart(Duration),
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

struct Shared {
    next: AtomicU64,
    stop: AtomicBool,
    stop_tx: watch::Sender<bool>,
    start: OnceLock<(Instant, i64)>,
    failure: Mutex<Option<BenchError>>,
    busy_ns: AtomicU64,
    lag_ns: AtomicU64,
    /// The largest lateness of any worker's last paced send: what the generator never caught up.
    final_lag_ns: AtomicU64,
    /// Calls finished, and those `--abort-on` counts, while the run goes (only with `--abort-on`).
    /// Each thread's calls since the watch loop last took them (`--live`, `--tui`,
    /// `--prometheus-listen`, `--abort-on`); empty when nothing watches.
    slots: Slots,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.stop_tx.send(true);
    }
    fn fail(&self, e: BenchError) {
        self.failure.lock().unwrap().get_or_insert(e);
        self.stop();
    }
}

/// Runs the plan against the target and returns what happened. Blocks the calling thread.
pub fn run(
    opts: &RunOptions,
    target: Arc<Target>,
    control: Arc<Control>,
) -> Result<Outcome, BenchError> {
    let conns = opts.connections.max(1);
    let h1 = target.has_own_connections();
    // HTTP/1.1 and custom calls: one connection per worker, split over threads. HTTP/2: each
    // thread runs a channel with its share of the strategy's connections.
    let slots = match opts.strategy {
        _ if h1 => conns,
        Strategy::PerRequest => opts.cpus,
        s => s.max_connections(),
    };
    let threads = opts.cpus.clamp(1, slots.max(1));
    let workers = opts.max_workers().max(1);
    let (stop_tx, _) = watch::channel(false);
    let shared = Arc::new(Shared {
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        stop_tx,
        start: OnceLock::new(),
        failure: Mutex::new(None),
        busy_ns: AtomicU64::new(0),
        lag_ns: AtomicU64::new(0),
        final_lag_ns: AtomicU64::new(0),
        slots: if opts.live.is_some() || opts.abort_on.is_some() {
            Slots::new(threads, target.methods().len())
        } else {
            Slots::default()
        },
    });
    let dialling = Instant::now();
    let connected = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
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
        let (connected, go) = (connected.clone(), go.clone());
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
                    thread_main(&opts, &target, &shared, &place, &connected, &go)
                })
                .expect("spawn a bench thread"),
        );
    }
    connected.wait();
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
    let connect = start - dialling;
    let started_unix_nano = now_unix_nanos();
    let _ = shared.start.set((start, started_unix_nano));
    go.wait();

    // Watch the clock and the cancel flag until the threads are done.
    let deadline = opts.duration.or(opts.max_duration).map(|d| start + d);
    let mut watch = shared.slots.on().then(|| {
        let names = target.methods().into_iter().map(|(n, _)| n).collect();
        Watch::new(
            opts.live.as_ref(),
            opts.abort_on.as_ref(),
            names,
            Pacer::of(opts),
            start,
        )
    });
    let mut end_reason = EndReason::Normal;
    let mut aborted = None;
    while !handles.iter().all(|h| h.is_finished()) {
        if let Some(why) = watch.as_mut().and_then(|w| w.poll(&shared.slots, false)) {
            if aborted.is_none() {
                aborted = Some(why);
                end_reason = EndReason::Cancel;
                shared.stop();
            }
        }
        if control.cancelled.load(Ordering::SeqCst) && !shared.stopped() {
            end_reason = EndReason::Cancel;
            shared.stop();
        }
        if let Some(d) = deadline {
            if Instant::now() >= d && !shared.stopped() {
                end_reason = EndReason::Timeout;
                shared.stop();
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let end = Instant::now();
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
    })
}

/// The recorder of one entry of a mix: per-call figures, no details.
fn method_recorder(opts: &RunOptions) -> Recorder {
    Recorder::new(opts.count_errors, opts.skip_first, 0)
}

struct ThreadCtx {
    t: usize,
    opts: RunOptions,
    target: Arc<Target>,
    shared: Arc<Shared>,
    recorder: RefCell<Recorder>,
    /// One per entry of a mix (none otherwise).
    methods: RefCell<Vec<Recorder>>,
    pacer: Option<Pacer>,
    start: Instant,
    start_unix_nano: i64,
}

/// Which thread this is, and its connections (HTTP/1.1) and workers.
struct Place {
    t: usize,
    threads: usize,
    my_conns: Vec<usize>,
    my_workers: Vec<usize>,
}

fn thread_main(
    opts: &RunOptions,
    target: &Arc<Target>,
    shared: &Arc<Shared>,
    place: &Place,
    connected: &Barrier,
    go: &Barrier,
) -> Option<(Recorder, Vec<Recorder>)> {
    let (my_conns, my_workers) = (&place.my_conns, &place.my_workers);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = LocalSet::new();
    let h1 = target.has_own_connections();
    let dialled = local.block_on(&rt, async {
        let mut out = Vec::new();
        // Unary gRPC calls take the fast path when nothing they need is the h2-crate path's
        // alone; if its connections cannot be made, the channel dials and says why.
        if fast_path(opts, target) {
            let n = match thread_share(opts, place.t, place.threads) {
                Strategy::Pool(n) => n,
                _ => 1,
            };
            for k in 0..n {
                match Redialing::connect(target.endpoint().clone()).await {
                    Ok(c) => out.push((k, Conn::Fast(Rc::new(c)))),
                    Err(_) => {
                        out.clear();
                        break;
                    }
                }
            }
            if !out.is_empty() {
                return out;
            }
        }
        if !h1 {
            let mut channel = Channel::balanced(
                target.endpoint().clone(),
                thread_share(opts, place.t, place.threads),
                opts.lb,
            );
            if let Some(config) = &opts.service_config {
                channel = channel.with_service_config(config.clone());
            }
            match channel.warm().await {
                Ok(()) => out.push((0, Conn::H2(channel))),
                Err(e) => shared.fail(BenchError::Connect(e.message().to_owned())),
            }
            return out;
        }
        for &c in my_conns.iter() {
            let conn = match target.as_ref() {
                Target::Custom(_) => Connection::connect(target.endpoint())
                    .await
                    .map(Conn::Own)
                    .map_err(|e| e.to_string()),
                _ => Http1Connection::connect(target.endpoint())
                    .await
                    .map(|c| Conn::H1(Rc::new(c)))
                    .map_err(|e| e.to_string()),
            };
            match conn {
                Ok(conn) => out.push((c, conn)),
                Err(e) => {
                    shared.fail(BenchError::Connect(e));
                    break;
                }
            }
        }
        out
    });
    connected.wait();
    go.wait();
    if shared.stopped() {
        return None;
    }
    let cpu_start = thread_cpu_time();
    let (start, start_unix_nano) = *shared.start.get().expect("start set before go");
    let ctx = Rc::new(ThreadCtx {
        t: place.t,
        opts: opts.clone(),
        target: target.clone(),
        shared: shared.clone(),
        recorder: RefCell::new(Recorder::new(
            opts.count_errors,
            opts.skip_first,
            opts.details_cap,
        )),
        methods: RefCell::new(
            target
                .methods()
                .iter()
                .map(|_| method_recorder(opts))
                .collect(),
        ),
        pacer: Pacer::of(opts),
        start,
        start_unix_nano,
    });
    local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for &w in my_workers.iter() {
            let conn_idx = w % opts.connections.max(1);
            // HTTP/2: the thread's one channel; HTTP/1.1: the worker's own connection.
            let conn = match dialled.first() {
                Some((_, Conn::Fast(_))) => dialled[w / place.threads % dialled.len()].1.clone(),
                _ => dialled
                    .iter()
                    .find(|(c, _)| !h1 || *c == conn_idx)
                    .map(|(_, conn)| conn.clone())
                    .expect("worker's connection dialled on its thread"),
            };
            tasks.push(tokio::task::spawn_local(worker(
                ctx.clone(),
                w,
                conn_idx,
                conn,
            )));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let busy = thread_cpu_time().saturating_sub(cpu_start);
    shared
        .busy_ns
        .fetch_add(busy.as_nanos() as u64, Ordering::Relaxed);
    drop(dialled);
    Rc::try_unwrap(ctx)
        .ok()
        .map(|c| (c.recorder.into_inner(), c.methods.into_inner()))
}

/// Whether a run's calls take the fast path (`volley_client::fast`): unary gRPC with a request
/// framed once and small enough for one DATA frame, one or a pool of connections to one address,
/// no service config, keepalive or reply size limit (the h2-crate path's features). The
/// environment's `VOLLEY_BENCH_CLIENT=h2` keeps every call on the h2-crate path.
fn fast_path(opts: &RunOptions, target: &Target) -> bool {
    if std::env::var("VOLLEY_BENCH_CLIENT").as_deref() == Ok("h2") {
        return false;
    }
    let Target::Grpc(g) = target else {
        return false;
    };
    g.kind == crate::target::CallKind::Unary
        && matches!(&g.payload, Payload::Static(f) if f.iter().all(|m| m.len() <= 16_384))
        && g.head.max_recv >= i32::MAX as usize
        && opts.service_config.is_none()
        && matches!(opts.strategy, Strategy::Single | Strategy::Pool(_))
        && !matches!(g.endpoint.target, volley_client::Target::List(_))
        && g.endpoint.keepalive.is_none()
}

/// Thread `t`'s part of the strategy: pools and expanding maxima split evenly over the threads.
fn thread_share(opts: &RunOptions, t: usize, threads: usize) -> Strategy {
    let share = |n: usize| (n / threads + usize::from(t < n % threads)).max(1);
    match opts.strategy {
        Strategy::Pool(n) => Strategy::Pool(share(n)),
        Strategy::Expanding { max } => Strategy::Expanding { max: share(max) },
        s => s,
    }
}

/// This thread's CPU time (user + system).
fn thread_cpu_time() -> Duration {
    cpu_time("/proc/thread-self/stat")
}

/// CPU time (user + system) from a `/proc/.../stat` file: a process (`/proc/PID/stat`,
/// `/proc/self/stat`) or a thread (`/proc/thread-self/stat`); zero when it cannot be read.
pub fn cpu_time(stat: &str) -> Duration {
    std::fs::read_to_string(stat)
        .ok()
        .and_then(|s| {
            let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(Duration::from_millis(ticks * 10))
        })
        .unwrap_or_default()
}

/// When worker `w` should start under the concurrency ramp, if ever.
fn start_time(ramp: &Ramp, w: usize) -> Option<Duration> {
    if ramp.shape == Shape::Const || ramp.value_at(Duration::ZERO) > w as f64 {
        return (ramp.value_at(Duration::ZERO) > w as f64 || ramp.shape == Shape::Const)
            .then_some(Duration::ZERO);
    }
    if ramp.step <= 0.0 {
        return None;
    }
    let len = match ramp.shape {
        Shape::Line => Duration::from_secs(1),
        _ => ramp.step_duration,
    };
    let k = ((w as f64 + 1.0 - ramp.start) / ramp.step).ceil().max(0.0) as u32;
    let at = len * k;
    (ramp.value_at(at) > w as f64).then_some(at)
}

async fn worker(ctx: Rc<ThreadCtx>, w: usize, conn_idx: usize, conn: Conn) {
    let opts = &ctx.opts;
    let shared = &ctx.shared;
    let Some(begin) = start_time(&opts.concurrency, w) else {
        return;
    };
    let mut stop_rx = shared.stop_tx.subscribe();
    if !begin.is_zero() {
        tokio::select! {
            () = sleep_until((ctx.start + begin).into()) => {}
            _ = stop_rx.wait_for(|s| *s) => return,
        }
    }
    let worker_id: Rc<str> = format!("{}g{w}c{conn_idx}", ctx.target.worker_prefix()).into();
    let ramped = opts.concurrency.shape != Shape::Const;
    // --async: calls are spawned and not awaited; this counts them so the worker can wait at the end.
    let in_flight = Rc::new((std::cell::Cell::new(0usize), tokio::sync::Notify::new()));
    // How late this worker's latest paced send was (a local: no shared write per call).
    let mut last_lag = Duration::ZERO;
    loop {
        if shared.stopped() {
            break;
        }
        if ramped && opts.concurrency.value_at(ctx.start.elapsed()) <= w as f64 {
            break;
        }
        let Some(i) = opts.call_number(shared.next.fetch_add(1, Ordering::Relaxed)) else {
            break;
        };
        let intended = match &ctx.pacer {
            None => None,
            Some(p) => match p.time_of(i) {
                None => break,
                Some(t) => {
                    let at = ctx.start + t;
                    let now = Instant::now();
                    last_lag = now.saturating_duration_since(at);
                    shared.slots.late(last_lag);
                    // tokio's timer ticks in milliseconds and wakes at the first tick at or
                    // after its deadline (and the runtime's park rounds up once more), so a
                    // sleep until `at` sends 0-2 ms late, and latency from `at` carried that
                    // (1.07 ms at the median of a -r 300 run where the service time's was
                    // 0.07). Asked for `TIMER_TICK` before `at`, it wakes before `at`: the call
                    // goes up to 2 ms early, and its latency is taken from the actual send.
                    let wake = at.checked_sub(TIMER_TICK).unwrap_or(at);
                    if wake > now {
                        tokio::select! {
                            () = sleep_until(wake.into()) => {}
                            _ = stop_rx.wait_for(|s| *s) => break,
                        }
                    } else if at <= now {
                        shared
                            .lag_ns
                            .fetch_max((now - at).as_nanos() as u64, Ordering::Relaxed);
                    }
                    Some(at)
                }
            },
        };
        if shared.stopped() {
            break;
        }
        if opts.async_mode {
            let (ctx, conn, id, flight) = (
                ctx.clone(),
                conn.clone(),
                worker_id.clone(),
                in_flight.clone(),
            );
            let stop = shared.stop_tx.subscribe();
            flight.0.set(flight.0.get() + 1);
            tokio::task::spawn_local(async move {
                one_call(&ctx, &conn, i, &id, intended, stop).await;
                flight.0.set(flight.0.get() - 1);
                flight.1.notify_one();
            });
            continue;
        }
        let finished = one_call(&ctx, &conn, i, &worker_id, intended, stop_rx.clone()).await;
        if !finished {
            break;
        }
    }
    shared
        .final_lag_ns
        .fetch_max(last_lag.as_nanos() as u64, Ordering::Relaxed);
    while in_flight.0.get() > 0 {
        in_flight.1.notified().await;
    }
}

/// Makes and records call `i`. Returns false when the end of `-z` cut it off (not recorded).
async fn one_call(
    ctx: &ThreadCtx,
    conn: &Conn,
    i: u64,
    worker_id: &str,
    intended: Option<Instant>,
    mut stop_rx: watch::Receiver<bool>,
) -> bool {
    let opts = &ctx.opts;
    let interruptible = opts.duration.is_some() && opts.duration_stop != DurationStop::Wait;
    let sent = Instant::now();
    let live = ctx.shared.slots.start_call(ctx.t);
    let (leaf, method) = ctx.target.leaf(i);
    let call = call::call(leaf, opts, conn, i, worker_id, &ctx.recorder);
    let result = match (interruptible, opts.timeout) {
        (false, None) => call.await,
        (false, Some(t)) => with_timeout(t, call).await,
        (true, t) => {
            let call = async {
                match t {
                    Some(t) => with_timeout(t, call).await,
                    None => call.await,
                }
            };
            let result = tokio::select! {
                biased;
                // Calls cut off by the end of -z are the generator's doing, not the server's:
                // `close` and `ignore` both leave them out (ghz counts them under `close` as
                // Unavailable "transport is closing").
                _ = stop_rx.wait_for(|s| *s) => return false,
                r = call => r,
            };
            // A call that failed after the clock ran out failed because of the cut-off: other
            // workers' streams were just reset on the same connection, which a server may answer
            // with GOAWAY ENHANCE_YOUR_CALM (h2's rapid-reset guard).
            if result.is_err() && *stop_rx.borrow() {
                return false;
            }
            result
        }
    };
    let done = Instant::now();
    // From the intended send when the call went late; from the actual one when the timer sent
    // it early (see `TIMER_TICK`).
    let latency = done - intended.map_or(sent, |at| at.min(sent));
    let service = done - sent;
    let wall = ctx.start_unix_nano + (sent - ctx.start).as_nanos() as i64;
    let mut rec = ctx.recorder.borrow_mut();
    // The second first: a call that opens a new second closes the last one's figures.
    rec.note_done((done - ctx.start).as_secs(), *result.as_ref().unwrap_or(&0));
    rec.record(
        i,
        wall,
        latency.as_nanos() as u64,
        service.as_nanos() as u64,
        result.as_ref().map(|_| ()),
    );
    drop(rec);
    if let Some(m) = method {
        ctx.methods.borrow_mut()[m].record(
            i,
            wall,
            latency.as_nanos() as u64,
            service.as_nanos() as u64,
            result.as_ref().map(|_| ()),
        );
    }
    if let Some(slot) = live {
        let code = match &result {
            Ok(_) => volley_wire::Code::Ok,
            Err(s) => s.code(),
        };
        slot.lock().unwrap().record(
            method,
            code,
            latency.as_nanos() as u64,
            service.as_nanos() as u64,
        );
    }
    if let Some(p) = &opts.progress {
        p.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// `call` under a timeout. A plain function, not an `async fn`: an `async fn` that takes a future
/// by value stores it twice, and this wraps every call.
fn with_timeout<T>(
    t: Duration,
    call: impl std::future::Future<Output = Result<T, Status>>,
) -> impl std::future::Future<Output = Result<T, Status>> {
    use futures_util::FutureExt;
    tokio::time::timeout(t, call)
        .map(|r| r.unwrap_or_else(|_| Err(Status::deadline_exceeded("context deadline exceeded"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_start_times_follow_the_ramp() {
        let c = Ramp::constant(10.0);
        assert_eq!(start_time(&c, 9), Some(Duration::ZERO));
        let step = Ramp {
            shape: Shape::Step,
            start: 2.0,
            end: 6.0,
            step: 2.0,
            step_duration: Duration::from_secs(1),
            max_duration: Duration::ZERO,
        };
        assert_eq!(start_time(&step, 1), Some(Duration::ZERO));
        assert_eq!(start_time(&step, 2), Some(Duration::from_secs(1)));
        assert_eq!(start_time(&step, 5), Some(Duration::from_secs(2)));
        assert_eq!(start_time(&step, 6), None);
    }
}
