//! From flags and config file to a checked plan: every ghz default and validation rule, each
//! failure one line naming the flag. The flags arrive typed and merged (`flags`); what is left
//! here is rules, and reading the data and metadata files the flags name. Its length is ghz's
//! rule book (a third of it the tests that check each rule's message).

use std::{io::Read, path::PathBuf, time::Duration};

use serde_json::{Map, Value};
use volley_client::Strategy;

use super::{
    DataSource, Plan, PlanError, Raw, SchemaSource,
    args::BenchArgs,
    flags::Flags,
    mix::{self, MixSpec},
    options::{DurationStop, Format, MAX_DETAILS, RunOptions, StreamOptions},
    schedule::{Ramp, Shape},
    stages::Stages,
};

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(PlanError::new(format!($($t)*)))
    };
}

fn read_stdin() -> Result<Vec<u8>, PlanError> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .map_err(|e| PlanError::new(format!("cannot read standard input: {e}")))?;
    Ok(buf)
}

fn read_file(path: &PathBuf, flag: &str) -> Result<Vec<u8>, PlanError> {
    std::fs::read(path)
        .map_err(|e| PlanError::new(format!("cannot read {flag} {}: {e}", path.display())))
}

fn utf8(bytes: Vec<u8>, what: impl FnOnce() -> String) -> Result<String, PlanError> {
    String::from_utf8(bytes).map_err(|_| PlanError::new(what()))
}

/// The six options of one schedule (`--load-*` or `--concurrency-*`).
struct RampFlags {
    schedule: Option<Shape>,
    start: Option<u64>,
    end: Option<u64>,
    step: Option<i64>,
    step_duration: Option<Duration>,
    max_duration: Option<Duration>,
}

fn ramp(a: RampFlags, prefix: &str, constant: f64, default_step: i64) -> Result<Ramp, PlanError> {
    let shape = a.schedule.unwrap_or(Shape::Const);
    if shape == Shape::Const {
        return Ok(Ramp::constant(constant));
    }
    let r = Ramp {
        shape,
        start: a.start.unwrap_or(0) as f64,
        end: a.end.unwrap_or(0) as f64,
        step: a.step.unwrap_or(default_step) as f64,
        step_duration: a.step_duration.unwrap_or_default(),
        max_duration: a.max_duration.unwrap_or_default(),
    };
    r.validate(&format!("--{prefix}")).map_err(PlanError::new)?;
    Ok(r)
}

