//! `volley mock` (and the binary run as `gripmock`): GripMock's command line, flags and
//! environment, handed to `volley_mock`. `mock check` polls the server's health as `gripmock
//! check` does.

use std::{ffi::OsString, path::PathBuf, process::ExitCode, time::Duration};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use volley_proto::gofmt::parse_duration;

/// `volley mock`: a drop-in for GripMock.
#[derive(Debug, Args)]
pub struct MockArgs {
    /// `check`: wait until a running mock is ready.
    #[command(subcommand)]
    pub command: Option<MockCommand>,
    /// Stub files or folders (subfolders too): .json, .yaml, .yml (repeatable).
    #[arg(short = 's', long = "stub", alias = "stubs", value_name = "PATH")]
    pub stub: Vec<PathBuf>,
    /// Import roots for the protos, searched first (repeatable, or comma-separated).
    #[arg(short = 'i', long, value_delimiter = ',', value_name = "DIR")]
    pub imports: Vec<PathBuf>,
    /// gRPC host (GripMock v1's flag; else GRPC_HOST, else 0.0.0.0).
    #[arg(long, value_name = "HOST")]
    pub grpc_listen: Option<String>,
    /// gRPC port (GripMock v1's flag; else GRPC_PORT, else 4770).
    #[arg(long, value_name = "PORT")]
    pub grpc_port: Option<u16>,
    /// Admin API host (GripMock v1's flag; else HTTP_HOST, else 0.0.0.0).
    #[arg(long, value_name = "HOST")]
    pub admin_listen: Option<String>,
    /// Admin API port (GripMock v1's flag; else HTTP_PORT, else 4771).
    #[arg(long, value_name = "PORT")]
    pub admin_port: Option<u16>,
    /// Require `authorization: Bearer TOKEN` on every admin API request (401 without); GripMock's
    /// admin API is open. From the environment, it stays out of the process list.
    #[arg(
        long,
        env = "VOLLEY_ADMIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
    /// Refuse stub keys GripMock ignores (default: one warning line each, then skipped).
    #[arg(long)]
    pub strict: bool,
    /// Server threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Record: proxy every call to this server (HOST:PORT) and write each distinct one as a
    /// stub under --stubs-out (GripMock has no record mode; WireMock's, for gRPC).
    #[arg(long, value_name = "UPSTREAM", requires = "stubs_out")]
    pub record: Option<String>,
    /// Where --record writes its stubs (a folder per service, a JSON file per distinct call).
    #[arg(long, value_name = "DIR")]
    pub stubs_out: Option<PathBuf>,
    /// Where --record writes every call's request(s) as NDJSON for `volley bench --data-file`:
    /// a .ndjson file, or a folder with one file per method.
    #[arg(long, value_name = "PATH", requires = "record")]
    pub data_out: Option<PathBuf>,
    /// GripMock v1's output folder for generated code: accepted and ignored (nothing is
    /// generated).
    #[arg(short = 'o', hide = true, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// .proto files, folders (every .proto below) and .pb/.protoset descriptor sets.
    #[arg(value_name = "PROTO")]
    pub sources: Vec<PathBuf>,
}

/// `volley mock check`.
#[derive(Debug, Subcommand)]
pub enum MockCommand {
    /// Poll the mock's health (`gripmock`) on GRPC_ADDR until it serves; exit 1 on timeout.
    Check {
        /// How long to wait.
        #[arg(short = 't', long, value_parser = parse_duration, default_value = "10s")]
        timeout: Duration,
        /// Between two polls.
        #[arg(long, value_parser = parse_duration, default_value = "500ms")]
        interval: Duration,
        /// Print nothing.
        #[arg(long)]
        silent: bool,
    },
    /// Send each stub's request to the real service and compare its answer with the stub's
    /// (exit 1 when one differs).
    Verify(VerifyArgs),
}

/// `volley mock verify --against ADDRESS STUBS...`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The real service: host:port (plaintext), http://host:port, https://host:port (TLS).
    #[arg(long, value_name = "ADDRESS")]
    pub against: String,
    /// Its .proto files, folders or descriptor sets (default: the service's reflection).
    #[arg(long = "proto", value_name = "PATH")]
    pub protos: Vec<PathBuf>,
    /// Import roots for --proto (repeatable).
    #[arg(short = 'i', long = "import-path", value_name = "DIR")]
    pub imports: Vec<PathBuf>,
    /// A field left out of every comparison, by its path (`id`, `order.created_at`);
    /// repeatable. A stub lists its own under `ignoreFields`.
    #[arg(long, value_name = "FIELD")]
    pub ignore: Vec<String>,
    /// Each call's deadline.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// `text` (a line per stub) or `json`.
    #[arg(short = 'O', long = "format", default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Also write the verdicts as JUnit XML here (a test case per stub).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Stub files or folders (subfolders too).
    #[arg(value_name = "STUBS", required = true)]
    pub stubs: Vec<PathBuf>,
}

