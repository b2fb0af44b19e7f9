//! One run from its options to its exit code: the init VU (options, `setup`, `teardown`,
//! `handleSummary` run there), thresholds checked against the metrics the script defines, the
//! scenarios started and watched (progress each second, `abortOnFail`), then the summary and
//! k6's exit code.

use std::{
    collections::HashMap,
    io::{IsTerminal, Write},
    path::Path,
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use volley_bench::plan::shard::{INDEX_VAR, parse_shard};

use crate::{
    RunArgs, exec,
    exit::{self, LIFECYCLE_TIMEOUT, config_error, script_error, timed_out},
    metrics::{self, Agg, Kind, id},
    options::{self, Overrides, ScriptOptions},
    out::{self, JsonOut},
    report::{self, Reports},
    shard,
    shared::Shared,
    summary, thresholds,
    thresholds::MetricThresholds,
    ui,
    vu::Vu,
};

/// A run between its options and its summary.
pub(crate) struct Run {
    vu0: Vu,
    scenarios: Vec<options::Scenario>,
    thresholds: Vec<MetricThresholds>,
    trend_stats: Vec<String>,
    /// `setupTimeout` and `teardownTimeout`.
    setup_timeout: Duration,
    teardown_timeout: Duration,
}

impl Run {
    /// The init VU (setup, teardown, handleSummary run there), the options and thresholds.
    pub(crate) fn prepare(shared: &Arc<Shared>, args: &RunArgs) -> Result<Run, i32> {
        let vu0 = Vu::new(shared.clone(), 0, true).map_err(|e| script_error(shared, &e.0))?;
        let json = vu0.options_json().map_err(|e| script_error(shared, &e))?;
        let _ = shared.options_json.set(json.clone());
        let opts: ScriptOptions = serde_json::from_str(&json)
            .map_err(|e| config_error(shared, &format!("options: {e}")))?;
        if opts.insecure_skip_tls_verify == Some(true) {
            shared.insecure_tls.store(true, Ordering::Relaxed);
        }
        let cli = Overrides {
            vus: args.vus,
            duration: match &args.duration {
                Some(d) => Some(
                    crate::duration::parse_duration(d)
                        .map_err(|e| config_error(shared, &format!("--duration: {e}")))?,
                ),
                None => None,
            },
            iterations: args.iterations,
            stages: if args.stages.is_empty() {
                None
            } else {
                Some(options::parse_stages(&args.stages).map_err(|e| config_error(shared, &e))?)
            },
        };
        let mut scenarios =
            options::scenarios(&opts, &cli).map_err(|e| config_error(shared, &e))?;
        let shard = match &args.shard {
            Some(text) => {
                let index = std::env::var(INDEX_VAR).ok();
                let s = parse_shard(text, index.as_deref())
                    .map_err(|e| config_error(shared, &e.to_string()))?;
                shard::apply(&mut scenarios, s);
                Some(s)
            }
            None => None,
        };
        for s in &scenarios {
            if !vu0.has_function(&s.exec) {
                let what = if s.exec == "default" {
                    "function 'default' not found in exports".to_owned()
                } else {
                    format!(
                        "executor {}: function '{}' not found in exports",
                        s.name, s.exec
                    )
                };
                return Err(config_error(shared, &what));
            }
        }
        let thresholds =
            thresholds::parse(&opts.thresholds).map_err(|e| config_error(shared, &e))?;
        for t in &thresholds {
            let Some(i) = shared.registry.id(&t.metric) else {
                return Err(config_error(
                    shared,
                    &format!(
                        "invalid threshold defined on {}; reason: no metric name \"{}\" found",
                        t.key, t.metric
                    ),
                ));
            };
            let def = &shared.registry.defs()[i];
            for th in &t.list {
                if !th.fits(def.kind) {
                    let methods = match def.kind {
                        Kind::Counter => "count, rate",
                        Kind::Gauge => "value",
                        Kind::Rate => "rate",
                        Kind::Trend => "avg, min, max, med, p",
                    };
                    return Err(config_error(
                        shared,
                        &format!(
                            "invalid threshold \"{}\" applied on metric {}; reason: unsupported aggregation method {} on metric of type {}. supported aggregation methods for this metric are: {methods}",
                            th.source,
                            t.metric,
                            th.stat,
                            def.kind.name()
                        ),
                    ));
                }
            }
        }
        let mut wanted = Vec::new();
        for value in &args.reports {
            wanted.push(report::parse(value).map_err(|e| config_error(shared, &e))?);
        }
        if !wanted.is_empty() {
            let _ = shared.reports.set(Reports::new(wanted, shard));
        }
        let mut paths = Vec::new();
        for value in &args.out {
            paths.push(out::parse(value).map_err(|e| config_error(shared, &e))?);
        }
        if paths.len() > 1 {
            return Err(config_error(
                shared,
                &format!("--out: one json output at a time, not {}", paths.join(", ")),
            ));
        }
        if let Some(path) = paths.pop() {
            let mut on: HashMap<String, Vec<String>> = HashMap::new();
            for t in thresholds.iter().filter(|t| t.tags.is_empty()) {
                on.entry(t.metric.clone())
                    .or_default()
                    .extend(t.list.iter().map(|th| th.source.clone()));
            }
            let made = JsonOut::create(&path, on).map_err(|e| config_error(shared, &e))?;
            let _ = shared.out.set(made);
        }
        *shared.subs.write().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(thresholds::sub_defs(&shared.registry, &thresholds));
        let trend_stats = match (&args.summary_trend_stats, &opts.summary_trend_stats) {
            (Some(s), _) => s
                .split(',')
                .map(|x| x.trim().to_owned())
                .filter(|x| !x.is_empty())
                .collect(),
            (None, Some(list)) => list.clone(),
            (None, None) => summary::default_trend_stats(),
        };
        Ok(Run {
            vu0,
            scenarios,
            thresholds,
            trend_stats,
            setup_timeout: opts.setup_timeout.unwrap_or(LIFECYCLE_TIMEOUT),
            teardown_timeout: opts.teardown_timeout.unwrap_or(LIFECYCLE_TIMEOUT),
        })
    }

    pub(crate) fn go(mut self, shared: &Arc<Shared>, args: &RunArgs) -> i32 {
        let max = ui::max_duration(&self.scenarios);
        let mut stdout = std::io::stdout();
        if !args.quiet {
            let outputs: Vec<String> = shared
                .out
                .get()
                .map(|o| format!("json ({})", o.path))
                .into_iter()
                .collect();
            let _ = stdout
                .write_all(ui::start(&args.script, &outputs, &self.scenarios, max).as_bytes());
            let _ = stdout.flush();
        }
        // setup()
        let data = if self.vu0.has_function("setup") {
            match self.vu0.call_json_within("setup", None, self.setup_timeout) {
                Ok(d) => d,
                Err(Some(e)) => return script_error(shared, &e),
                Err(None) => return timed_out(shared, "setup", self.setup_timeout),
            }
        } else {
            None
        };
        let _ = shared.setup_data.set(data.clone());
        let runner = match exec::Runner::start(shared, self.scenarios.clone()) {
            Ok(r) => r,
            Err(e) => {
                shared
                    .log
                    .line("error", &format!("cannot start the VUs' threads: {e}"), &[]);
                return exit::GENERIC;
            }
        };
        let started = Instant::now();
        let mut next_tick = started + Duration::from_secs(1);
        while !runner.done() {
            std::thread::sleep(Duration::from_millis(20));
            if Instant::now() >= next_tick {
                next_tick += Duration::from_secs(1);
                sample_vus(shared);
                if !args.quiet {
                    let _ =
                        stdout.write_all(ui::progress(shared, &runner.runs, max, false).as_bytes());
                    let _ = stdout.flush();
                }
                self.abort_on_fail(shared);
            }
        }
        let runs = runner.runs.clone();
        let init_error = runner.init_error.clone();
        runner.join();
        if let Some(e) = init_error.get() {
            return script_error(shared, e);
        }
        // teardown(data)
        let mut code = 0;
        if self.vu0.has_function("teardown") {
            match self
                .vu0
                .call_json_within("teardown", data.as_deref(), self.teardown_timeout)
            {
                Ok(_) => {}
                Err(Some(e)) => code = script_error(shared, &e),
                Err(None) => code = timed_out(shared, "teardown", self.teardown_timeout),
            }
        }
        self.vu0.st.flush(true);
        if let Some(out) = shared.out.get()
            && let Err(e) = out.finish()
        {
            shared
                .log
                .line("error", &format!("--out json={}: {e}", out.path), &[]);
        }
        let elapsed = shared.elapsed_secs();
        if let Some(r) = shared.reports.get() {
            let name = shared
                .script
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            if let Err(e) = r.write(&name, Duration::from_secs_f64(elapsed)) {
                shared.log.line("error", &e, &[]);
                code = code.max(exit::GENERIC);
            }
        }
        let totals = std::mem::take(&mut *shared.totals.lock().unwrap_or_else(|e| e.into_inner()));
        let defs = shared.registry.defs();
        let subs_defs = shared
            .subs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let subs: Vec<(String, Option<Agg>)> = subs_defs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.key.clone(), totals.sub(i).cloned()))
            .collect();
        let outcomes = judge(&self.thresholds, &defs, &totals, &subs, elapsed);
        let report = summary::Report {
            defs: &defs,
            totals: &totals,
            thresholds: &self.thresholds,
            outcomes: &outcomes,
            subs: &subs,
            elapsed,
            trend_stats: &self.trend_stats,
        };
        if self.vu0.has_function("handleSummary") {
            let data = summary::data(&report, stdout.is_terminal()).to_string();
            match self.vu0.call_json("handleSummary", Some(&data)) {
                Ok(Some(out)) => write_summary_outputs(shared, &out),
                Ok(None) => {}
                Err(e) => {
                    shared.log.line(
                        "error",
                        &format!("handleSummary: {e}"),
                        &[("source", "stacktrace")],
                    );
                    if !args.no_summary && args.summary_mode != "disabled" {
                        let _ = stdout.write_all(summary::text(&report).as_bytes());
                    }
                }
            }
        } else if !args.no_summary && args.summary_mode != "disabled" {
            let _ = stdout.write_all(summary::text(&report).as_bytes());
        }
        if let Some(path) = &args.summary_export {
            let text = serde_json::to_string_pretty(&summary::export(&report)).unwrap_or_default();
            if let Err(e) = std::fs::write(path, text) {
                shared
                    .log
                    .line("error", &format!("--summary-export {path}: {e}"), &[]);
            }
        }
        if let Some(path) = &args.junit
            && let Err(e) = write_junit(path, &report)
        {
            shared
                .log
                .line("error", &format!("--junit {path}: {e}"), &[]);
        }
        if !args.quiet {
            let _ = stdout.write_all(ui::progress(shared, &runs, max, true).as_bytes());
        }
        let _ = stdout.flush();
        let crossed: Vec<&str> = {
            let mut names: Vec<&str> = self
                .thresholds
                .iter()
                .zip(&outcomes)
                .filter(|(_, o)| o.iter().any(|ok| !ok))
                .map(|(t, _)| t.metric.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            names
        };
        if let Some(why) = shared.aborted.get()
            && !why.starts_with("thresholds")
            && why != "a VU could not start"
        {
            shared.log.line("error", why, &[]);
            return exit::SCRIPT_ABORTED;
        }
        if !crossed.is_empty() {
            shared.log.line(
                "error",
                &format!(
                    "thresholds on metrics '{}' have been crossed",
                    crossed.join(", ")
                ),
                &[],
            );
            return exit::THRESHOLDS_FAILED;
        }
        code
    }

    /// Stops the run when a threshold with `abortOnFail` fails (past its `delayAbortEval`).
    fn abort_on_fail(&self, shared: &Shared) {
        if !self
            .thresholds
            .iter()
            .any(|t| t.list.iter().any(|th| th.abort_on_fail))
            || shared.is_aborted()
        {
            return;
        }
        let elapsed = shared.elapsed_secs();
        let totals = shared.totals.lock().unwrap_or_else(|e| e.into_inner());
        let defs = shared.registry.defs();
        let subs_defs = shared
            .subs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for t in &self.thresholds {
            let agg = if t.tags.is_empty() {
                defs.iter()
                    .position(|d| d.name == t.metric)
                    .and_then(|i| totals.agg(i))
            } else {
                subs_defs
                    .iter()
                    .position(|s| s.key == t.key)
                    .and_then(|i| totals.sub(i))
            };
            let Some(agg) = agg else { continue };
            for th in t
                .list
                .iter()
                .filter(|th| th.abort_on_fail && elapsed >= th.delay_abort_eval.as_secs_f64())
            {
                if !th.passes(|s| agg.stat(s, elapsed)) {
                    shared.abort(format!(
                        "thresholds on metrics '{}' were crossed; at least one has abortOnFail enabled, stopping test prematurely",
                        t.metric
                    ));
                    return;
                }
            }
        }
    }
}

