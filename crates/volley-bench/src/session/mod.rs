//! A whole `volley bench` run in the library, plan to exit code. [`Session::prepare`] builds the
//! target and scrapes `--server-metrics` on one runtime; [`Session::run`] runs the engine with
//! the caller's [`Control`] and [`Observers`]; [`Ran::finish`] makes the report, scrapes the
//! server again, judges the thresholds, writes the report (`-O`, `-o`), the `--debug` log and
//! the `--junit` file, and gives the exit code and the notes for the user. [`run_plan`] does
//! the three; a caller that draws on the terminal (a progress bar, a full-screen view) takes
//! them one by one, to clear its drawing before the report is written.

mod error;
mod scrape;
mod write;

use std::{io::Write, sync::Arc};

use tokio::runtime::Runtime;

use crate::{
    callee::{Target, build},
    engine::{self, BenchError, Control, Observers, Outcome},
    gate::{EXIT_FAILED, EXIT_INVALID},
    plan::Plan,
    report::{Report, ReportOptions, verdicts::Verdicts},
};
pub use error::RunError;
use scrape::ServerScrape;

/// A plan ready to run: its target built, the server scraped.
pub struct Session<'p> {
    plan: &'p Plan,
    host: String,
    target: Arc<Target>,
    scrape: Option<ServerScrape>,
    rt: Runtime,
}

/// A run that has ended, not yet reported.
pub struct Ran<'p> {
    session: Session<'p>,
    outcome: Result<Outcome, BenchError>,
}

/// A run reported.
#[derive(Debug)]
pub struct Finished {
    /// The report (`None` when the run never started: a shard ready after `--start-at`).
    pub report: Option<Report>,
    /// The exit code: 0, [`EXIT_FAILED`] (a threshold failed, or `--abort-on` stopped the run)
    /// or [`EXIT_INVALID`] (the run cannot be judged, or a shard missed its start).
    pub exit_code: u8,
    /// What the user should be told, one line each, without a `volley: ` prefix: the
    /// generator's notes, why the run was aborted, each failed threshold, why it cannot be
    /// judged.
    pub notes: Vec<String>,
}

fn runtime() -> Result<Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)
}

/// Runs `plan` from start to end: [`Session::prepare`], [`Session::run`], [`Ran::finish`]
/// (the report goes to `out` unless the plan gives `-o`).
pub fn run_plan(
    plan: &Plan,
    control: Arc<Control>,
    observers: Observers,
    out: &mut dyn Write,
) -> Result<Finished, RunError> {
    Session::prepare(plan)?.run(control, observers).finish(out)
}

impl<'p> Session<'p> {
    /// Builds the plan's target (a gRPC method, a mix, or an HTTP request) against its host, and
    /// scrapes `--server-metrics` before the run.
    pub fn prepare(plan: &'p Plan) -> Result<Session<'p>, RunError> {
        let host = plan.host.clone().unwrap_or_default();
        // The target is built on a runtime of its own, dropped before the run: a connection it
        // opened (reflection) is closed then, not held open beside the run's connections (a
        // server with --max-connections would refuse one of those).
        let target = {
            let rt = runtime()?;
            if plan.http_mode {
                build::http(plan, &host)?
            } else if !plan.mix.is_empty() {
                rt.block_on(build::mix(plan, &host))?
            } else {
                rt.block_on(build::grpc(plan, &host))?
            }
        };
        let rt = runtime()?;
        let scrape = match &plan.server_metrics {
            Some(url) => Some(ServerScrape::before(&rt, url, plan)?),
            None => None,
        };
        Ok(Session {
            plan,
            host,
            target: Arc::new(target),
            scrape,
            rt,
        })
    }

    /// Runs the engine; blocks until the run ends (its plan, `control`, or `--abort-on`).
    /// `observers` are dropped when it ends, which closes the live channel.
    pub fn run(self, control: Arc<Control>, observers: Observers) -> Ran<'p> {
        let outcome = engine::run(&self.plan.run, self.target.clone(), control, observers);
        Ran {
            session: self,
            outcome,
        }
    }
}

impl Ran<'_> {
    /// Reports the run: the report made, the server scraped again, the thresholds judged, the
    /// report written (to `-o`, else `out`), the `--debug` log and the `--junit` file; then the
    /// exit code and the notes.
    pub fn finish(self, out: &mut dyn Write) -> Result<Finished, RunError> {
        let Session {
            plan,
            host,
            scrape,
            rt,
            ..
        } = self.session;
        let outcome = match self.outcome {
            Ok(o) => o,
            Err(e @ BenchError::MissedStart(_)) => {
                // A shard that cannot start with the others invalidates the whole run.
                return Ok(Finished {
                    report: None,
                    exit_code: EXIT_INVALID,
                    notes: vec![format!("--start-at: {e}; this shard sent nothing")],
                });
            }
            Err(e) => return Err(e.into()),
        };
        let mut notes = Vec::new();
        if outcome.generator_saturated {
            notes.push("note: the generator's threads were busy for most of the run; the figures may show the generator's limit, not the server's (try --cpus or fewer workers)".to_owned());
        }
        if outcome.rate_not_kept {
            notes.push("note: the rate asked was not kept (calls were sent late); latency is measured from the intended send times".to_owned());
        }
        let mut report = Report::new(
            outcome,
            ReportOptions::from_plan(plan, &host),
            plan.tags.clone(),
        );
        if let Some(s) = scrape {
            s.after(&rt, &mut report)?;
        }
        if let Some(r) = &mut report.volley.results {
            r.shard = plan.run.shard;
        }
        if !plan.thresholds.is_empty() {
            report.volley.verdicts = Some(Verdicts::judge(&plan.thresholds, &report));
        }
        if let Some(path) = &plan.debug {
            write::debug_log(path, &report)?;
        }
        write::report(plan, &report, out)?;
        let aborted = report.volley.aborted.is_some();
        if let Some(why) = &report.volley.aborted {
            notes.push(format!("aborted: {why}"));
        }
        let exit_code = match &report.volley.verdicts {
            None => 0,
            Some(verdicts) => {
                if let Some(path) = &plan.junit {
                    write::junit(path, plan, verdicts)?;
                }
                // One line per failure, whatever the format: what a CI log shows.
                for v in verdicts.thresholds.iter().filter(|v| !v.held) {
                    notes.push(format!("threshold {} failed: {}", v.threshold, v.shown));
                }
                if let Some(why) = &verdicts.invalid {
                    notes.push(format!("the run cannot be judged: {why}"));
                }
                verdicts.exit_code()
            }
        };
        Ok(Finished {
            report: Some(report),
            exit_code: match exit_code {
                0 if aborted => EXIT_FAILED,
                c => c,
            },
            notes,
        })
    }
}
