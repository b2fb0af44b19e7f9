//! What a run's threads share with the loop that watches them: the call counter, the stop flag
//! (and its channel, which wakes sleeping workers), the start time, the first failure, the busy
//! and lateness counters, and the live slots.

use std::{
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Instant,
};

use tokio::sync::watch;

use super::error::BenchError;
use crate::{live::Slots, plan::RunOptions, recorder::Recorder};

pub(super) struct Shared {
    pub(super) next: AtomicU64,
    pub(super) stop: AtomicBool,
    pub(super) stop_tx: watch::Sender<bool>,
    pub(super) start: OnceLock<(Instant, i64)>,
    pub(super) failure: Mutex<Option<BenchError>>,
    pub(super) busy_ns: AtomicU64,
    pub(super) lag_ns: AtomicU64,
    /// The largest lateness of any worker's last paced send: what the generator never caught up.
    pub(super) final_lag_ns: AtomicU64,
    /// A thread's fast-path connections could not be made and it took the h2-crate path.
    pub(super) fast_dial_failed: AtomicBool,
    /// Each thread's calls since the watch loop last took them (`--live`, `--tui`,
    /// `--prometheus-listen`, `--abort-on`); empty when nothing watches.
    pub(super) slots: Slots,
}

impl Shared {
    pub(super) fn new(slots: Slots) -> Shared {
        let (stop_tx, _) = watch::channel(false);
        Shared {
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stop_tx,
            start: OnceLock::new(),
            failure: Mutex::new(None),
            fast_dial_failed: AtomicBool::new(false),
            busy_ns: AtomicU64::new(0),
            lag_ns: AtomicU64::new(0),
            final_lag_ns: AtomicU64::new(0),
            slots,
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.stop_tx.send(true);
    }
    pub(super) fn fail(&self, e: BenchError) {
        self.failure.lock().unwrap().get_or_insert(e);
        self.stop();
    }
}

/// The recorder of one entry of a mix: per-call figures, no details.
pub(super) fn method_recorder(opts: &RunOptions) -> Recorder {
    Recorder::new(opts.count_errors, opts.skip_first, 0)
}
