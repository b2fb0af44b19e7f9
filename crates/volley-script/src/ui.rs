//! What `volley run` prints on stdout before and during a run, in k6's words: the banner, the
//! execution description (`execution: local`, `script:`, `output:`, `scenarios: ...`) and a
//! progress block each second (`running (00m01.0s), 2/2 VUs, 4 complete and 0 interrupted
//! iterations` and a line per scenario), written as k6 writes them when stdout is not a
//! terminal.

use std::{fmt::Write as _, sync::atomic::Ordering, time::Duration};

use crate::{
    duration::format_duration,
    exec::ScenarioRun,
    options::{Executor, Scenario},
    shared::Shared,
};

/// k6's banner, trailing spaces and all, with volley's name under it.
const BANNER: &str = "         /\\      Grafana   /‾‾/  \n    /\\  /  \\     |\\  __   /  /   \n   /  \\/    \\    | |/ /  /   ‾‾\\ \n  /          \\   |   (  |  (‾)  |\n / __________ \\  |_|\\_\\  \\_____/ ";

/// The banner and execution description.
pub(crate) fn start(
    script: &str,
    outputs: &[String],
    scenarios: &[Scenario],
    max_duration: Duration,
) -> String {
    let mut out = format!("\n{BANNER}\n\n");
    out.push_str("     (k6's scripts, run by volley run)\n\n");
    let _ = writeln!(out, "     execution: local");
    let _ = writeln!(out, "        script: {script}");
    let _ = writeln!(
        out,
        "        output: {}",
        if outputs.is_empty() {
            "-".into()
        } else {
            outputs.join(", ")
        }
    );
    out.push('\n');
    let max_vus: u64 = scenarios.iter().map(|s| s.executor.max_vus()).sum();
    let _ = writeln!(
        out,
        "     scenarios: (100.00%) {} {}, {max_vus} max VUs, {} max duration (incl. graceful stop):",
        scenarios.len(),
        if scenarios.len() == 1 {
            "scenario"
        } else {
            "scenarios"
        },
        format_duration(round100(max_duration))
    );
    let mut sorted: Vec<&Scenario> = scenarios.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for s in sorted {
        let mut d = s.executor.describe(s.graceful_stop);
        let mut extra = Vec::new();
        if s.exec != "default" {
            extra.push(format!("exec: {}", s.exec));
        }
        if !s.start_time.is_zero() {
            extra.push(format!("startTime: {}", format_duration(s.start_time)));
        }
        if !extra.is_empty()
            && let Some(cut) = d.rfind(", gracefulStop")
        {
            d.insert_str(cut, &format!(", {}", extra.join(", ")));
        }
        let _ = writeln!(out, "              * {}: {d}", s.name);
    }
    out.push('\n');
    out
}

fn round100(d: Duration) -> Duration {
    Duration::from_millis(((d.as_millis() + 50) / 100 * 100) as u64)
}

/// The longest a run can take: each scenario's start, length and graceful stop.
pub(crate) fn max_duration(scenarios: &[Scenario]) -> Duration {
    scenarios
        .iter()
        .map(|s| {
            let ramp = match &s.executor {
                Executor::RampingVus {
                    graceful_ramp_down, ..
                } => (*graceful_ramp_down).max(s.graceful_stop),
                _ => s.graceful_stop,
            };
            s.start_time + s.executor.max_duration() + ramp
        })
        .max()
        .unwrap_or_default()
}

/// k6's `GetFixedLengthDuration`.
fn fixed(d: Duration, max: Duration) -> String {
    let tenths = (d.as_millis() + 50) / 100;
    let (h, m, s, t) = (
        tenths / 36_000,
        tenths / 600 % 60,
        tenths / 10 % 60,
        tenths % 10,
    );
    if max >= Duration::from_secs(3600) {
        format!("{h}h{m:02}m{s:02}.{t}s")
    } else if max >= Duration::from_secs(60) {
        format!("{m:02}m{s:02}.{t}s")
    } else {
        format!("{s:02}.{t}s")
    }
}

/// One progress block: the run line and a line per scenario.
pub(crate) fn progress(
    shared: &Shared,
    runs: &[std::sync::Arc<ScenarioRun>],
    max: Duration,
    last: bool,
) -> String {
    let elapsed = shared.started.elapsed();
    let vus_max = shared.vus_max.load(Ordering::Relaxed);
    let w = vus_max.to_string().len();
    let mut out = String::from("\n");
    let _ = writeln!(
        out,
        "running ({}), {:0w$}/{:0w$} VUs, {} complete and {} interrupted iterations",
        fixed(elapsed, max),
        shared.vus_active.load(Ordering::Relaxed),
        vus_max,
        shared.completed.load(Ordering::Relaxed),
        shared.interrupted.load(Ordering::Relaxed),
    );
    let name_w = runs
        .iter()
        .map(|r| r.sc.name.len())
        .max()
        .unwrap_or(0)
        .min(30);
    for r in runs {
        let done = r.finished.load(Ordering::Relaxed);
        let mark = match (done, r.interrupted.load(Ordering::Relaxed) > 0) {
            (true, false) => "✓",
            (true, true) => "✗",
            _ if last => "✗",
            _ => " ",
        };
        let total = r.sc.executor.max_duration();
        let ran = elapsed.saturating_sub(r.sc.start_time).min(total);
        let frac = if total.is_zero() {
            1.0
        } else {
            ran.as_secs_f64() / total.as_secs_f64()
        };
        let completed = r.completed.load(Ordering::Relaxed);
        let (frac, right) = match &r.sc.executor {
            Executor::PerVuIterations {
                vus, iterations, ..
            } => {
                let all = vus * iterations;
                (
                    if done {
                        1.0
                    } else {
                        completed as f64 / all.max(1) as f64
                    },
                    format!(
                        "{vus} VUs  {}/{}  {completed}/{all} iters, {iterations} per VU",
                        fixed(ran, total),
                        format_duration(total)
                    ),
                )
            }
            Executor::SharedIterations {
                vus, iterations, ..
            } => (
                if done {
                    1.0
                } else {
                    completed as f64 / (*iterations).max(1) as f64
                },
                format!(
                    "{vus} VUs  {}/{}  {completed}/{iterations} shared iters",
                    fixed(ran, total),
                    format_duration(total)
                ),
            ),
            e => (
                if done { 1.0 } else { frac },
                if done {
                    format!(
                        "{} VUs  {}",
                        r.active.load(Ordering::Relaxed).max(e.max_vus().min(1)),
                        format_duration(total)
                    )
                } else {
                    format!(
                        "{} VUs  {}/{}",
                        r.active.load(Ordering::Relaxed),
                        fixed(ran, total),
                        format_duration(total)
                    )
                },
            ),
        };
        let _ = writeln!(
            out,
            "{:<name_w$} {mark} [{:>4}% ] {right}",
            r.sc.name,
            (frac.clamp(0.0, 1.0) * 100.0).floor() as u64
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_time_is_as_wide_as_the_longest_run_needs() {
        assert_eq!(
            fixed(Duration::from_millis(800), Duration::from_secs(630)),
            "00m00.8s"
        );
        assert_eq!(
            fixed(Duration::from_millis(2100), Duration::from_secs(32)),
            "02.1s"
        );
        assert_eq!(
            fixed(Duration::from_secs(3725), Duration::from_secs(7200)),
            "1h02m05.0s"
        );
    }
}