/// GripMock v1's flags take one dash, as Go's flag package parses them.
const GO_FLAGS: [&str; 12] = [
    "stub",
    "imports",
    "grpc-listen",
    "grpc-port",
    "admin-listen",
    "admin-port",
    "admin-token",
    "strict",
    "threads",
    "timeout",
    "interval",
    "silent",
];

/// The command line as clap reads it: `gripmock ARGS` (a binary of that name, a symlink or a
/// copy) is `volley mock ARGS`, v1's leading `gripmock` argument dropped; in `mock`, Go-style
/// `-stub=x` is `--stub=x`; `grpcui ARGS` is `volley ui ARGS`, Go-style flags taken the same way.
pub fn argv(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let invoked = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_stem().map(|s| s.to_owned()));
    // Run as `k6` (a symlink), `k6 run script.js` is `volley run script.js`.
    if invoked.as_ref().is_some_and(|s| s == "k6") {
        return args;
    }
    // Run as `grpcui`, the binary is `volley ui`; there, Go's `-plaintext` is `--plaintext`.
    if invoked.as_ref().is_some_and(|s| s == "grpcui") {
        args.insert(1, "ui".into());
    }
    if args.get(1).is_some_and(|a| a == "ui") {
        volley_ui::go_style(&mut args[2..]);
        return args;
    }
    if invoked.is_some_and(|s| s == "gripmock") {
        if args.get(1).is_some_and(|a| a == "gripmock") {
            args.remove(1);
        }
        args.insert(1, "mock".into());
    }
    if args.get(1).is_none_or(|a| a != "mock") {
        return args;
    }
    for a in args.iter_mut().skip(2) {
        let Some(s) = a.to_str() else { continue };
        let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
            continue;
        };
        let name = rest.split('=').next().unwrap_or_default();
        if GO_FLAGS.contains(&name) {
            *a = format!("-{s}").into();
        }
    }
    args
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `host:port` from a flag or GripMock's `PREFIX_ADDR`, `PREFIX_HOST`, `PREFIX_PORT` (the flags
/// win, then `_ADDR`).
fn address(host: Option<&str>, port: Option<u16>, prefix: &str, default_port: u16) -> String {
    if host.is_none()
        && port.is_none()
        && let Some(addr) = env(&format!("{prefix}_ADDR"))
    {
        return addr;
    }
    let host = host
        .map(str::to_owned)
        .or_else(|| env(&format!("{prefix}_HOST")))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "0.0.0.0".to_owned());
    let port = port
        .map(|p| p.to_string())
        .or_else(|| env(&format!("{prefix}_PORT")))
        .unwrap_or_else(|| default_port.to_string());
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// GripMock's `STUB_WATCHER_*`: on by default, looking every second (`fsnotify` is read as the
/// same one-second look: changes are seen within it).
fn watch() -> Result<Option<Duration>> {
    let enabled = env("STUB_WATCHER_ENABLED").is_none_or(|v| !matches!(v.as_str(), "false" | "0"));
    if !enabled {
        return Ok(None);
    }
    match env("STUB_WATCHER_INTERVAL") {
        None => Ok(Some(Duration::from_secs(1))),
        Some(v) => match parse_duration(&v) {
            Ok(d) if !d.is_zero() => Ok(Some(d)),
            _ => bail!("STUB_WATCHER_INTERVAL={v}: not a duration (1s, 500ms)"),
        },
    }
}

/// GripMock's `HISTORY_ENABLED` and `HISTORY_LIMIT` (`64M`, K/M/G or bytes): the history's
/// byte budget, 0 when off.
fn history() -> Result<usize> {
    if env("HISTORY_ENABLED").is_some_and(|v| matches!(v.as_str(), "false" | "0")) {
        return Ok(0);
    }
    let Some(v) = env("HISTORY_LIMIT") else {
        return Ok(64 << 20);
    };
    let (n, unit) = match v.trim().to_ascii_uppercase() {
        t if t.ends_with('K') => (t.trim_end_matches('K').to_owned(), 1 << 10),
        t if t.ends_with('M') => (t.trim_end_matches('M').to_owned(), 1 << 20),
        t if t.ends_with('G') => (t.trim_end_matches('G').to_owned(), 1 << 30),
        t => (t, 1),
    };
    match n.parse::<usize>() {
        Ok(n) => Ok(n.saturating_mul(unit)),
        Err(_) => bail!("HISTORY_LIMIT={v}: not a size (64M, 512K, bytes)"),
    }
}

