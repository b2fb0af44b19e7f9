//! `volley run`'s command line: k6's `k6 run` flags, as k6 spells them.

use clap::Parser;

/// Runs a k6 script (JavaScript with `k6/net/grpc`) on volley's engine: `volley run script.js`
/// takes what `k6 run script.js` takes.
#[derive(Debug, Parser)]
#[command(name = "volley run", disable_version_flag = true)]
pub struct RunArgs {
    /// The script.
    pub script: String,
    /// Number of VUs to run concurrently.
    #[arg(short = 'u', long)]
    pub vus: Option<u64>,
    /// Test duration limit (`30s`, `1m30s`).
    #[arg(short = 'd', long)]
    pub duration: Option<String>,
    /// Script total iteration limit (among all VUs).
    #[arg(short = 'i', long)]
    pub iterations: Option<u64>,
    /// Add a stage, as `[duration]:[target]` (repeatable; or several separated by commas).
    #[arg(short = 's', long = "stage")]
    pub stages: Vec<String>,
    /// Add an environment variable, `KEY=VALUE`, for the script's `__ENV` (repeatable).
    #[arg(short = 'e', long = "env")]
    pub env: Vec<String>,
    /// Pass the real system environment variables to the script (default true).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub include_system_env_vars: bool,
    /// Write every metric sample: `json=FILE` (k6's JSON lines).
    #[arg(short = 'o', long = "out")]
    pub out: Vec<String>,
    /// Write `volley bench`'s report of the script's gRPC calls: `FORMAT=FILE`, FORMAT one of
    /// summary, json, pretty, html, influx-summary, prometheus (repeatable). `json` results are
    /// what `volley report merge` and `compare` take.
    #[arg(long = "report", value_name = "FORMAT=FILE")]
    pub reports: Vec<String>,
    /// Run shard I of N of the script (`auto/N`: I from `JOB_COMPLETION_INDEX`, as a
    /// Kubernetes Indexed Job sets it): each scenario's VUs and iterations split so the shards
    /// add up to the whole, an arrival rate's starts numbered I mod N. `volley report merge`
    /// sums the shards' `--report json=FILE` results exactly.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Write the end-of-test summary as JSON to this file (k6's older export format).
    #[arg(long)]
    pub summary_export: Option<String>,
    /// Write the thresholds' verdicts as JUnit XML to this file (volley bench's `--junit`), one
    /// test case per threshold, for CI systems to show.
    #[arg(long)]
    pub junit: Option<String>,
    /// Print no end-of-test summary.
    #[arg(long)]
    pub no_summary: bool,
    /// `compact` (the default), `full` (read as compact) or `disabled`.
    #[arg(long, default_value = "compact")]
    pub summary_mode: String,
    /// Trend statistics the summary shows (`avg,min,med,max,p(90),p(95)`).
    #[arg(long)]
    pub summary_trend_stats: Option<String>,
    /// No banner, description or progress.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Debug log lines too (`console.debug`).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Where log lines go: `stderr` (default), `stdout`, `none`, `file=PATH`.
    #[arg(long, default_value = "stderr")]
    pub log_output: String,
    /// How log lines are written: `text` (default), `json`, `raw`.
    #[arg(long, default_value = "text")]
    pub log_format: String,
    /// Accepted for k6's command lines: volley reports nothing anywhere.
    #[arg(long)]
    pub no_usage_report: bool,
    /// Accepted for k6's command lines (no colour is written when stdout is not a terminal).
    #[arg(long)]
    pub no_color: bool,
    /// Skip TLS verification of the servers scripts connect to.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Throw an exception on a failed call instead of returning it (accepted; volley returns it).
    #[arg(short = 'w', long)]
    pub throw: bool,
}
