//! `volley bench`: the command line resolved into a plan (`volley_bench::plan`), the server
//! reached (or the built-in one started), the target built, the engine run with a progress bar
//! (or the live sinks of `live`: `--tui`, `--live`, `--prometheus-listen`) and Ctrl-C, and the
//! report written.

mod live;
mod tui;

use std::{
    io::{IsTerminal, Write},
    process::ExitCode,
    sync::{Arc, atomic::AtomicU64},
};

use anyhow::{Context, Result};
use serde_json::Map;
use volley_bench::{
    Control, Plan, Report, ReportOptions, Target,
    gate::{Verdicts, write_junit},
    plan::{BenchArgs, SchemaSource, config, resolve},
    report::server,
    target::build,
};

/// Runs `volley bench`; the exit code is its thresholds' verdict (0 without thresholds).
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let mut cfg = match &args.config {
        Some(p) => config::load(p)?,
        None => Map::new(),
    };
    // A scenario is a config file with a mix and stages; its keys win over --config's.
    if let Some(p) = &args.scenario {
        cfg.extend(config::load_scenario(p)?);
    }
    let mut plan = resolve(&args, &cfg)?;
    if let Some(kind) = &args.emit {
        emit(kind, &args, &plan)?;
        return Ok(ExitCode::SUCCESS);
    }
    if plan.host.is_some() && !args.stubs.is_empty() {
        anyhow::bail!("--stubs answer an in-process server: give no host with them");
    }
    let _embedded = if plan.host.is_none() {
        // A --proto or --protoset with no host: its services are served in-process too (from
        // --stubs, or default answers), so a plan can be tried before its server exists.
        let defaults = crate::mock::Defaults {
            stream_messages: 3,
            delay: std::time::Duration::ZERO,
        };
        let (protos, imports, protosets) = match &plan.schema {
            SchemaSource::Proto(file, imports) => (vec![file.clone()], imports.clone(), vec![]),
            SchemaSource::Protoset(file) => (vec![], vec![], vec![file.clone()]),
            SchemaSource::Reflection => (vec![], vec![], vec![]),
        };
        let pools = crate::mock::pools(&protos, &imports, &protosets)?;
        if pools.is_empty() && !args.stubs.is_empty() {
            anyhow::bail!("--stubs answer the services of a .proto: give --proto or --protoset");
        }
        let stubs = crate::mock::stubs::Stubs::load(&args.stubs, &pools, defaults)?;
        let extra = crate::mock::services(&pools, &protos, &protosets, &stubs)?;
        // The seed protos name built-in services: those keep their real answers.
        let builtin: Vec<String> = volley_services::all(volley_services::Options::default())
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        let extra: Vec<_> = extra
            .into_iter()
            .filter(|s| !builtin.iter().any(|b| b == s.name()))
            .collect();
        let what = if extra.is_empty() {
            "the built-in services".to_owned()
        } else {
            let names: Vec<&str> = extra.iter().map(|s| s.name()).collect();
            format!("the built-in services and {}", names.join(", "))
        };
        let (addr, guard) = crate::serve::start_embedded(extra)?;
        eprintln!("volley: no host given; benching {what} on {addr}");
        plan.host = Some(addr.to_string());
        plan.insecure = true;
        Some(guard)
    } else {
        None
    };
    let host = plan.host.clone().unwrap_or_default();
    let target = if plan.http_mode {
        build::http(&plan, &host)?
    } else if !plan.mix.is_empty() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(build::mix(&plan, &host))?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(build::grpc(&plan, &host))?
    };
    let watch = Watching::of(&args)?;
    let server = match &args.server_metrics {
        Some(url) => Some(ServerScrape::before(url, &plan)?),
        None => None,
    };
    execute(plan, Arc::new(target), &host, server, watch)
}

/// What the run is watched with: `--tui`, `--live`, `--prometheus-listen` (and `--linger`).
struct Watching {
    tui: bool,
    live: Option<std::path::PathBuf>,
    histograms: bool,
    every: std::time::Duration,
    prometheus: Option<String>,
    linger: std::time::Duration,
}

