//! The engine's options, resolved from flags and config files: when the run stops ([`Stop`]),
//! how sends are paced ([`Pace`]), how hard, what `-z` does to calls in flight, streaming knobs,
//! and the report format.

use std::{sync::Arc, time::Duration};

use super::{
    schedule::{Pacer, Ramp, Shape},
    shard::{self, Shard},
    stages::Stages,
    threshold::Threshold,
};

/// When a run ends (besides Ctrl-C and `--abort-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// After this many calls (`-n`), or at `-x` ([`RunOptions::max_duration`]) if that comes
    /// first.
    Calls(u64),
    /// After this long (`-z`, or the stages' length): as many calls as fit.
    Duration(Duration),
}

impl Stop {
    /// The most calls the plan makes: `-n`, or no limit (`u64::MAX`) under a duration.
    #[inline]
    pub fn calls(self) -> u64 {
        match self {
            Stop::Calls(n) => n,
            Stop::Duration(_) => u64::MAX,
        }
    }

    /// The run's length under `-z`, `None` under `-n`.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Stop::Calls(_) => None,
            Stop::Duration(d) => Some(d),
        }
    }
}

/// How sends are paced.
#[derive(Clone, Debug, PartialEq)]
pub enum Pace {
    /// As fast as the workers go (closed model: each worker sends when its last call ends).
    Max,
    /// A total rate over time (`--rps`, `--load-*`), shared by the workers.
    Rate(Ramp),
    /// Arrival-rate stages (`--stage`, a scenario's `stages:`).
    Stages(Stages),
}

impl Pace {
    /// Whether sends are paced: latency is then from intended send times.
    pub fn paced(&self) -> bool {
        !matches!(self, Pace::Max)
    }

    /// The intended send times of a paced run.
    pub(crate) fn pacer(&self) -> Option<Pacer> {
        match self {
            Pace::Max => None,
            Pace::Rate(r) => Some(Pacer::Ramp(r.clone())),
            Pace::Stages(s) => Some(Pacer::Stages(s.clone())),
        }
    }
}

/// Which HTTP/2 client a run's unary gRPC calls take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientPath {
    /// `volley_client::load::fast` when nothing the call needs is the h2 crate's alone (one DATA frame,
    /// no service config, keepalive or reply size limit), else the h2 crate.
    #[default]
    Fast,
    /// The h2 crate for every call (`VOLLEY_BENCH_CLIENT=h2` in the environment): what the fast
    /// path is compared with.
    H2,
}

/// What happens to in-flight calls when `-z` runs out (ghz `--duration-stop`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DurationStop {
    /// Cancel them. ghz then counts them as Unavailable "transport is closing"; volley leaves
    /// them out, since the generator, not the server, ended them.
    #[default]
    Close,
    /// Let them finish and count them.
    Wait,
    /// Cancel them and leave them out of the report.
    Ignore,
}

impl DurationStop {
    /// Parses `close`, `wait` or `ignore`.
    pub fn parse(s: &str) -> Result<DurationStop, String> {
        match s {
            "close" => Ok(DurationStop::Close),
            "wait" => Ok(DurationStop::Wait),
            "ignore" => Ok(DurationStop::Ignore),
            _ => Err(format!(
                "invalid value {s:?}: expected close, wait or ignore"
            )),
        }
    }
}

/// Why a run ended (ghz `endReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// `-n` calls were made.
    Normal,
    /// Interrupted (Ctrl-C).
    Cancel,
    /// `-z` or `-x` ran out.
    Timeout,
}

impl EndReason {
    /// ghz's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Normal => "normal",
            EndReason::Cancel => "cancel",
            EndReason::Timeout => "timeout",
        }
    }
}

/// Streaming knobs (ghz `--stream-*`).
#[derive(Clone, Debug, Default)]
pub struct StreamOptions {
    /// Pause between messages sent on a client or bidi stream.
    pub interval: Duration,
    /// Close each stream after this long (zero: no limit).
    pub call_duration: Duration,
    /// Messages sent (client/bidi) or received (server) per call (zero: all of the data / all).
    pub call_count: u64,
    /// Render the template for every message, not once per call.
    pub dynamic_messages: bool,
}