/// Runs `volley mock`.
pub fn run(args: MockArgs) -> Result<ExitCode> {
    let grpc_addr = address(args.grpc_listen.as_deref(), args.grpc_port, "GRPC", 4770);
    match args.command {
        Some(MockCommand::Check {
            timeout,
            interval,
            silent,
        }) => return check(&grpc_addr, timeout, interval, silent).map(|()| ExitCode::SUCCESS),
        Some(MockCommand::Verify(v)) => return verify(v),
        None => {}
    }
    if args.output.is_some() {
        tracing::warn!("-o: volley mock generates no code; ignored");
    }
    volley_mock::run(
        volley_mock::Config {
            grpc_addr,
            admin_addr: address(args.admin_listen.as_deref(), args.admin_port, "HTTP", 4771),
            stubs: args.stub,
            imports: args.imports,
            sources: args.sources,
            strict: args.strict,
            watch: watch()?,
            threads: args.threads,
            history: history()?,
            admin_token: args.admin_token.filter(|t| !t.is_empty()),
            record: args.record.map(|upstream| volley_mock::record::Record {
                upstream,
                stubs_out: args.stubs_out.unwrap_or_else(|| PathBuf::from("stubs")),
                data_out: args.data_out,
            }),
        },
        crate::signal::next,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `volley mock verify`: the verdicts printed (and written as JUnit), exit 1 when one fails.
fn verify(v: VerifyArgs) -> Result<ExitCode> {
    use volley_mock::contract;
    let against = contract::Against {
        target: v.against.clone(),
        stubs: v.stubs,
        sources: v.protos,
        imports: v.imports,
        ignore: v.ignore,
        timeout: v.timeout,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let all = rt.block_on(contract::verify(&against))?;
    match v.format.as_str() {
        "json" => println!("{:#}", contract::report::json(&all, &v.against)),
        _ => print!("{}", contract::report::text(&all, &v.against)),
    }
    if let Some(path) = &v.junit {
        std::fs::write(path, contract::report::junit(&all, &v.against))
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", path.display()))?;
    }
    Ok(match all.iter().any(|c| c.verdict.failed()) {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    })
}

/// Polls `grpc.health.v1.Health/Check {service: "gripmock"}` on `addr` until SERVING.
fn check(addr: &str, timeout: Duration, interval: Duration, silent: bool) -> Result<()> {
    use volley_proto::pb::health::{HealthCheckRequest, HealthCheckResponse};
    let target = match addr.parse::<std::net::SocketAddr>() {
        Ok(a) => volley_mock::server::reachable(a).to_string(),
        Err(_) => addr.to_owned(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let serving = rt.block_on(async {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Ok(client) = volley_client::Grpc::connect(&target).await {
                let mut req = volley_client::Request::new(HealthCheckRequest {
                    service: "gripmock".into(),
                });
                req.set_timeout(interval.max(Duration::from_millis(100)));
                let reply: Result<volley_client::Response<HealthCheckResponse>, _> =
                    client.unary("/grpc.health.v1.Health/Check", req).await;
                if reply.is_ok_and(|r| r.get_ref().status == 1) {
                    return true;
                }
            }
            if tokio::time::Instant::now() + interval > deadline {
                return false;
            }
            tokio::time::sleep(interval).await;
        }
    });
    if !serving {
        bail!("{target} did not become ready within {timeout:?}");
    }
    if !silent {
        println!("{target} is ready");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn gripmock_is_volley_mock_with_go_style_flags() {
        assert_eq!(
            argv(os(&[
                "/usr/bin/gripmock",
                "-stub=s",
                "-grpc-port",
                "1",
                "-s",
                "x",
                "a.proto"
            ])),
            os(&[
                "/usr/bin/gripmock",
                "mock",
                "--stub=s",
                "--grpc-port",
                "1",
                "-s",
                "x",
                "a.proto"
            ])
        );
        assert_eq!(
            argv(os(&["gripmock", "gripmock", "--stub=s"])),
            os(&["gripmock", "mock", "--stub=s"])
        );
        assert_eq!(
            argv(os(&["volley", "serve", "-stub=s"])),
            os(&["volley", "serve", "-stub=s"])
        );
        assert_eq!(
            argv(os(&["gripmock", "check", "-timeout=5s", "--silent"])),
            os(&["gripmock", "mock", "check", "--timeout=5s", "--silent"])
        );
    }

    #[test]
    fn flags_win_over_defaults() {
        assert_eq!(
            address(Some("127.0.0.1"), Some(1), "NOPE", 4770),
            "127.0.0.1:1"
        );
        assert_eq!(address(Some(""), None, "NOPE", 4771), "0.0.0.0:4771");
        assert_eq!(address(Some("::1"), Some(2), "NOPE", 4771), "[::1]:2");
    }
}
