//! What every accept loop shares: its warnings rate-limited per reason, and the accept errors
//! that concern one connection only (the loop goes on) rather than the listener (it backs off).

use std::{
    collections::HashMap,
    io,
    time::{Duration, Instant},
};

use tracing::warn;

/// Accept-loop warnings, at most one line per reason per [`LOG_EVERY`]: the first at once, then
/// one with how many more there were (a flood of refusals, or an fd limit hit ten times a
/// second, would otherwise fill the log).
#[derive(Default)]
pub(crate) struct Logs {
    /// Reason -> when it was last logged, and how many since.
    seen: HashMap<&'static str, (Instant, u64)>,
}

/// How often one reason is logged, at most.
const LOG_EVERY: Duration = Duration::from_secs(10);

impl Logs {
    /// Notes one event of kind `key`; `line` is formatted only when it is logged (a flood of
    /// refused connections formats nothing between its lines).
    pub(crate) fn note(&mut self, key: &'static str, line: impl FnOnce() -> String) {
        let now = Instant::now();
        match self.seen.get_mut(key) {
            None => {
                warn!("{}", line());
                self.seen.insert(key, (now, 0));
            }
            Some((last, more)) => {
                *more += 1;
                if now.duration_since(*last) >= LOG_EVERY {
                    warn!("{} ({more} times in the last {LOG_EVERY:?})", line());
                    *last = now;
                    *more = 0;
                }
            }
        }
    }
}

pub(crate) fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}