/// The resolved run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// When the run ends: `-n` calls, or `-z` (or the stages') time.
    pub stop: Stop,
    /// Cap on run length while honouring `-n` (`-x`).
    pub max_duration: Option<Duration>,
    /// What happens to in-flight calls at the end of `-z`.
    pub duration_stop: DurationStop,
    /// Worker count over time (`-c`, `--concurrency-*`).
    pub concurrency: Ramp,
    /// How sends are paced: as fast as possible, a rate (`--rps`, `--load-*`) or stages
    /// (`--stage`).
    pub pace: Pace,
    /// Fire calls without waiting for the previous one (`--async`).
    pub async_mode: bool,
    /// Connections (`--connections`): HTTP/2 pool size, or HTTP/1.1 connections (one per worker).
    pub connections: usize,
    /// How HTTP/2 calls share connections (`--strategy`); each engine thread runs its own channel
    /// with its share of the connections.
    pub strategy: volley_client::Strategy,
    /// How calls pick among the target's addresses (`--lb-strategy`).
    pub lb: volley_client::Policy,
    /// Retry and hedging policies for unary calls (`--service-config`), shared by every engine
    /// thread's channel (and so is its retry throttle).
    pub service_config: Option<Arc<volley_client::ServiceConfig>>,
    /// Per-call deadline (`-t`); `None` = none.
    pub timeout: Option<Duration>,
    /// Threads running workers (`--cpus`).
    pub cpus: usize,
    /// Drop the first N results (`--skipFirst`).
    pub skip_first: u64,
    /// Count failed calls in fastest/slowest/histogram/percentiles (`--count-errors`).
    pub count_errors: bool,
    /// Keep per-call details (for csv, json, html, influx-details), up to this many.
    pub details_cap: usize,
    /// Streaming knobs.
    pub stream: StreamOptions,
    /// `--name`.
    pub name: String,
    /// `--shard I/N`: this process makes the calls numbered I mod N, with workers I mod N.
    pub shard: Option<Shard>,
    /// `--start-at`: every connection is dialled, then the run starts at this wall-clock time.
    pub start_at: Option<std::time::SystemTime>,
    /// `--abort-on`: the run stops as soon as this holds (errors or a status's share).
    pub abort_on: Option<Threshold>,
    /// Which client unary gRPC calls take.
    pub client: ClientPath,
}

impl RunOptions {
    /// Whether sends are paced (a rate or stages): latency is then from intended send times.
    pub fn paced(&self) -> bool {
        self.pace.paced()
    }

    /// When the run must end, counted from its start: `-z`, else `-x`.
    pub fn deadline(&self) -> Option<Duration> {
        self.stop.duration().or(self.max_duration)
    }

    /// This process's number for the plan's `k`-th call it makes (`k`, unless sharded), or
    /// `None` past the plan's end.
    #[inline]
    pub fn call_number(&self, k: u64) -> Option<u64> {
        shard::call_number(self.stop.calls(), self.shard, k)
    }

    /// Whether worker `w` of the plan runs in this process.
    pub fn runs_worker(&self, w: usize) -> bool {
        shard::runs_worker(self.shard, w)
    }
}

/// ghz keeps at most this many per-call details; we keep the same cap for formats that list them.
pub const MAX_DETAILS: usize = 1_000_000;

impl RunOptions {
    /// The largest worker count the run will reach.
    pub fn max_workers(&self) -> usize {
        let c = &self.concurrency;
        let top = if c.end != 0.0 {
            c.start.max(c.end)
        } else {
            c.start
        };
        if c.shape != Shape::Const && c.end == 0.0 && c.step > 0.0 {
            // Unbounded ramp: bounded by the run length when there is one.
            let len = self
                .deadline()
                .or((!c.max_duration.is_zero()).then_some(c.max_duration))
                .unwrap_or(Duration::from_secs(3600));
            return c.value_at(len).max(top) as usize;
        }
        top.max(1.0) as usize
    }
}

/// Output formats (`-O`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ghz's text summary.
    Summary,
    /// One row per call.
    Csv,
    /// Compact JSON.
    Json,
    /// Indented JSON.
    Pretty,
    /// A self-contained HTML page.
    Html,
    /// One InfluxDB line for the run.
    InfluxSummary,
    /// One InfluxDB line per call.
    InfluxDetails,
    /// Prometheus text exposition.
    Prometheus,
    /// wrk's layout (HTTP targets).
    Wrk,
}

impl Format {
    /// Parses ghz's names.
    pub fn parse(s: &str) -> Result<Format, String> {
        Ok(match s {
            "summary" => Format::Summary,
            "csv" => Format::Csv,
            "json" => Format::Json,
            "pretty" => Format::Pretty,
            "html" => Format::Html,
            "influx-summary" => Format::InfluxSummary,
            "influx-details" => Format::InfluxDetails,
            "prometheus" => Format::Prometheus,
            "wrk" => Format::Wrk,
            _ => {
                return Err(format!(
                    "invalid format {s:?}: expected summary, csv, json, pretty, html, influx-summary, influx-details, prometheus or wrk"
                ));
            }
        })
    }

    /// True when the format lists calls (so the run keeps per-call details).
    pub fn needs_details(self) -> bool {
        matches!(
            self,
            Format::Csv | Format::Json | Format::Pretty | Format::Html | Format::InfluxDetails
        )
    }
}