/// Records the VU gauges.
fn sample_vus(shared: &Shared) {
    let vus = shared.vus_active.load(Ordering::Relaxed) as f64;
    let vus_max = shared.vus_max.load(Ordering::Relaxed) as f64;
    let mut t = shared.totals.lock().unwrap_or_else(|e| e.into_inner());
    t.add(id::VUS, Kind::Gauge, vus);
    t.add(id::VUS_MAX, Kind::Gauge, vus_max);
    if let Some(out) = shared.out.get() {
        out.point(&shared.registry, id::VUS, vus, []);
        out.point(&shared.registry, id::VUS_MAX, vus_max, []);
        out.flush_thread();
    }
}

/// Each threshold's outcome; a metric with no samples passes, as in k6.
fn judge(
    thresholds: &[MetricThresholds],
    defs: &[metrics::Def],
    totals: &metrics::Sink,
    subs: &[(String, Option<Agg>)],
    elapsed: f64,
) -> Vec<Vec<bool>> {
    thresholds
        .iter()
        .map(|t| {
            let agg = if t.tags.is_empty() {
                defs.iter()
                    .position(|d| d.name == t.metric)
                    .and_then(|i| totals.agg(i))
            } else {
                subs.iter()
                    .find(|(k, _)| *k == t.key)
                    .and_then(|(_, a)| a.as_ref())
            };
            t.list
                .iter()
                .map(|th| match agg.filter(|a| !a.is_empty()) {
                    None => true,
                    Some(a) => th.passes(|s| a.stat(s, elapsed)),
                })
                .collect()
        })
        .collect()
}

