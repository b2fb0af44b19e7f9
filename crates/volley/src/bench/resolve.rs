//! From flags and config file to a checked plan: every ghz default and validation rule, each
//! failure one line naming the flag.

use std::{io::Read, path::PathBuf, time::Duration};

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value};
use volley_bench::{
    DurationStop, Format, RunOptions, StreamOptions,
    options::MAX_DETAILS,
    schedule::{Ramp, Shape},
};

use crate::cli::{bench::BenchArgs, duration::parse_duration, size::parse_size};
use volley_client::Strategy;

/// Where the schema comes from.
#[derive(Debug, Clone)]
pub enum SchemaSource {
    /// `--proto` and its import paths.
    Proto(PathBuf, Vec<PathBuf>),
    /// `--protoset`.
    Protoset(PathBuf),
    /// Server reflection.
    Reflection,
}

/// Request data as given.
#[derive(Debug, Clone)]
pub enum DataSource {
    /// No data: one empty message.
    Empty,
    /// JSON text (maybe templated).
    Json(String),
    /// Serialized protobuf.
    Binary(Vec<u8>),
}

/// The checked plan of a bench run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Target, if given.
    pub host: Option<String>,
    /// `--call`.
    pub call: String,
    /// Schema source.
    pub schema: SchemaSource,
    /// Plaintext.
    pub insecure: bool,
    /// `--cacert`.
    pub cacert: Option<PathBuf>,
    /// `--cert`.
    pub cert: Option<PathBuf>,
    /// `--key`.
    pub key: Option<PathBuf>,
    /// `--cname`.
    pub cname: Option<String>,
    /// `--skipTLS`.
    pub skip_tls: bool,
    /// `--authority`.
    pub authority: Option<String>,
    /// Request data.
    pub data: DataSource,
    /// Metadata JSON object text.
    pub metadata: Option<String>,
    /// Reflection-only metadata JSON object text.
    pub reflect_metadata: Option<String>,
    /// The engine's options.
    pub run: RunOptions,
    /// gzip requests.
    pub gzip: bool,
    /// Dial timeout.
    pub connect_timeout: Duration,
    /// Keepalive.
    pub keepalive: Option<Duration>,
    /// Report format.
    pub format: Format,
    /// Report file.
    pub output: Option<PathBuf>,
    /// `--tags` parsed.
    pub tags: Option<Value>,
    /// `--disable-template-data`.
    pub no_templates: bool,
    /// `--disable-template-functions`.
    pub no_template_functions: bool,
    /// `--max-recv-message-size` (bytes).
    pub max_recv: usize,
    /// `--max-send-message-size` (bytes).
    pub max_send: usize,
    /// `--debug` log path.
    pub debug: Option<PathBuf>,
    /// HTTP load: the URL was http(s)://.
    pub http_mode: bool,
    /// HTTP load: `-H` headers.
    pub headers: Vec<String>,
    /// HTTP load: `--method`.
    pub method: Option<String>,
    /// HTTP load: `--http2`.
    pub http2: bool,
    /// The raw numbers for the report's `options` block.
    pub raw: Raw,
}

/// Option values echoed in the report as given.
#[derive(Debug, Clone, Default)]
pub struct Raw {
    /// -n as given (0 with -z).
    pub total: u64,
    /// -c.
    pub concurrency: u64,
    /// --rps.
    pub rps: u64,
    /// Import paths as the report lists them.
    pub import_paths: Vec<String>,
    /// --proto as given.
    pub proto: String,
    /// --protoset as given.
    pub protoset: String,
    /// Timeout as given (ns; 0 = none).
    pub timeout_ns: u64,
    /// -z (ns).
    pub duration_ns: u64,
    /// Is the data binary.
    pub binary: bool,
}

/// Reads flags over config values over ghz defaults.
struct Merge<'a> {
    cfg: &'a Map<String, Value>,
}

