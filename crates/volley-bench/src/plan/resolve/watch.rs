//! The watch section: `--tui`, `--live`, `--prometheus-listen`, `--dashboard` and their companions, checked
//! together (whether stdout is a terminal for `--tui` is the caller's to check: it draws).

use std::{path::Path, time::Duration};

use crate::plan::{PlanError, args::BenchArgs, units::parse_duration, watch::WatchOptions};

/// Resolves the watch section.
pub(super) fn watch(a: &BenchArgs) -> Result<WatchOptions, PlanError> {
    let duration = |flag: &str, v: &Option<String>, default: u64| -> Result<_, PlanError> {
        match v {
            None => Ok(Duration::from_millis(default)),
            Some(s) => parse_duration(s).map_err(|e| PlanError::new(format!("{flag}: {e}"))),
        }
    };
    let every = duration("--live-interval", &a.live_interval, 1000)?;
    if every < Duration::from_millis(100) {
        bail!("--live-interval: give 100ms or more");
    }
    if a.tui && a.live.as_deref() == Some(Path::new("-")) {
        bail!("--tui draws on the terminal: give --live a file, not -");
    }
    if a.linger.is_some() && a.prometheus_listen.is_none() && a.dashboard.is_none() {
        bail!("--linger keeps --prometheus-listen or --dashboard up after the run: give one");
    }
    Ok(WatchOptions {
        tui: a.tui,
        live: a.live.clone(),
        histograms: a.live_histograms,
        every,
        prometheus: a.prometheus_listen.clone(),
        dashboard: a.dashboard.clone(),
        dashboard_export: a.dashboard_export.clone(),
        linger: duration("--linger", &a.linger, 0)?,
    })
}
