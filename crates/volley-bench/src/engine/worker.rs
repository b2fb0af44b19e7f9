//! A worker and its calls: the loop that takes call numbers from the shared counter, waits for
//! each one's intended send time under a pace, makes the call (under `-t` and the end of `-z`)
//! and records it in its thread's recorders. The engine's hot path.

use std::{
    cell::RefCell,
    rc::Rc,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{sync::watch, time::sleep_until};
use volley_wire::Status;

use super::shared::Shared;
use crate::{
    call::{self, Conn},
    callee::Target,
    plan::{
        options::{DurationStop, RunOptions, Stop},
        schedule::{Pacer, Ramp, Shape},
    },
    recorder::Recorder,
};

/// How much before a call is due a paced worker asks to wake: tokio's timer rounds up to its
/// millisecond ticks, and the runtime's park rounds up again, so this makes a wake early, not
/// late (measured: 1 ms left half the sends a fraction of a millisecond late).
const TIMER_TICK: Duration = Duration::from_millis(2);

/// What a thread's workers share: the run's options and target, the run's shared state, the
/// thread's recorders and pacer, and the start.
pub(super) struct ThreadCtx {
    pub(super) t: usize,
    pub(super) opts: RunOptions,
    pub(super) target: Arc<Target>,
    pub(super) shared: Arc<Shared>,
    pub(super) recorder: RefCell<Recorder>,
    /// One per entry of a mix (none otherwise).
    pub(super) methods: RefCell<Vec<Recorder>>,
    pub(super) pacer: Option<Pacer>,
    /// Counts finished calls for a progress display, when one watches.
    pub(super) progress: Option<Arc<AtomicU64>>,
    pub(super) start: Instant,
    pub(super) start_unix_nano: i64,
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

pub(super) async fn worker(ctx: Rc<ThreadCtx>, w: usize, conn_idx: usize, conn: Conn) {
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
    let worker_id: Arc<str> = format!("{}g{w}c{conn_idx}", ctx.target.worker_prefix()).into();
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
    worker_id: &Arc<str>,
    intended: Option<Instant>,
    mut stop_rx: watch::Receiver<bool>,
) -> bool {
    let opts = &ctx.opts;
    let interruptible =
        matches!(opts.stop, Stop::Duration(_)) && opts.duration_stop != DurationStop::Wait;
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
    if let Some(p) = &ctx.progress {
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