impl Watching {
    fn of(args: &BenchArgs) -> Result<Watching> {
        let duration = |flag: &str, v: &Option<String>, default: u64| -> Result<_> {
            match v {
                None => Ok(std::time::Duration::from_millis(default)),
                Some(s) => volley_bench::plan::units::parse_duration(s)
                    .map_err(|e| anyhow::anyhow!("{flag}: {e}")),
            }
        };
        let every = duration("--live-interval", &args.live_interval, 1000)?;
        if every < std::time::Duration::from_millis(100) {
            anyhow::bail!("--live-interval: give 100ms or more");
        }
        if args.tui && args.live.as_deref() == Some(std::path::Path::new("-")) {
            anyhow::bail!("--tui draws on the terminal: give --live a file, not -");
        }
        if args.tui && !std::io::stdout().is_terminal() {
            anyhow::bail!(
                "--tui needs a terminal (stdout is not one): use --live FILE to watch a run from a script"
            );
        }
        if args.linger.is_some() && args.prometheus_listen.is_none() {
            anyhow::bail!("--linger keeps --prometheus-listen up after the run: give both");
        }
        Ok(Watching {
            tui: args.tui,
            live: args.live.clone(),
            histograms: args.live_histograms,
            every,
            prometheus: args.prometheus_listen.clone(),
            linger: duration("--linger", &args.linger, 0)?,
        })
    }

    /// `--linger`: the run is over and reported; /metrics stays up this long for a last scrape.
    fn linger(&self) {
        if self.prometheus.is_some() && !self.linger.is_zero() {
            eprintln!(
                "volley: serving the final metrics for {:?} (--linger)",
                self.linger
            );
            std::thread::sleep(self.linger);
        }
    }

    fn any(&self) -> bool {
        self.tui || self.live.is_some() || self.prometheus.is_some()
    }

    /// Starts the sinks asked for; the engine's ticks go to them through `plan.run.live`.
    fn start(
        &self,
        plan: &mut Plan,
        host: &str,
        control: &Arc<Control>,
    ) -> Result<Option<std::thread::JoinHandle<Result<()>>>> {
        if !self.any() {
            return Ok(None);
        }
        let exposition = match &self.prometheus {
            None => None,
            Some(addr) => {
                let methods = match plan.mix.is_empty() {
                    true => vec![plan.call.clone()],
                    false => plan.mix.iter().map(|m| m.name.clone()).collect(),
                };
                let e = Arc::new(std::sync::Mutex::new(live::Exposition::new(methods)));
                let bound = live::serve(addr, e.clone())?;
                eprintln!("volley: metrics on http://{bound}/metrics");
                Some(e)
            }
        };
        let sinks = live::Sinks {
            ndjson: self
                .live
                .as_deref()
                .map(live::Sinks::ndjson_to)
                .transpose()?,
            exposition,
            tui: match self.tui {
                true => Some(tui::Tui::open(format!(
                    " volley bench {} on {host} ",
                    plan.call
                ))?),
                false => None,
            },
        };
        let (tx, rx) = std::sync::mpsc::channel();
        plan.run.live = Some(volley_bench::live::Live {
            every: self.every,
            histograms: self.histograms,
            tx,
        });
        Ok(Some(sinks.spawn(rx, control.clone())))
    }
}

