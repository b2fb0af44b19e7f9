//! What `volley bench` shows while a run goes: the progress bar on stderr when it is a terminal,
//! or the sinks of `live` (`--tui`, `--live`, `--prometheus-listen`, `--dashboard`), fed through
//! the engine's [`Observers`]. Stopped when the engine ends, before the report is written (and
//! `--dashboard-export` with it); `--linger` keeps `/metrics` and the dashboard up after it.

use std::{
    io::IsTerminal,
    path::PathBuf,
    sync::{Arc, Mutex, atomic::AtomicU64, mpsc},
    thread::JoinHandle,
    time::Duration,
};

use anyhow::Result;
use volley_bench::{Control, Observers, Plan, live::Live};

use super::{live, tui::Tui};
use crate::progress::Bar;
use volley_bench::live::Exposition;
use volley_ui::dashboard::{self, Board};

/// The terminal's side of a run.
pub(super) struct Screen {
    bar: Option<Bar>,
    sinks: Option<JoinHandle<Result<()>>>,
    /// `--linger`, when `--prometheus-listen` or `--dashboard` serves.
    linger: Option<Duration>,
    /// `--dashboard-export`: the board and where its page goes at the end.
    export: Option<(Arc<Board>, PathBuf)>,
}

impl Screen {
    /// Starts what the plan asks for, and gives the engine's side of it.
    pub(super) fn start(plan: &Plan, control: &Arc<Control>) -> Result<(Screen, Observers)> {
        let watch = &plan.watch;
        let mut observers = Observers::default();
        let mut sinks = None;
        let mut export = None;
        if watch.any() {
            let exposition = match &watch.prometheus {
                None => None,
                Some(addr) => {
                    let methods = match plan.mix.is_empty() {
                        true => vec![plan.call.clone()],
                        false => plan.mix.iter().map(|m| m.name.clone()).collect(),
                    };
                    let e = Arc::new(Mutex::new(Exposition::new(methods)));
                    let bound = live::serve(addr, e.clone())?;
                    eprintln!("volley: metrics on http://{bound}/metrics");
                    Some(e)
                }
            };
            let host = plan.host.as_deref().unwrap_or_default();
            let board =
                (watch.dashboard.is_some() || watch.dashboard_export.is_some()).then(|| {
                    Board::new(serde_json::json!({
                        "call": plan.call,
                        "host": host,
                        "methods": plan.mix.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
                    }))
                });
            if let (Some(addr), Some(b)) = (&watch.dashboard, &board) {
                let bound = dashboard::serve(addr, b.clone()).map_err(anyhow::Error::msg)?;
                eprintln!("volley: dashboard on http://{bound}/");
            }
            export = board.clone().zip(watch.dashboard_export.clone());
            let s = live::Sinks {
                ndjson: watch
                    .live
                    .as_deref()
                    .map(live::Sinks::ndjson_to)
                    .transpose()?,
                exposition,
                board,
                tui: match watch.tui {
                    true => Some(Tui::open(format!(
                        " volley bench {} on {host} ",
                        plan.call
                    ))?),
                    false => None,
                },
            };
            let (tx, rx) = mpsc::channel();
            observers.live = Some(Live {
                every: watch.every,
                histograms: watch.histograms,
                tx,
            });
            sinks = Some(s.spawn(rx, control.clone()));
        }
        let bar = (std::io::stderr().is_terminal() && !watch.tui).then(|| {
            let count = Arc::new(AtomicU64::new(0));
            observers.progress = Some(count.clone());
            Bar::start(count, &plan.run)
        });
        let screen = Screen {
            bar,
            sinks,
            linger: (watch.prometheus.is_some() || watch.dashboard.is_some())
                .then_some(watch.linger),
            export,
        };
        Ok((screen, observers))
    }

    /// The run is over (its observers dropped, which ends the sinks): the bar is cleared and
    /// the sinks joined, the full-screen view giving the terminal back.
    pub(super) fn stop(&mut self) -> Result<()> {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
        if let Some(s) = self.sinks.take() {
            s.join()
                .map_err(|_| anyhow::anyhow!("the live view's thread panicked"))??;
        }
        if let Some((board, path)) = self.export.take() {
            std::fs::write(&path, board.export()).map_err(|e| {
                anyhow::anyhow!("--dashboard-export {}: cannot write: {e}", path.display())
            })?;
        }
        Ok(())
    }

    /// `--linger`: the run is over and reported; /metrics and the dashboard stay up this long
    /// for a last look.
    pub(super) fn linger(&self) {
        if let Some(d) = self.linger.filter(|d| !d.is_zero()) {
            eprintln!("volley: serving the final figures for {d:?} (--linger)");
            std::thread::sleep(d);
        }
    }
}