/// `--junit FILE`: each threshold a test case, as `volley bench --junit` writes them.
fn write_junit(path: &str, r: &summary::Report<'_>) -> std::io::Result<()> {
    use volley_bench::gate::{Verdict, Verdicts, write_junit};
    let mut verdicts = Verdicts::default();
    for (t, outcomes) in r.thresholds.iter().zip(r.outcomes) {
        for (th, ok) in t.list.iter().zip(outcomes) {
            let (observed, shown) = summary::observed(r, t, th);
            verdicts.thresholds.push(Verdict {
                threshold: format!("{}: {}", t.key, th.source.trim()),
                observed,
                shown,
                held: *ok,
            });
        }
    }
    let mut out = Vec::new();
    write_junit(&mut out, "volley run", &verdicts)?;
    std::fs::write(path, out)
}

/// `handleSummary`'s result: `stdout`, `stderr`, or a file path for each key.
fn write_summary_outputs(shared: &Shared, json: &str) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(json) else {
        shared.log.line(
            "error",
            "handleSummary must return an object of outputs",
            &[],
        );
        return;
    };
    for (k, v) in map {
        let text = match v {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        let r = match k.as_str() {
            "stdout" => std::io::stdout().write_all(text.as_bytes()),
            "stderr" => std::io::stderr().write_all(text.as_bytes()),
            path => std::fs::write(shared.dir.join(Path::new(path)), text.as_bytes()),
        };
        if let Err(e) = r {
            shared
                .log
                .line("error", &format!("handleSummary output {k}: {e}"), &[]);
        }
    }
}