/// `--emit k8s-job`: prints the plan as an Indexed Job, one pod per shard.
fn emit(kind: &str, args: &BenchArgs, plan: &Plan) -> Result<()> {
    if kind != "k8s-job" {
        anyhow::bail!("--emit {kind:?}: the one kind is k8s-job");
    }
    let Some(image) = &args.image else {
        anyhow::bail!("--emit k8s-job needs --image (an image whose entrypoint is volley)");
    };
    let (Some(shard), Some(text)) = (plan.run.shard, &args.shard) else {
        anyhow::bail!("--emit k8s-job needs --shard auto/N (Kubernetes gives each pod its index)");
    };
    if !text.starts_with("auto/") {
        anyhow::bail!(
            "--emit k8s-job needs --shard auto/N, not {text} (Kubernetes gives each pod its index)"
        );
    }
    let Some(host) = &plan.host else {
        anyhow::bail!(
            "--emit k8s-job needs the target HOST:PORT (the pods load it, not a built-in server)"
        );
    };
    if args.start_at.as_deref().is_some_and(|s| s.starts_with('+')) {
        anyhow::bail!(
            "--emit k8s-job: give --start-at as an RFC 3339 time (each pod would count {} from its own start)",
            args.start_at.as_deref().unwrap_or_default()
        );
    }
    let options = serde_json::to_value(ReportOptions::from_plan(plan, host))?;
    let hash = volley_bench::results::plan_hash(&options);
    let argv: Vec<String> = std::env::args().collect();
    let spec = volley_bench::k8s::JobSpec {
        name: volley_bench::k8s::job_name(&plan.run.name, &hash),
        image,
        shards: shard.count,
        args: volley_bench::k8s::pod_args(&argv),
        cpus: args.cpus.unwrap_or(1).max(1),
        plan_hash: &hash,
    };
    print!("{}", volley_bench::k8s::indexed_job(&spec));
    if !plan.thresholds.is_empty() {
        eprintln!(
            "volley: the thresholds are judged on the merged run: kubectl logs -l job-name={} | volley report merge - --threshold ...",
            spec.name
        );
    }
    Ok(())
}

/// `--server-metrics`: the server's histograms before the run, of the run's method or of each
/// gRPC method of its mix (`None` for its HTTP entries).
struct ServerScrape {
    url: String,
    methods: Vec<Option<(String, server::Snapshot)>>,
}

impl ServerScrape {
    fn before(url: &str, plan: &Plan) -> Result<ServerScrape> {
        use volley_bench::plan::mix::MixCall;
        let calls: Vec<Option<&str>> = if plan.mix.is_empty() {
            vec![Some(plan.call.as_str())]
        } else {
            plan.mix
                .iter()
                .map(|m| match &m.call {
                    MixCall::Grpc(c) => Some(c.as_str()),
                    MixCall::Http { .. } => None,
                })
                .collect()
        };
        let text = scrape(url)?;
        let methods = calls
            .into_iter()
            .map(|call| {
                call.map(|c| {
                    let method = server::method_label(c);
                    let before = server::snapshot(&text, &method)
                        .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
                    Ok((method, before))
                })
                .transpose()
            })
            .collect::<Result<_>>()?;
        Ok(ServerScrape {
            url: url.to_owned(),
            methods,
        })
    }

    /// The server's figures for the run: into the report, or into each of its mix's entries.
    fn after(self, report: &mut Report) -> Result<()> {
        let text = scrape(&self.url)?;
        let mut figures = Vec::new();
        for m in self.methods {
            figures.push(match m {
                None => None,
                Some((method, before)) => {
                    let after = server::snapshot(&text, &method)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", self.url))?;
                    Some(server::figures(&self.url, &method, &before, &after))
                }
            });
        }
        if report.methods.is_empty() {
            report.volley.server_metrics = figures.pop().flatten();
        } else {
            for (m, f) in report.methods.iter_mut().zip(figures) {
                m.report.volley.server_metrics = f;
            }
        }
        Ok(())
    }
}

fn scrape(url: &str) -> Result<String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(server::fetch(url))
        .map_err(anyhow::Error::msg)
}

