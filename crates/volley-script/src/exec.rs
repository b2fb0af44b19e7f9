//! The executors: each scenario's VUs on threads of their own, started at the scenario's
//! `startTime`, iterating as its executor says (a shared or per-VU count of iterations, VUs
//! looping for a time or along stages, or iterations started at an arrival rate, open-loop: a
//! VU claims the next start time and waits for it, so a slow reply never delays the next
//! start, and a start no VU was free for counts in `dropped_iterations`, as in k6). At its end
//! a scenario waits `gracefulStop` for the iterations under way, then cuts them short.

use std::{
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use tokio::sync::watch;

use crate::{
    metrics::{Kind, id},
    options::{Executor, Scenario, Stage},
    shared::Shared,
    vu::{Outcome, ScenarioInfo, Vu},
};

/// How late a start may be claimed and still run: later than this, no VU was free for it.
const LATE: Duration = Duration::from_millis(1);

/// What a VU does next.
enum Next {
    Go,
    /// An arrival-rate start: wait for it, then go.
    At(Instant),
    /// Look again at this time (a ramp has no room for this VU now).
    Wait(Instant),
    Stop,
}

/// A scenario while it runs.
pub(crate) struct ScenarioRun {
    pub sc: Scenario,
    start: Instant,
    end: Instant,
    claimed: AtomicU64,
    clock: Mutex<ArrivalClock>,
    stop_tx: watch::Sender<bool>,
    pub completed: AtomicU64,
    pub interrupted: AtomicU64,
    pub active: AtomicU64,
    spawned: AtomicU64,
    want_more: AtomicBool,
    pub finished: AtomicBool,
    interrupts: Mutex<Vec<Arc<AtomicBool>>>,
}

/// The start times of an arrival-rate scenario.
struct ArrivalClock {
    /// Seconds from the scenario's start of the next iteration.
    next: f64,
    /// Iterations per second at a time (seconds from the start), and the end.
    rate: RateFn,
}

enum RateFn {
    Constant {
        per_sec: f64,
        end: f64,
    },
    Ramping {
        start: f64,
        stages: Vec<(f64, f64)>,
        per_unit: f64,
    },
}

impl RateFn {
    fn end(&self) -> f64 {
        match self {
            RateFn::Constant { end, .. } => *end,
            RateFn::Ramping { stages, .. } => stages.iter().map(|(d, _)| d).sum(),
        }
    }

    /// Iterations per second at `t`.
    fn at(&self, t: f64) -> f64 {
        match self {
            RateFn::Constant { per_sec, .. } => *per_sec,
            RateFn::Ramping {
                start,
                stages,
                per_unit,
            } => {
                let (mut from, mut at) = (*start, 0.0);
                for (d, target) in stages {
                    if t < at + d {
                        let f = if *d > 0.0 { (t - at) / d } else { 1.0 };
                        return (from + (target - from) * f) * per_unit;
                    }
                    at += d;
                    from = *target;
                }
                from * per_unit
            }
        }
    }
}

impl ArrivalClock {
    /// The next start, as seconds from the scenario's start, or `None` past its end.
    fn take(&mut self) -> Option<f64> {
        let end = self.rate.end();
        loop {
            if self.next >= end {
                return None;
            }
            let r = self.rate.at(self.next);
            if r <= 0.0 {
                // A stretch at rate zero: step over it.
                self.next += 0.001;
                continue;
            }
            let t = self.next;
            self.next += 1.0 / r;
            return Some(t);
        }
    }
}

fn stages_secs(stages: &[Stage]) -> Vec<(f64, f64)> {
    stages
        .iter()
        .map(|s| (s.duration.as_secs_f64(), s.target))
        .collect()
}

impl ScenarioRun {
    fn new(sc: Scenario, start: Instant) -> ScenarioRun {
        let end = start + sc.executor.max_duration();
        let rate = match &sc.executor {
            Executor::ConstantArrivalRate {
                rate,
                time_unit,
                duration,
                ..
            } => RateFn::Constant {
                per_sec: rate / time_unit.as_secs_f64(),
                end: duration.as_secs_f64(),
            },
            Executor::RampingArrivalRate {
                start_rate,
                time_unit,
                stages,
                ..
            } => RateFn::Ramping {
                start: *start_rate,
                stages: stages_secs(stages),
                per_unit: 1.0 / time_unit.as_secs_f64(),
            },
            _ => RateFn::Constant {
                per_sec: 0.0,
                end: 0.0,
            },
        };
        ScenarioRun {
            sc,
            start,
            end,
            claimed: AtomicU64::new(0),
            clock: Mutex::new(ArrivalClock { next: 0.0, rate }),
            stop_tx: watch::channel(false).0,
            completed: AtomicU64::new(0),
            interrupted: AtomicU64::new(0),
            active: AtomicU64::new(0),
            spawned: AtomicU64::new(0),
            want_more: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            interrupts: Mutex::new(Vec::new()),
        }
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
        let t = now.saturating_duration_since(self.start).as_secs_f64();
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
                if now >= self.end || self.claimed.fetch_add(1, Ordering::Relaxed) >= *iterations {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::PerVuIterations { iterations, .. } => {
                if now >= self.end || own_iters >= *iterations {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::ConstantVus { .. } => {
                if now >= self.end {
                    Next::Stop
                } else {
                    Next::Go
                }
            }
            Executor::RampingVus { .. } => {
                if now >= self.end {
                    Next::Stop
                } else if (vu_index as f64) < self.ramp_target(now).floor() {
                    Next::Go
                } else {
                    Next::Wait(now + Duration::from_millis(10))
                }
            }
            Executor::ConstantArrivalRate { .. } | Executor::RampingArrivalRate { .. } => {
                let t = self.clock.lock().unwrap_or_else(|e| e.into_inner()).take();
                match t {
                    None => Next::Stop,
                    Some(t) => Next::At(self.start + Duration::from_secs_f64(t)),
                }
            }
        }
    }
}

/// The run's scenarios, started and waited for.
pub(crate) struct Runner {
    pub runs: Vec<Arc<ScenarioRun>>,
    handles: Vec<JoinHandle<()>>,
    /// The first VU that could not start: the script's error.
    pub init_error: Arc<OnceLock<String>>,
}

impl Runner {
    /// Starts every scenario (each at its `startTime`).
    pub(crate) fn start(shared: &Arc<Shared>, scenarios: Vec<Scenario>) -> Runner {
        let t0 = Instant::now();
        let init_error = Arc::new(OnceLock::new());
        let mut runs = Vec::new();
        let mut handles = Vec::new();
        let mut next_vu = 1u64;
        for sc in scenarios {
            let first_vu = next_vu;
            next_vu += sc.executor.max_vus();
            shared
                .vus_max
                .fetch_add(sc.executor.max_vus(), Ordering::Relaxed);
            let run = Arc::new(ScenarioRun::new(sc.clone(), t0 + sc.start_time));
            runs.push(run.clone());
            let shared = shared.clone();
            let init_error = init_error.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("scenario {}", sc.name))
                    .spawn(move || scenario(shared, run, first_vu, init_error))
                    .expect("a thread for the scenario"),
            );
        }
        Runner {
            runs,
            handles,
            init_error,
        }
    }

    /// Whether every scenario has ended.
    pub(crate) fn done(&self) -> bool {
        self.runs.iter().all(|r| r.finished.load(Ordering::Relaxed))
    }

    pub(crate) fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// One scenario: waits for its start, runs its VUs, stops them.
fn scenario(
    shared: Arc<Shared>,
    run: Arc<ScenarioRun>,
    first_vu: u64,
    init_error: Arc<OnceLock<String>>,
) {
    let now = Instant::now();
    if run.start > now {
        std::thread::sleep(run.start - now);
    }
    let spawn = |n: u64| -> JoinHandle<()> {
        let (shared, run, init_error) = (shared.clone(), run.clone(), init_error.clone());
        run.spawned.fetch_add(1, Ordering::Relaxed);
        std::thread::Builder::new()
            .name(format!("vu {}", first_vu + n))
            .stack_size(4 * 1024 * 1024)
            .spawn(move || vu_thread(shared, run, first_vu + n, n, init_error))
            .expect("a thread for a VU")
    };
    let mut vus: Vec<JoinHandle<()>> = (0..run.initial_vus()).map(spawn).collect();
    let max = run.sc.executor.max_vus();
    let hard_at = run.end + run.sc.graceful_stop;
    loop {
        if vus.iter().all(JoinHandle::is_finished) {
            break;
        }
        let now = Instant::now();
        if now >= hard_at || (shared.is_aborted() && now >= run.start) {
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
        if run.want_more.swap(false, Ordering::Relaxed) && (vus.len() as u64) < max && now < run.end
        {
            vus.push(spawn(vus.len() as u64));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for h in vus {
        let _ = h.join();
    }
    run.finished.store(true, Ordering::Relaxed);
}

fn vu_thread(
    shared: Arc<Shared>,
    run: Arc<ScenarioRun>,
    vu_id: u64,
    index: u64,
    init_error: Arc<OnceLock<String>>,
) {
    let mut vu = match Vu::new(shared.clone(), vu_id) {
        Ok(vu) => vu,
        Err(e) => {
            let _ = init_error.set(e.0);
            shared.abort("a VU could not start".into());
            return;
        }
    };
    run.interrupts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(vu.interrupt_flag());
    let info = ScenarioInfo {
        name: run.sc.name.clone(),
        executor: run.sc.executor.name(),
        tags: run.sc.tags.clone(),
        started: Some(run.start),
        iter: 0,
    };
    vu.enter(info, run.stop_tx.subscribe(), &run.sc.env);
    shared.vus_active.fetch_add(1, Ordering::Relaxed);
    run.active.fetch_add(1, Ordering::Relaxed);
    let mut own = 0u64;
    loop {
        if shared.is_aborted() || *run.stop_tx.borrow() {
            break;
        }
        match run.next(index, own) {
            Next::Stop => break,
            Next::Wait(t) => {
                std::thread::sleep(t.saturating_duration_since(Instant::now()));
                continue;
            }
            Next::At(t) => {
                let now = Instant::now();
                if now > t + LATE {
                    vu.st.record(id::DROPPED_ITERATIONS, Kind::Counter, 1.0);
                    vu.st.flush(false);
                    run.want_more.store(true, Ordering::Relaxed);
                    continue;
                }
                if t > now {
                    std::thread::sleep(t - now);
                }
            }
            Next::Go => {}
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
    drop(vu);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_clock_spaces_starts_by_its_rate() {
        let mut c = ArrivalClock {
            next: 0.0,
            rate: RateFn::Constant {
                per_sec: 4.0,
                end: 1.0,
            },
        };
        let starts: Vec<f64> = std::iter::from_fn(|| c.take()).collect();
        assert_eq!(starts, vec![0.0, 0.25, 0.5, 0.75]);
        // From 0 to 10 per second over one second: about 5 starts.
        let mut c = ArrivalClock {
            next: 0.0,
            rate: RateFn::Ramping {
                start: 0.0,
                stages: vec![(1.0, 10.0)],
                per_unit: 1.0,
            },
        };
        let n = std::iter::from_fn(|| c.take()).count();
        assert!((4..=6).contains(&n), "{n}");
    }
}
