//! What watches a run as it goes, as the plan asks for it: `--tui`, `--live`,
//! `--prometheus-listen`, `--dashboard`, how often (`--live-interval`) and how long /metrics stays up after
//! the run (`--linger`). The caller draws and serves them; the engine's ticks feed them.

use std::{path::PathBuf, time::Duration};

/// The watchers asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WatchOptions {
    /// `--tui`: a full-screen view on the terminal.
    pub tui: bool,
    /// `--live FILE|-`: one JSON line per interval.
    pub live: Option<PathBuf>,
    /// `--live-histograms`: each line carries its interval's latency histogram.
    pub histograms: bool,
    /// `--live-interval`: one tick per this long.
    pub every: Duration,
    /// `--prometheus-listen ADDR`: the run's figures on `/metrics`.
    pub prometheus: Option<String>,
    /// `--dashboard [ADDR]`: the run's live page.
    pub dashboard: Option<String>,
    /// `--dashboard-export FILE`: the page, with the whole run, written at the end.
    pub dashboard_export: Option<PathBuf>,
    /// `--linger`: how long `/metrics` and the dashboard stay up after the run.
    pub linger: Duration,
}

impl WatchOptions {
    /// Whether anything watches the run (so the engine sends ticks).
    pub fn any(&self) -> bool {
        self.tui
            || self.live.is_some()
            || self.prometheus.is_some()
            || self.dashboard.is_some()
            || self.dashboard_export.is_some()
    }
}