/// Go's `filepath.Clean`: lexical `.`/`..` removal (ghz reports the proto's directory so).
fn clean(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            ".." if abs => {}
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (abs, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The run's `call` and, for a mix, its entries: `--call` flags win over a scenario's `mix:`,
/// which may not sit beside a `call` key.
fn calls_and_mix(
    a: &BenchArgs,
    cfg: &Map<String, Value>,
    calls: Option<Vec<String>>,
    http_mode: bool,
) -> Result<(String, Vec<MixSpec>), PlanError> {
    let of_calls = |calls: &[String]| -> Result<(String, Vec<MixSpec>), PlanError> {
        Ok(match mix::from_calls(calls)? {
            None => (calls[0].clone(), Vec::new()),
            Some(m) => (mix::describe(&m), m),
        })
    };
    let (call, mix) = match (a.call.is_empty(), cfg.get("mix").filter(|v| !v.is_null())) {
        (true, Some(v)) => {
            if cfg.get("call").is_some_and(|c| !c.is_null()) {
                bail!("the scenario gives both call and mix: give the mix alone");
            }
            let base = a
                .scenario
                .as_deref()
                .or(a.config.as_deref())
                .and_then(std::path::Path::parent)
                .unwrap_or(std::path::Path::new("."));
            let m = mix::from_config(v, base)?;
            (mix::describe(&m), m)
        }
        _ => match calls {
            Some(c) => of_calls(&c)?,
            None if http_mode => (String::new(), Vec::new()),
            None => bail!("--call is required (package.Service/Method)"),
        },
    };
    if http_mode && !mix.is_empty() {
        bail!(
            "a mix calls gRPC methods on HOST:PORT (its http entries name their URLs): give the host without http://"
        );
    }
    Ok((call, mix))
}

/// Checks and resolves the arguments: the command line over the config file over ghz's defaults.
pub fn resolve(a: &BenchArgs, cfg: &Map<String, Value>) -> Result<Plan, PlanError> {
    let f = Flags::from_args(a)?.or(Flags::from_config(cfg)?);
    let host = f.host;
    let http_mode = host
        .as_deref()
        .is_some_and(|h| h.starts_with("http://") || h.starts_with("https://"));
    let (call, mix) = calls_and_mix(a, cfg, f.call, http_mode)?;
    let stages = if !a.stages.is_empty() {
        Some(Stages::from_flags(&a.stages)?)
    } else {
        match cfg.get("stages") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Stages::from_config(v)?),
        }
    };

    let (proto, protoset) = (f.proto, f.protoset);
    let mut import_paths = f.import_paths.unwrap_or_default();
    import_paths.retain(|p| !p.is_empty());
    let schema = match (&proto, &protoset) {
        (Some(p), _) => {
            SchemaSource::Proto(p.clone(), import_paths.iter().map(PathBuf::from).collect())
        }
        (None, Some(s)) => SchemaSource::Protoset(s.clone()),
        (None, None) => SchemaSource::Reflection,
    };
    let mut report_import_paths = import_paths.clone();
    if let Some(p) = &proto {
        let dir = p
            .parent()
            .map(|d| clean(&d.display().to_string()))
            .unwrap_or_default();
        report_import_paths.push(if dir.is_empty() { ".".into() } else { dir });
        report_import_paths.push(".".into());
    }

    let insecure = f.insecure.unwrap_or(false);
    let skip_tls = f.skip_tls.unwrap_or(false);
    let (cacert, cert, key) = (f.cacert, f.cert, f.key);
    if insecure && (cacert.is_some() || cert.is_some() || key.is_some()) {
        bail!("--insecure turns TLS off; it conflicts with --cacert, --cert and --key");
    }
    if cert.is_some() != key.is_some() {
        bail!("--cert and --key go together");
    }

    let http1 = http_mode && !a.http2;
    let given_connections = f.connections;
    // HTTP/1.1 holds one request per connection, so there (as in wrk) connections are workers.
    let c = match (f.concurrency, given_connections) {
        (Some(c), _) => c,
        (None, Some(n)) if http1 => n,
        (None, _) => 50,
    };
    if c == 0 {
        bail!("-c must be at least 1");
    }
    // Stages last their sum, unless -z cuts them short.
    let duration = f
        .duration
        .filter(|d| !d.is_zero())
        .or(stages.as_ref().map(Stages::length));
    let max_duration = f.max_duration.filter(|d| !d.is_zero());
    let n = f.total.unwrap_or(200);
    if n == 0 && duration.is_none() {
        bail!("-n must be at least 1 (or give -z)");
    }
    let connections = if http1 {
        c
    } else {
        given_connections.unwrap_or(1)
    };
    if connections == 0 {
        bail!("--connections must be at least 1");
    }
    let strategy = match f.strategy {
        Some(_) if http1 => {
            bail!("--strategy applies to HTTP/2 (gRPC, or HTTP with --http2)")
        }
        Some(s) => Strategy::parse(&s, connections as usize)
            .map_err(|e| PlanError::new(format!("--strategy: {e}")))?,
        None if connections > 1 => Strategy::Pool(connections as usize),
        None => Strategy::Single,
    };
    let service_config = match f.service_config {
        Some(_) if http1 => {
            bail!("--service-config applies to gRPC calls")
        }
        Some(s) => Some(std::sync::Arc::new(service_config(&s)?)),
        None => None,
    };
    let lb = match f.lb_strategy {
        Some(_) if http1 => bail!("--lb-strategy applies to HTTP/2 (gRPC, or HTTP with --http2)"),
        Some(s) => s
            .parse::<volley_client::Policy>()
            .map_err(|e| PlanError::new(format!("--lb-strategy: {e}")))?,
        None => service_config
            .as_ref()
            .and_then(|c| c.lb_policy())
            .unwrap_or_default(),
    };
    let concurrency = ramp(
        RampFlags {
            schedule: f.concurrency_schedule,
            start: f.concurrency_start,
            end: f.concurrency_end,
            step: f.concurrency_step,
            step_duration: f.concurrency_step_duration,
            max_duration: f.concurrency_max_duration,
        },
        "concurrency",
        c as f64,
        1,
    )?;
    let max_c = if concurrency.shape == Shape::Const {
        c
    } else {
        concurrency.start.max(concurrency.end) as u64
    };
    if concurrency.shape == Shape::Const && connections > c {
        bail!("--connections ({connections}) must not exceed -c ({c})");
    }
    let rps = f.rps.unwrap_or(0);
    let load = ramp(
        RampFlags {
            schedule: f.load_schedule,
            start: f.load_start,
            end: f.load_end,
            step: f.load_step,
            step_duration: f.load_step_duration,
            max_duration: f.load_max_duration,
        },
        "load",
        rps as f64,
        0,
    )?;
    let rate = (load.shape != Shape::Const || rps > 0).then_some(load);
    if stages.is_some() && rate.is_some() {
        bail!("--stage sets the rate over time: give it without -r and --load-*");
    }

    let timeout = match f.timeout {
        None => Some(Duration::from_secs(20)),
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
    };
    let skip_first = f.skip_first.unwrap_or(0);
    if duration.is_none() && skip_first >= n && skip_first > 0 {
        bail!("--skipFirst ({skip_first}) must be less than -n ({n})");
    }

    // Data: exactly one of -d, -D, -b, -B.
    let binary = f.binary.unwrap_or(false);
    let given = [
        f.data.is_some(),
        f.data_file.is_some(),
        binary,
        f.binary_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        bail!("give only one of -d, -D, -b and -B");
    }
    let dynamic = f.stream_dynamic_messages.unwrap_or(false);
    let data = if let Some(d) = f.data {
        if d == "@" {
            DataSource::Json(utf8(read_stdin()?, || {
                "-d @: standard input is not UTF-8".into()
            })?)
        } else {
            DataSource::Json(d)
        }
    } else if let Some(p) = f.data_file {
        if mix::is_lines(&p) {
            mix::data_file(&p, "-D", f.data_order.unwrap_or_default())?
        } else {
            DataSource::Json(utf8(read_file(&p, "-D")?, || {
                format!("-D {}: not UTF-8 text", p.display())
            })?)
        }
    } else if binary {
        DataSource::Binary(read_stdin()?)
    } else if let Some(p) = f.binary_file {
        DataSource::Binary(read_file(&p, "-B")?)
    } else {
        DataSource::Empty
    };
    if f.data_order.is_some() && !matches!(data, DataSource::Lines(..)) {
        bail!("--data-order applies to an NDJSON data file (-D file.ndjson)");
    }
    let is_binary = matches!(data, DataSource::Binary(_));
    if is_binary && dynamic {
        bail!("--stream-dynamic-messages cannot be used with binary data (-b/-B)");
    }
    let metadata = match f.metadata {
        Some(s) if s == "@" => Some(utf8(read_stdin()?, || {
            "-m @: standard input is not UTF-8".into()
        })?),
        Some(s) => Some(s),
        None => match f.metadata_file {
            Some(p) => Some(utf8(read_file(&p, "-M")?, || {
                format!("-M {}: not UTF-8 text", p.display())
            })?),
            None => None,
        },
    };

    let format = f.format.unwrap_or(Format::Summary);
    if format == Format::Wrk && !http_mode {
        bail!("-O wrk is for HTTP targets (http://...)");
    }
    let tags = match f.tags {
        None => None,
        Some(t) => {
            let v: Value = serde_json::from_str(&t)
                .map_err(|e| PlanError::new(format!("--tags: invalid JSON: {e}")))?;
            if !v.is_object() {
                bail!("--tags must be a JSON object");
            }
            Some(v)
        }
    };
    let cpus = f.cpus.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |c| c.max(1) as usize,
    );
    let stream = StreamOptions {
        interval: f.stream_interval.unwrap_or_default(),
        call_duration: f.stream_call_duration.unwrap_or_default(),
        call_count: f.stream_call_count.unwrap_or(0),
        dynamic_messages: dynamic,
    };
    let total = if duration.is_some() { u64::MAX } else { n };
    let shard = match &a.shard {
        None => None,
        Some(text) => {
            // A manifest's shards get their index from Kubernetes, not from here.
            let var = match a.emit {
                Some(_) => Some("0".to_owned()),
                None => std::env::var(super::shard::INDEX_VAR).ok(),
            };
            let s = super::shard::parse_shard(text, var.as_deref())?;
            if max_c < s.count {
                bail!(
                    "--shard {text}: each shard runs the workers numbered I mod N, so -c ({max_c}) must be at least N ({})",
                    s.count
                );
            }
            Some(s)
        }
    };
    let abort_on = match &a.abort_on {
        None => None,
        Some(text) => {
            let t =
                crate::gate::parse(text).map_err(|e| PlanError::new(format!("--abort-on: {e}")))?;
            if t.call.is_some() {
                bail!("--abort-on {text:?}: judges all calls; give it without {{call=...}}");
            }
            if !t.share
                || !matches!(
                    t.metric,
                    crate::gate::Metric::Errors | crate::gate::Metric::Status(_)
                )
            {
                bail!(
                    "--abort-on {text:?}: give errors or status.CODE as a share (errors>50%): what can be judged while the run goes on"
                );
            }
            Some(t)
        }
    };
    let thresholds = crate::gate::parse_all(&f.thresholds.unwrap_or_default())
        .map_err(|e| PlanError::new(e.to_string()))?;
    for t in &thresholds {
        let Some(c) = &t.call else { continue };
        if !mix.iter().any(|m| crate::gate::same_method(&m.name, c)) {
            let names: Vec<&str> = mix.iter().map(|m| m.name.as_str()).collect();
            if names.is_empty() {
                bail!(
                    "threshold {:?}: {{call=...}} selects a method of a mix, and this run calls one method",
                    t.text
                );
            }
            bail!(
                "threshold {:?}: the mix has no method {c} (it has {})",
                t.text,
                names.join(", ")
            );
        }
    }
    let start_at = match &a.start_at {
        None => None,
        Some(text) => Some(super::shard::parse_start_at(
            text,
            std::time::SystemTime::now(),
        )?),
    };
    Ok(Plan {
        host,
        call,
        mix,
        schema,
        insecure,
        cacert,
        cert,
        key,
        cname: f.cname,
        skip_tls,
        authority: f.authority,
        data,
        metadata,
        reflect_metadata: f.reflect_metadata,
        run: RunOptions {
            total,
            duration,
            max_duration,
            duration_stop: f.duration_stop.unwrap_or(DurationStop::Close),
            concurrency,
            rate,
            stages,
            async_mode: f.async_mode.unwrap_or(false),
            connections: connections.min(max_c.max(1)) as usize,
            strategy,
            lb,
            service_config,
            timeout,
            cpus,
            skip_first,
            count_errors: f.count_errors.unwrap_or(false),
            details_cap: if format.needs_details() {
                MAX_DETAILS
            } else {
                0
            },
            stream,
            name: f.name.unwrap_or_default(),
            progress: None,
            shard,
            start_at,
            abort_on,
            live: None,
        },
        gzip: f.enable_compression.unwrap_or(false),
        connect_timeout: f.connect_timeout.unwrap_or(Duration::from_secs(10)),
        keepalive: f.keepalive.filter(|d| !d.is_zero()),
        format,
        output: f.output,
        tags,
        no_templates: f.disable_template_data.unwrap_or(false),
        no_template_functions: f.disable_template_functions.unwrap_or(false),
        max_recv: f.max_recv_message_size.unwrap_or(i32::MAX as usize),
        max_send: f.max_send_message_size.unwrap_or(i32::MAX as usize),
        debug: f.debug,
        http_mode,
        thresholds,
        junit: a.junit.clone(),
        headers: a.header.clone(),
        method: a.method.clone(),
        http2: a.http2,
        raw: Raw {
            total: if duration.is_some() { 0 } else { n },
            concurrency: c,
            rps,
            import_paths: report_import_paths,
            proto: proto.map(|p| p.display().to_string()).unwrap_or_default(),
            protoset: protoset
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            timeout_ns: timeout.map_or(0, |t| t.as_nanos() as u64),
            duration_ns: duration.map_or(0, |d| d.as_nanos() as u64),
            binary: is_binary,
        },
    })
}