impl Merge<'_> {
    fn string(&self, cli: &Option<String>, key: &str) -> Result<Option<String>> {
        if cli.is_some() {
            return Ok(cli.clone());
        }
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => bail!("config key {key:?} must be a string, not {other}"),
        }
    }

    fn path(&self, cli: &Option<PathBuf>, key: &str) -> Result<Option<PathBuf>> {
        if cli.is_some() {
            return Ok(cli.clone());
        }
        Ok(self.string(&None, key)?.map(PathBuf::from))
    }

    fn u64(&self, cli: Option<u64>, key: &str) -> Result<Option<u64>> {
        if cli.is_some() {
            return Ok(cli);
        }
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| anyhow!("config key {key:?} must be a whole number, not {v}")),
        }
    }

    fn i64(&self, cli: Option<i64>, key: &str) -> Result<Option<i64>> {
        if cli.is_some() {
            return Ok(cli);
        }
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| anyhow!("config key {key:?} must be a whole number, not {v}")),
        }
    }

    fn flag(&self, cli: bool, key: &str) -> Result<bool> {
        if cli {
            return Ok(true);
        }
        match self.cfg.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => bail!("config key {key:?} must be true or false, not {v}"),
        }
    }

    /// A duration flag (Go syntax); config values may be Go strings or nanoseconds.
    fn duration(&self, cli: &Option<String>, key: &str, flag: &str) -> Result<Option<Duration>> {
        let text = match cli {
            Some(s) => s.clone(),
            None => match self.cfg.get(key) {
                None | Some(Value::Null) => return Ok(None),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => {
                    return Ok(Some(Duration::from_nanos(n.as_u64().ok_or_else(|| {
                        anyhow!("config key {key:?} must be a duration such as \"10s\"")
                    })?)));
                }
                Some(v) => bail!("config key {key:?} must be a duration such as \"10s\", not {v}"),
            },
        };
        parse_duration(&text)
            .map(Some)
            .map_err(|e| anyhow!("{flag}: {e}"))
    }

    /// JSON given as text (flag) or inline object (config).
    fn json_text(&self, cli: &Option<String>, key: &str) -> Option<String> {
        if cli.is_some() {
            return cli.clone();
        }
        match self.cfg.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        }
    }
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .map_err(|e| anyhow!("cannot read standard input: {e}"))?;
    Ok(buf)
}

fn read_file(path: &PathBuf, flag: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| anyhow!("cannot read {flag} {}: {e}", path.display()))
}

/// The six flags of one schedule (`--load-*` or `--concurrency-*`).
struct RampFlags<'a> {
    schedule: &'a Option<String>,
    start: Option<u64>,
    end: Option<u64>,
    step: Option<i64>,
    step_duration: &'a Option<String>,
    max_duration: &'a Option<String>,
}

