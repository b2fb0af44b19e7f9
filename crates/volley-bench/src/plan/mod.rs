//! The plan of a run: ghz's command line (`args`) and config file (`config`) read into typed
//! options (`flags`), checked and completed with ghz's defaults (`resolve`) into a [`Plan`]; the
//! engine's part of it is [`RunOptions`], with its schedules (`schedule`, `stages`). The plan's
//! vocabulary lives here, where it is first defined: thresholds (`threshold`), shards (`shard`),
//! what watches the run (`watch`).

pub mod args;
mod config;
mod error;
mod flags;
pub mod mix;
pub mod options;
mod resolve;
pub mod schedule;
pub mod shard;
mod source;
pub mod stages;
pub mod threshold;
pub mod units;
mod watch;

use std::{path::PathBuf, time::Duration};

use serde_json::Value;

pub use args::BenchArgs;
pub use error::PlanError;
pub use options::{
    ClientPath, DurationStop, EndReason, Format, Pace, RunOptions, Stop, StreamOptions,
};
pub use resolve::{from_args, resolve};
pub use shard::Emit;
pub use source::{DataSource, LineOrder, SchemaSource};
pub use threshold::Threshold;
pub use watch::WatchOptions;

/// The checked plan of a bench run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Target, if given.
    pub host: Option<String>,
    /// `--call` (under a mix: each entry with its weight, comma-separated).
    pub call: String,
    /// A mix of calls (`--call A:80 --call B:20`, a scenario's `mix:`); empty for one method.
    pub mix: Vec<mix::MixSpec>,
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
    /// `--protocol grpc-web|connect`: unary calls over gRPC-Web or Connect (`None`: gRPC).
    pub protocol: Option<volley_call::dynamic::Protocol>,
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
    /// `--threshold`s (and the config's `thresholds`), parsed.
    pub thresholds: Vec<Threshold>,
    /// `--junit`: where the verdicts go as JUnit XML.
    pub junit: Option<PathBuf>,
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
    /// `--server-metrics`: the server's `/metrics` URL, scraped before and after the run.
    pub server_metrics: Option<String>,
    /// What watches the run as it goes (`--tui`, `--live`, `--prometheus-listen`).
    pub watch: WatchOptions,
    /// `--emit`: print the plan for another system instead of running it.
    pub emit: Option<Emit>,
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
