//! The executors: each scenario's VUs, as coroutines on the workers, started at the scenario's
//! `startTime`, iterating as its executor says (a shared or per-VU count of iterations, VUs
//! looping for a time or along stages, or iterations started at an arrival rate, open-loop:
//! the idle VU holding the turn claims the next start time and waits for it, so a slow reply
//! never delays the next start, and a start no VU was free for counts in
//! `dropped_iterations`, as in k6). At its end
//! a scenario waits `gracefulStop` for the iterations under way, then cuts them short.

use std::{
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use tokio::sync::{Notify, watch};

use crate::{
    arrival::{ArrivalClock, Taken, Turn},
    metrics::{Kind, id},
    options::{Executor, Scenario, Stage},
    sched::{self, Workers},
    shared::Shared,
    state::ScenarioInfo,
    vu::{Outcome, Vu},
};

/// How late a start may be claimed and still run: later than this, no VU was free for it.
const LATE: Duration = Duration::from_millis(1);

/// What a VU does next.
enum Next {
    Go,
    /// Look again at this time (a ramp has no room for this VU now).
    Wait(Instant),
    Stop,
}

/// A scenario while it runs.
pub(crate) struct ScenarioRun {
    pub sc: Scenario,
    /// Its start and end, set once every VU of the run has run its init code.
    times: OnceLock<(Instant, Instant)>,
    claimed: AtomicU64,
    clock: Mutex<ArrivalClock>,
    /// Which idle VU claims an arrival rate's next start.
    turn: Turn,
    stop_tx: watch::Sender<bool>,
    pub completed: AtomicU64,
    pub interrupted: AtomicU64,
    pub active: AtomicU64,
    spawned: AtomicU64,
    want_more: AtomicBool,
    pub finished: AtomicBool,
    interrupts: Mutex<Vec<Arc<AtomicBool>>>,
    /// Iterations started by all its VUs.
    iterations: Arc<AtomicU64>,
    /// VUs started and not yet ended.
    alive: AtomicU64,
}

fn stages_secs(stages: &[Stage]) -> Vec<(f64, f64)> {
    stages
        .iter()
        .map(|s| (s.duration.as_secs_f64(), s.target))
        .collect()
}

impl ScenarioRun {
    fn new(sc: Scenario) -> ScenarioRun {
        let clock = match &sc.executor {
            Executor::ConstantArrivalRate {
                rate,
                time_unit,
                duration,
                ..
            } => ArrivalClock::constant(rate / time_unit.as_secs_f64(), duration.as_secs_f64()),
            Executor::RampingArrivalRate {
                start_rate,
                time_unit,
                stages,
                ..
            } => ArrivalClock::ramping(
                *start_rate,
                &stages_secs(stages),
                1.0 / time_unit.as_secs_f64(),
            ),
            _ => ArrivalClock::constant(0.0, 0.0),
        };
        let clock = match sc.stripe {
            Some(s) => clock.striped(s.index, s.count),
            None => clock,
        };
        ScenarioRun {
            sc,
            times: OnceLock::new(),
            claimed: AtomicU64::new(0),
            clock: Mutex::new(clock),
            turn: Turn::default(),
            stop_tx: watch::channel(false).0,
            completed: AtomicU64::new(0),
            interrupted: AtomicU64::new(0),
            active: AtomicU64::new(0),
            spawned: AtomicU64::new(0),
            want_more: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            interrupts: Mutex::new(Vec::new()),
            iterations: Arc::new(AtomicU64::new(0)),
            alive: AtomicU64::new(0),
        }
    }

    /// Its start and end, once the run has begun (until then, a short wait).
    fn times(&self) -> (Instant, Instant) {
        loop {
            if let Some(t) = self.times.get() {
                return *t;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn begin(&self, start: Instant) {
        let _ = self
            .times
            .set((start, start + self.sc.executor.max_duration()));
    }

    /// The VUs this scenario starts with.
    fn initial_vus(&self) -> u64 {
        match &self.sc.executor {
            Executor::ConstantArrivalRate { pre_allocated, .. }
            | Executor::RampingArrivalRate { pre_allocated, .. } => *pre_allocated,
            e => e.max_vus(),
        }
    }

    /// VUs wanted by a ramp at `now`.
    fn ramp_target(&self, now: Instant) -> f64 {
        let Executor::RampingVus {
            start_vus, stages, ..
        } = &self.sc.executor
        else {
            return 0.0;
        };
        let t = now.saturating_duration_since(self.times().0).as_secs_f64();
        let (mut from, mut at) = (*start_vus as f64, 0.0);
        for s in stages {
            let d = s.duration.as_secs_f64();
            if t < at + d {
                let f = if d > 0.0 { (t - at) / d } else { 1.0 };
                return from + (s.target - from) * f;
            }
            at += d;
            from = s.target;
        }
        from
    }

    fn next(&self, vu_index: u64, own_iters: u64) -> Next {
        let now = Instant::now();
        match &self.sc.executor {
            Executor::SharedIterations { iterations, .. } => {
                if now >= self.times().1
                    || self.claimed.fetch_add(1, Ordering::Relaxed) >= *iterations
                {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::PerVuIterations { iterations, .. } => {
                if now >= self.times().1 || own_iters >= *iterations {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::ConstantVus { .. } => {
                if now >= self.times().1 {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::RampingVus { .. } => {
                if now >= self.times().1 {
                    Next::Stop
                } else if (vu_index as f64) < self.ramp_target(now).floor() {
                    Next::Go
                } else {
                    Next::Wait(now + Duration::from_millis(10))
                }
            }
            // Their VUs claim starts through the turn (`claim_start`).
            Executor::ConstantArrivalRate { .. } | Executor::RampingArrivalRate { .. } => {
                Next::Stop
            }
        }
    }

    /// An arrival rate's next start, or `None` past its end.
    fn take_start(&self) -> Option<Instant> {
        let t = self
            .clock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        Some(self.times().0 + Duration::from_secs_f64(t))
    }
}

/// The run's scenarios, started and waited for.
pub(crate) struct Runner {
    pub runs: Vec<Arc<ScenarioRun>>,
    handles: Vec<JoinHandle<()>>,
    workers: Arc<Workers>,
    /// The first VU that could not start: the script's error.
    pub init_error: Arc<OnceLock<String>>,
}

/// What a VU's body needs to start.
#[derive(Clone)]
struct Start {
    shared: Arc<Shared>,
    run: Arc<ScenarioRun>,
    workers: Arc<Workers>,
    init_error: Arc<OnceLock<String>>,
    /// VUs that have run their init code, and the signal that the run has begun.
    ready: Arc<AtomicU64>,
    started: watch::Receiver<bool>,
}

impl Runner {
    /// Starts every scenario (each at its `startTime`) on one worker per core. Every VU a
    /// scenario starts with runs the script's init code first; the clock starts when all
    /// have (as k6 initializes its VUs before the test).
    pub(crate) fn start(shared: &Arc<Shared>, scenarios: Vec<Scenario>) -> std::io::Result<Runner> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = Arc::new(Workers::new(cores)?);
        let init_error = Arc::new(OnceLock::new());
        let ready = Arc::new(AtomicU64::new(0));
        let (started_tx, started) = watch::channel(false);
        let mut initial = 0;
        let mut runs = Vec::new();
        let mut handles = Vec::new();
        let mut next_vu = 1u64;
        for sc in scenarios {
            let first_vu = next_vu;
            next_vu += sc.executor.max_vus();
            shared
                .vus_max
                .fetch_add(sc.executor.max_vus(), Ordering::Relaxed);
            let run = Arc::new(ScenarioRun::new(sc.clone()));
            runs.push(run.clone());
            let start = Start {
                shared: shared.clone(),
                run: run.clone(),
                workers: workers.clone(),
                init_error: init_error.clone(),
                ready: ready.clone(),
                started: started.clone(),
            };
            for n in 0..run.initial_vus() {
                spawn_vu(&start, first_vu + n, true);
            }
            initial += run.initial_vus();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("scenario {}", sc.name))
                    .spawn(move || supervise(&start, first_vu))?,
            );
        }
        while ready.load(Ordering::Acquire) < initial {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t0 = Instant::now();
        for run in &runs {
            run.begin(t0 + run.sc.start_time);
        }
        let _ = started_tx.send(true);
        Ok(Runner {
            runs,
            handles,
            workers,
            init_error,
        })
    }

    /// Whether every scenario has ended.
    pub(crate) fn done(&self) -> bool {
        self.runs.iter().all(|r| r.finished.load(Ordering::Relaxed))
    }

    /// Waits for the scenarios (each waits for its VUs), then for the workers.
    pub(crate) fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
        if let Ok(workers) = Arc::try_unwrap(self.workers) {
            workers.join();
        }
    }
}

/// Starts VU `vu_id` (the scenario's `spawned`-th) on a worker.
fn spawn_vu(start: &Start, vu_id: u64, initial: bool) {
    let index = start.run.spawned.fetch_add(1, Ordering::Relaxed);
    start.run.alive.fetch_add(1, Ordering::AcqRel);
    let s = start.clone();
    start
        .workers
        .spawn(Box::new(move || vu_body(&s, vu_id, index, initial)));
}

/// One scenario: runs until its VUs have ended, cutting them short after its graceful stop,
/// adding VUs an arrival rate needs.
fn supervise(start: &Start, first_vu: u64) {
    let (run, shared) = (&start.run, &start.shared);
    let max = run.sc.executor.max_vus();
    let (begin, end) = run.times();
    let hard_at = end + run.sc.graceful_stop;
    loop {
        if run.alive.load(Ordering::Acquire) == 0 {
            break;
        }
        let now = Instant::now();
        if now >= hard_at || (shared.is_aborted() && now >= begin) {
            // The graceful stop is over (or the run aborted): cut the iterations short.
            let _ = run.stop_tx.send(true);
            for f in run
                .interrupts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
            {
                f.store(true, Ordering::Relaxed);
            }
        }
        let spawned = run.spawned.load(Ordering::Relaxed);
        if run.want_more.swap(false, Ordering::Relaxed) && spawned < max && now < end {
            spawn_vu(start, first_vu + spawned, false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    run.finished.store(true, Ordering::Relaxed);
}

/// An arrival-rate VU's next start: it waits for the turn (see [`Turn`]), takes the next
/// start from the clock, waits for it and passes the turn on. A start that came due while the
/// turn was free (every VU in an iteration) and is now later than [`LATE`] had no VU free for
/// it: it counts in `dropped_iterations` and asks for another VU. A start a VU was idle for
/// runs even if late (a timer's tick or a busy core delayed it). `false` once the scenario is
/// over or stopping.
fn claim_start(vu: &Vu, run: &ScenarioRun, shared: &Shared, me: &Arc<Notify>) -> bool {
    let freed_at = match run.turn.take_or_queue(me) {
        Taken::Free(at) => at,
        Taken::Queued => {
            if vu.st.block(me.notified()).is_none() {
                run.turn.leave(me);
                return false;
            }
            None
        }
    };
    let mut dropped = false;
    let at = loop {
        if shared.is_aborted() || *run.stop_tx.borrow() {
            break None;
        }
        let Some(t) = run.take_start() else {
            break None;
        };
        let now = Instant::now();
        let unattended = freed_at.is_some_and(|f| t >= f);
        if !unattended || now <= t + LATE {
            break Some((t, now));
        }
        vu.st.record(id::DROPPED_ITERATIONS, Kind::Counter, 1.0);
        run.want_more.store(true, Ordering::Relaxed);
        dropped = true;
    };
    if dropped {
        vu.st.flush(false);
    }
    let go = match at {
        None => false,
        Some((t, now)) => t <= now || vu.st.block(tokio::time::sleep_until(t.into())).is_some(),
    };
    run.turn.pass();
    go
}

/// A VU's life, on its worker: init, wait for the run's start, iterate as the executor says.
fn vu_body(start: &Start, vu_id: u64, index: u64, initial: bool) {
    let (run, shared) = (&start.run, &start.shared);
    let made = Vu::new(shared.clone(), vu_id, false);
    if initial {
        start.ready.fetch_add(1, Ordering::AcqRel);
        let mut started = start.started.clone();
        sched::block_on(async move {
            let _ = started.wait_for(|s| *s).await;
        });
    }
    match made {
        Ok(mut vu) => iterate(&mut vu, run, shared, index),
        Err(e) => {
            let _ = start.init_error.set(e.0);
            shared.abort("a VU could not start".into());
        }
    }
    run.alive.fetch_sub(1, Ordering::AcqRel);
}

/// Iterates until the executor, the hard stop or an abort says to stop.
fn iterate(vu: &mut Vu, run: &ScenarioRun, shared: &Shared, index: u64) {
    run.interrupts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(vu.interrupt_flag());
    let (start, _) = run.times();
    let info = ScenarioInfo {
        name: run.sc.name.clone(),
        executor: run.sc.executor.name(),
        tags: run.sc.tags.clone(),
        started: Some(start),
        iter: 0,
        scenario_iters: run.iterations.clone(),
        scenario_iter: 0,
    };
    vu.enter(info, run.stop_tx.subscribe(), &run.sc.env);
    shared.vus_active.fetch_add(1, Ordering::Relaxed);
    run.active.fetch_add(1, Ordering::Relaxed);
    let wait_until = |vu: &Vu, t: Instant| {
        vu.st.block(tokio::time::sleep_until(t.into()));
    };
    // An arrival rate's VUs claim their first start before the run begins and wait for it
    // there (so the first start is not late by a timer's tick); the others wait for the start.
    if !matches!(
        run.sc.executor,
        Executor::ConstantArrivalRate { .. } | Executor::RampingArrivalRate { .. }
    ) {
        wait_until(vu, start);
    }
    let arrival = matches!(
        run.sc.executor,
        Executor::ConstantArrivalRate { .. } | Executor::RampingArrivalRate { .. }
    );
    let me = Arc::new(Notify::new());
    let mut own = 0u64;
    loop {
        if shared.is_aborted() || *run.stop_tx.borrow() {
            break;
        }
        if arrival {
            if !claim_start(vu, run, shared, &me) {
                break;
            }
        } else {
            match run.next(index, own) {
                Next::Stop => break,
                Next::Wait(t) => {
                    wait_until(vu, t);
                    continue;
                }
                Next::Go => {}
            }
        }
        own += 1;
        match vu.iterate(&run.sc.exec) {
            Outcome::Interrupted => {
                run.interrupted.fetch_add(1, Ordering::Relaxed);
                shared.interrupted.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                run.completed.fetch_add(1, Ordering::Relaxed);
                shared.completed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    run.active.fetch_sub(1, Ordering::Relaxed);
    shared.vus_active.fetch_sub(1, Ordering::Relaxed);
    vu.st.flush(true);
}