fn ramp(
    m: &Merge<'_>,
    a: RampFlags<'_>,
    prefix: &str,
    constant: f64,
    default_step: i64,
) -> Result<Ramp> {
    let RampFlags {
        schedule,
        start,
        end,
        step,
        step_duration: step_dur,
        max_duration: max_dur,
    } = a;
    let shape = match m.string(schedule, &format!("{prefix}-schedule"))? {
        None => Shape::Const,
        Some(s) => Shape::parse(&s).map_err(|e| anyhow!("--{prefix}-schedule: {e}"))?,
    };
    if shape == Shape::Const {
        return Ok(Ramp::constant(constant));
    }
    let r = Ramp {
        shape,
        start: m.u64(start, &format!("{prefix}-start"))?.unwrap_or(0) as f64,
        end: m.u64(end, &format!("{prefix}-end"))?.unwrap_or(0) as f64,
        step: m
            .i64(step, &format!("{prefix}-step"))?
            .unwrap_or(default_step) as f64,
        step_duration: m
            .duration(
                step_dur,
                &format!("{prefix}-step-duration"),
                &format!("--{prefix}-step-duration"),
            )?
            .unwrap_or_default(),
        max_duration: m
            .duration(
                max_dur,
                &format!("{prefix}-max-duration"),
                &format!("--{prefix}-max-duration"),
            )?
            .unwrap_or_default(),
    };
    r.validate(&format!("--{prefix}"))
        .map_err(|e| anyhow!("{e}"))?;
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

/// Checks and resolves the arguments.
pub fn resolve(a: &BenchArgs, cfg: &Map<String, Value>) -> Result<Plan> {
    let m = Merge { cfg };
    let host = m.string(&a.host, "host")?;
    let http_mode = host
        .as_deref()
        .is_some_and(|h| h.starts_with("http://") || h.starts_with("https://"));
    let call = match m.string(&a.call, "call")? {
        Some(c) => c,
        None if http_mode => String::new(),
        None => bail!("--call is required (package.Service/Method)"),
    };

    let proto = m.path(&a.proto, "proto")?;
    let protoset = m.path(&a.protoset, "protoset")?;
    let mut import_paths: Vec<String> = match &a.import_paths {
        Some(v) => v.clone(),
        None => match cfg.get("import-paths") {
            Some(Value::Array(v)) => v
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect(),
            Some(Value::String(s)) => s.split(',').map(String::from).collect(),
            _ => Vec::new(),
        },
    };
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

    let insecure = m.flag(a.insecure, "insecure")?;
    let skip_tls = m.flag(a.skip_tls, "skipTLS")?;
    let cacert = m.path(&a.cacert, "cacert")?;
    let cert = m.path(&a.cert, "cert")?;
    let key = m.path(&a.key, "key")?;
    if insecure && (cacert.is_some() || cert.is_some() || key.is_some()) {
        bail!("--insecure turns TLS off; it conflicts with --cacert, --cert and --key");
    }
    if cert.is_some() != key.is_some() {
        bail!("--cert and --key go together");
    }

    let http1 = http_mode && !a.http2;
    let given_connections = m.u64(a.connections, "connections")?;
    // HTTP/1.1 holds one request per connection, so there (as in wrk) connections are workers.
    let c = match (m.u64(a.concurrency, "concurrency")?, given_connections) {
        (Some(c), _) => c,
        (None, Some(n)) if http1 => n,
        (None, _) => 50,
    };
    if c == 0 {
        bail!("-c must be at least 1");
    }
    let duration = m
        .duration(&a.duration, "duration", "-z")?
        .filter(|d| !d.is_zero());
    let max_duration = m
        .duration(&a.max_duration, "max-duration", "-x")?
        .filter(|d| !d.is_zero());
    let n = m.u64(a.total, "total")?.unwrap_or(200);
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
    let strategy = match m.string(&a.strategy, "strategy")? {
        Some(_) if http1 => {
            bail!("--strategy applies to HTTP/2 (gRPC, or HTTP with --http2)")
        }
        Some(s) => {
            Strategy::parse(&s, connections as usize).map_err(|e| anyhow!("--strategy: {e}"))?
        }
        None if connections > 1 => Strategy::Pool(connections as usize),
        None => Strategy::Single,
    };
    let concurrency = ramp(
        &m,
        RampFlags {
            schedule: &a.concurrency_schedule,
            start: a.concurrency_start,
            end: a.concurrency_end,
            step: a.concurrency_step,
            step_duration: &a.concurrency_step_duration,
            max_duration: &a.concurrency_max_duration,
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
    let rps = m.u64(a.rps, "rps")?.unwrap_or(0);
    let load = ramp(
        &m,
        RampFlags {
            schedule: &a.load_schedule,
            start: a.load_start,
            end: a.load_end,
            step: a.load_step,
            step_duration: &a.load_step_duration,
            max_duration: &a.load_max_duration,
        },
        "load",
        rps as f64,
        0,
    )?;
    let rate = (load.shape != Shape::Const || rps > 0).then_some(load);
    let async_mode = m.flag(a.async_mode, "async")?;

    let timeout = match m.duration(&a.timeout, "timeout", "-t")? {
        None => Some(Duration::from_secs(20)),
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
    };
    let duration_stop = match m.string(&a.duration_stop, "duration-stop")? {
        None => DurationStop::Close,
        Some(s) => DurationStop::parse(&s).map_err(|e| anyhow!("{e}"))?,
    };
    let skip_first = m.u64(a.skip_first, "skipFirst")?.unwrap_or(0);
    if duration.is_none() && skip_first >= n && skip_first > 0 {
        bail!("--skipFirst ({skip_first}) must be less than -n ({n})");
    }
    let count_errors = m.flag(a.count_errors, "count-errors")?;

    // Data: exactly one of -d, -D, -b, -B.
    let data_text = m.json_text(&a.data, "data");
    let data_file = m.path(&a.data_file, "data-file")?;
    let binary = m.flag(a.binary, "binary")?;
    let binary_file = m.path(&a.binary_file, "binary-file")?;
    let given = [
        data_text.is_some(),
        data_file.is_some(),
        binary,
        binary_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        bail!("give only one of -d, -D, -b and -B");
    }
    let dynamic = m.flag(a.stream_dynamic_messages, "stream-dynamic-messages")?;
    let data = if let Some(d) = data_text {
        if d == "@" {
            DataSource::Json(
                String::from_utf8(read_stdin()?)
                    .map_err(|_| anyhow!("-d @: standard input is not UTF-8"))?,
            )
        } else {
            DataSource::Json(d)
        }
    } else if let Some(f) = data_file {
        DataSource::Json(
            String::from_utf8(read_file(&f, "-D")?)
                .map_err(|_| anyhow!("-D {}: not UTF-8 text", f.display()))?,
        )
    } else if binary {
        DataSource::Binary(read_stdin()?)
    } else if let Some(f) = binary_file {
        DataSource::Binary(read_file(&f, "-B")?)
    } else {
        DataSource::Empty
    };
    let is_binary = matches!(data, DataSource::Binary(_));
    if is_binary && dynamic {
        bail!("--stream-dynamic-messages cannot be used with binary data (-b/-B)");
    }
    let metadata = match m.json_text(&a.metadata, "metadata") {
        Some(s) if s == "@" => Some(String::from_utf8(read_stdin()?)?),
        Some(s) => Some(s),
        None => match m.path(&a.metadata_file, "metadata-file")? {
            Some(f) => Some(String::from_utf8(read_file(&f, "-M")?)?),
            None => None,
        },
    };
    let reflect_metadata = m.json_text(&a.reflect_metadata, "reflect-metadata");

    let format = match m.string(&a.format, "format")? {
        None => Format::Summary,
        Some(f) => Format::parse(&f).map_err(|e| anyhow!("-O: {e}"))?,
    };
    if format == Format::Wrk && !http_mode {
        bail!("-O wrk is for HTTP targets (http://...)");
    }
    let output = m.path(&a.output, "output")?;
    let tags = match m.json_text(&a.tags, "tags") {
        None => None,
        Some(t) => {
            let v: Value =
                serde_json::from_str(&t).map_err(|e| anyhow!("--tags: invalid JSON: {e}"))?;
            if !v.is_object() {
                bail!("--tags must be a JSON object");
            }
            Some(v)
        }
    };
    let cpus = m.u64(a.cpus, "cpus")?.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |c| c.max(1) as usize,
    );
    let connect_timeout = m
        .duration(&a.connect_timeout, "connect-timeout", "--connect-timeout")?
        .unwrap_or(Duration::from_secs(10));
    let keepalive = m
        .duration(&a.keepalive, "keepalive", "--keepalive")?
        .filter(|d| !d.is_zero());
    let size = |v: Option<String>, flag: &str| -> Result<usize> {
        v.map_or(Ok(i32::MAX as usize), |s| {
            parse_size(&s).map_err(|e| anyhow!("{flag}: {e}"))
        })
    };
    let max_recv = size(
        m.string(&a.max_recv_message_size, "max-recv-message-size")?,
        "--max-recv-message-size",
    )?;
    let max_send = size(
        m.string(&a.max_send_message_size, "max-send-message-size")?,
        "--max-send-message-size",
    )?;
    let stream = StreamOptions {
        interval: m
            .duration(&a.stream_interval, "stream-interval", "--stream-interval")?
            .unwrap_or_default(),
        call_duration: m
            .duration(
                &a.stream_call_duration,
                "stream-call-duration",
                "--stream-call-duration",
            )?
            .unwrap_or_default(),
        call_count: m
            .u64(a.stream_call_count, "stream-call-count")?
            .unwrap_or(0),
        dynamic_messages: dynamic,
    };
    let name = m.string(&a.name, "name")?.unwrap_or_default();
    let total = if duration.is_some() { u64::MAX } else { n };
    Ok(Plan {
        host,
        call,
        schema,
        insecure,
        cacert,
        cert,
        key,
        cname: m.string(&a.cname, "cname")?,
        skip_tls,
        authority: m.string(&a.authority, "authority")?,
        data,
        metadata,
        reflect_metadata,
        run: RunOptions {
            total,
            duration,
            max_duration,
            duration_stop,
            concurrency,
            rate,
            async_mode,
            connections: connections.min(max_c.max(1)) as usize,
            strategy,
            timeout,
            cpus,
            skip_first,
            count_errors,
            details_cap: if format.needs_details() {
                MAX_DETAILS
            } else {
                0
            },
            stream,
            name: name.clone(),
            progress: None,
        },
        gzip: m.flag(a.enable_compression, "enable-compression")?,
        connect_timeout,
        keepalive,
        format,
        output,
        tags,
        no_templates: m.flag(a.disable_template_data, "disable-template-data")?,
        no_template_functions: m
            .flag(a.disable_template_functions, "disable-template-functions")?,
        max_recv,
        max_send,
        debug: m.path(&a.debug, "debug")?,
        http_mode,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> BenchArgs {
        let mut full = vec!["volley", "bench"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Bench(b) => *b,
            _ => unreachable!(),
        }
    }

    fn plan(argv: &[&str]) -> Result<Plan> {
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