/// `--service-config`: JSON given inline (it starts with `{`), or the path of a file holding it.
fn service_config(given: &str) -> Result<volley_client::ServiceConfig, PlanError> {
    let text = if given.trim_start().starts_with('{') {
        given.to_owned()
    } else {
        std::fs::read_to_string(given)
            .map_err(|e| PlanError::new(format!("--service-config: cannot read {given}: {e}")))?
    };
    volley_client::ServiceConfig::parse(&text)
        .map_err(|e| PlanError::new(format!("--service-config: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Format;
    use clap::Parser;

    #[derive(Parser)]
    #[command(version, disable_version_flag = true)]
    struct Cmd {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn args(argv: &[&str]) -> BenchArgs {
        let mut full = vec!["bench"];
        full.extend_from_slice(argv);
        Cmd::try_parse_from(full).unwrap().bench
    }

    fn plan(argv: &[&str]) -> Result<Plan, PlanError> {
        resolve(&args(argv), &Map::new())
    }

    #[test]
    fn seed_commands_parse() {
        let p = plan(&[
            "--insecure",
            "--proto",
            "example/users.proto",
            "--call",
            "api.Users.Get",
            "-d",
            r#"{"id": 228}"#,
            "-c100",
            "-n1000",
            "127.0.0.1:9090",
        ])
        .unwrap();
        assert_eq!(p.run.total, 1000);
        assert_eq!(p.run.concurrency.start, 100.0);
        assert!(p.insecure);
        assert_eq!(p.host.as_deref(), Some("127.0.0.1:9090"));
        assert_eq!(p.raw.import_paths, ["example", "."]);

        let p = plan(&[
            "--insecure",
            "--proto",
            "grpc.proto",
            "--call",
            "grpc.hi/sayHello",
            "--duration=10s",
            "--concurrency=100",
            "--connections=6",
            "0.0.0.0:9503",
        ])
        .unwrap();
        assert_eq!(p.run.duration, Some(Duration::from_secs(10)));
        assert_eq!(p.run.total, u64::MAX);
        assert_eq!(p.run.connections, 6);
    }

    #[test]
    fn clean_like_go() {
        assert_eq!(clean("/a/b/../../c/./d"), "/c/d");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean("./x/"), "x");
        assert_eq!(clean(""), ".");
    }

    #[test]
    fn defaults_are_ghz_defaults() {
        let p = plan(&["--call", "a.B/C"]).unwrap();
        assert_eq!(p.run.total, 200);
        assert_eq!(p.run.concurrency.start, 50.0);
        assert_eq!(p.run.connections, 1);
        assert_eq!(p.run.timeout, Some(Duration::from_secs(20)));
        assert_eq!(p.connect_timeout, Duration::from_secs(10));
        assert!(!p.insecure);
        assert_eq!(p.format, Format::Summary);
        assert!(p.run.rate.is_none());
        let p = plan(&["--call", "a.B/C", "-t", "0"]).unwrap();
        assert_eq!(p.run.timeout, None);
    }

    #[test]
    fn validation_errors_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "--call is required"),
            (&["--call", "a.B/C", "-c", "0"], "-c must be at least 1"),
            (
                &["--call", "a.B/C", "-c", "2", "--connections", "3"],
                "--connections (3) must not exceed -c (2)",
            ),
            (
                &["--call", "a.B/C", "-d", "{}", "-D", "x.json"],
                "only one of -d, -D, -b and -B",
            ),
            (&["--call", "a.B/C", "-z", "ten"], "-z: invalid duration"),
            (&["--call", "a.B/C", "-O", "xml"], "-O: invalid format"),
            (
                &[
                    "--call",
                    "a.B/C",
                    "--load-schedule",
                    "step",
                    "--load-start",
                    "5",
                    "--load-step",
                    "5",
                ],
                "step-duration is required",
            ),
            (
                &[
                    "--call",
                    "a.B/C",
                    "--load-schedule",
                    "line",
                    "--load-start",
                    "5",
                    "--load-end",
                    "5",
                    "--load-step",
                    "1",
                ],
                "must differ",
            ),
            (
                &["--call", "a.B/C", "--skipFirst", "300"],
                "--skipFirst (300) must be less than -n (200)",
            ),
            (
                &["--call", "a.B/C", "--insecure", "--cacert", "ca.pem"],
                "conflicts with --cacert",
            ),
            (
                &["--call", "a.B/C", "--tags", "[1]"],
                "--tags must be a JSON object",
            ),
        ];
        for (argv, want) in cases {
            let e = plan(argv).unwrap_err().to_string();
            assert!(e.contains(want), "{argv:?}: {e}");
        }
    }

    #[test]
    fn flags_beat_config_which_beats_defaults() {
        let mut cfg = Map::new();
        cfg.insert("call".into(), "api.Users.Get".into());
        cfg.insert("total".into(), 500.into());
        cfg.insert("concurrency".into(), 20.into());
        cfg.insert("insecure".into(), true.into());
        cfg.insert("timeout".into(), "5s".into());
        let p = resolve(&args(&["-c", "10"]), &cfg).unwrap();
        assert_eq!(p.call, "api.Users.Get");
        assert_eq!(p.run.total, 500);
        assert_eq!(p.run.concurrency.start, 10.0);
        assert!(p.insecure);
        assert_eq!(p.run.timeout, Some(Duration::from_secs(5)));
        cfg.insert("total".into(), "many".into());
        let e = resolve(&args(&[]), &cfg).unwrap_err().to_string();
        assert!(e.contains("config key \"total\""), "{e}");
    }
}