/// Runs the engine, judges the thresholds and writes the report.
fn execute(
    mut plan: Plan,
    target: Arc<Target>,
    host: &str,
    server: Option<ServerScrape>,
    watch: Watching,
) -> Result<ExitCode> {
    let control = Arc::new(Control::default());
    let progress =
        (std::io::stderr().is_terminal() && !watch.tui).then(|| Arc::new(AtomicU64::new(0)));
    plan.run.progress = progress.clone();
    spawn_ctrl_c(control.clone());
    let sinks = watch.start(&mut plan, host, &control)?;
    let bar = progress.map(|p| crate::progress::Bar::start(p, &plan.run));
    let outcome = volley_bench::run(&plan.run, target, control);
    // The engine's senders are gone; this one too, so that the sinks end even without a last tick.
    plan.run.live = None;
    if let Some(s) = sinks {
        s.join()
            .map_err(|_| anyhow::anyhow!("the live view's thread panicked"))??;
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e @ volley_bench::BenchError::MissedStart(_)) => {
            // A shard that cannot start with the others invalidates the whole run.
            eprintln!("volley: --start-at: {e}; this shard sent nothing");
            return Ok(ExitCode::from(volley_bench::gate::EXIT_INVALID));
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(b) = bar {
        b.finish();
    }
    if outcome.generator_saturated {
        eprintln!(
            "volley: note: the generator's threads were busy for most of the run; the figures may show the generator's limit, not the server's (try --cpus or fewer workers)"
        );
    }
    if outcome.rate_not_kept {
        eprintln!(
            "volley: note: the rate asked was not kept (calls were sent late); latency is measured from the intended send times"
        );
    }
    let mut report = Report::new(
        outcome,
        ReportOptions::from_plan(&plan, host),
        plan.tags.clone(),
    );
    if let Some(s) = server {
        s.after(&mut report)?;
    }
    if let Some(r) = &mut report.volley.results {
        r.shard = plan.run.shard;
    }
    if !plan.thresholds.is_empty() {
        report.volley.verdicts = Some(Verdicts::judge(&plan.thresholds, &report));
    }
    if let Some(path) = &plan.debug {
        debug_log(path, &report)?;
    }
    let mut out: Box<dyn Write> = match &plan.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write -o {}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    volley_bench::report::format::write(&mut out, plan.format, &report)?;
    out.flush()?;
    if let Some(why) = &report.volley.aborted {
        eprintln!("volley: aborted: {why}");
    }
    let aborted = report.volley.aborted.is_some();
    let Some(verdicts) = &report.volley.verdicts else {
        watch.linger();
        return Ok(ExitCode::from(if aborted {
            volley_bench::gate::EXIT_FAILED
        } else {
            0
        }));
    };
    if let Some(path) = &plan.junit {
        let mut f = std::fs::File::create(path)
            .with_context(|| format!("cannot write --junit {}", path.display()))?;
        let suite = format!("volley bench {}", plan.call);
        write_junit(&mut f, &suite, verdicts)?;
    }
    // One line per failure on stderr, whatever the format: what a CI log shows.
    for v in verdicts.thresholds.iter().filter(|v| !v.held) {
        eprintln!("volley: threshold {} failed: {}", v.threshold, v.shown);
    }
    if let Some(why) = &verdicts.invalid {
        eprintln!("volley: the run cannot be judged: {why}");
    }
    let code = match verdicts.exit_code() {
        0 if aborted => volley_bench::gate::EXIT_FAILED,
        c => c,
    };
    watch.linger();
    Ok(ExitCode::from(code))
}

/// `--debug`: JSON lines describing the run (its options, then its outcome and errors).
fn debug_log(path: &std::path::Path, r: &Report) -> Result<()> {
    let mut f = std::fs::File::create(path)
        .with_context(|| format!("cannot write --debug {}", path.display()))?;
    let lines = [
        serde_json::json!({"level": "info", "msg": "run options", "options": &r.options}),
        serde_json::json!({
            "level": "info", "msg": "run done", "endReason": &r.end_reason, "count": r.count,
            "total": r.total, "rps": r.rps, "statusCodeDistribution": &r.status_code_distribution,
        }),
    ];
    for l in lines {
        writeln!(f, "{l}")?;
    }
    for (e, n) in &r.error_distribution.0 {
        writeln!(
            f,
            "{}",
            serde_json::json!({"level": "error", "msg": e, "count": n})
        )?;
    }
    Ok(())
}

fn spawn_ctrl_c(control: Arc<Control>) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                control.cancel();
            }
        });
    });
}
