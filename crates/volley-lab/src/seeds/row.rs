//! What every scenario shares: the context it runs in ([`Ctx`]), what it is ([`Scenario`]) and
//! what it measures ([`Row`]).

use std::{path::PathBuf, process::Command};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde_json::Value;

use super::machine;

/// One measured case of a scenario.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// What was run.
    pub case: String,
    /// The headline figure's unit (`requests/s`, `orders/s`).
    pub unit: String,
    /// Our figure.
    pub ours: f64,
    /// The seed's published figure for the same case, when it has one.
    pub seed: Option<f64>,
    /// Calls (or orders) made.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Percentile curve: (percentile, ms).
    pub percentiles: Vec<(f64, f64)>,
    /// Completed calls per second of the run.
    pub timeline: Vec<u64>,
    /// Latency histogram: (bucket mark ms, calls), ghz's buckets.
    pub histogram: Vec<(f64, u64)>,
    /// Seconds the run took (the median run's, when repeated).
    pub elapsed_s: f64,
    /// The seed's printed elapsed seconds for the same case, when it printed them.
    pub seed_elapsed_s: Option<f64>,
    /// Runs behind the figure: a run shorter than a second is repeated and `ours` is the
    /// median run's figure.
    pub runs: u32,
    /// The lowest and highest figure of the runs, when there were several.
    pub spread: Option<(f64, f64)>,
    /// Why the case was not run here (then `ours` is 0).
    pub not_run: Option<String>,
}

/// A scenario: its name, the seed it reruns, and how to run it.
pub struct Scenario {
    /// `--only` name.
    pub name: &'static str,
    /// The seed document and what it measured.
    pub seed: &'static str,
    /// Whether it can run against `--target` (gRPC scenarios on the seed protos).
    pub targetable: bool,
    pub(super) run: fn(&Ctx) -> Result<Vec<Row>>,
}

/// What scenarios share.
pub struct Ctx {
    /// This executable.
    pub exe: PathBuf,
    /// Small counts and short runs.
    pub quick: bool,
    /// Another server to load instead of volley's own.
    pub target: Option<String>,
    /// The machine the lab runs on.
    pub machine: machine::Machine,
}

impl Ctx {
    /// Runs `volley ARGS` and parses its JSON standard output.
    pub fn volley_json(&self, args: &[String]) -> Result<Value> {
        let out = Command::new(&self.exe)
            .args(args)
            .output()
            .with_context(|| format!("cannot run {}", self.exe.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!(
                "`volley {}` failed: {}",
                args.join(" "),
                err.trim().lines().last().unwrap_or("")
            );
        }
        serde_json::from_slice(&out.stdout)
            .map_err(|e| anyhow!("`volley {}` printed no JSON report: {e}", args.join(" ")))
    }

    /// Starts `volley serve` with `extra` arguments on a free loopback port.
    pub fn serve(&self, extra: &[&str]) -> Result<crate::child::Child> {
        let mut c = Command::new(&self.exe);
        c.args(["serve", "--addr", "127.0.0.1:0"]).args(extra);
        crate::child::Child::start(c)
    }
}
