//! The load section: how many workers and connections, how calls share them, how fast sends go
//! (`-r`, `--load-*`, `--stage`: a [`Pace`]), when the run stops (`-n`, `-z`, `-x`: a [`Stop`]),
//! and each call's deadline.

use std::time::Duration;

use serde_json::{Map, Value};
use volley_client::Strategy;

use crate::plan::{
    PlanError,
    args::BenchArgs,
    flags::Flags,
    options::{DurationStop, Pace, Stop},
    schedule::{Ramp, Shape},
    stages::Stages,
};

/// What the load section resolves to.
pub(super) struct Load {
    pub(super) stop: Stop,
    pub(super) max_duration: Option<Duration>,
    pub(super) duration_stop: DurationStop,
    pub(super) concurrency: Ramp,
    pub(super) pace: Pace,
    pub(super) async_mode: bool,
    /// Connections, at most the largest worker count.
    pub(super) connections: usize,
    pub(super) strategy: Strategy,
    /// `--lb-strategy` when given (else the service config's, once it is read).
    pub(super) lb: Option<volley_client::Policy>,
    /// `--service-config` as given: JSON, or the path of a file holding it.
    pub(super) service_config: Option<String>,
    pub(super) timeout: Option<Duration>,
    pub(super) cpus: usize,
    pub(super) skip_first: u64,
    /// The largest worker count the run reaches (a shard needs at least one per shard).
    pub(super) max_c: u64,
    /// `-c`, `-n`, `-r` and `-z` as the report echoes them.
    pub(super) c: u64,
    pub(super) n: u64,
    pub(super) rps: u64,
    pub(super) duration: Option<Duration>,
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

/// The stages, from `--stage` flags or a scenario's `stages:`.
fn stages(a: &BenchArgs, cfg: &Map<String, Value>) -> Result<Option<Stages>, PlanError> {
    if !a.stages.is_empty() {
        return Stages::from_flags(&a.stages).map(Some);
    }
    match cfg.get("stages") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => Stages::from_config(v).map(Some),
    }
}

/// Resolves the load section, taking its options from `f`.
pub(super) fn load(
    a: &BenchArgs,
    cfg: &Map<String, Value>,
    f: &mut Flags,
    http_mode: bool,
) -> Result<Load, PlanError> {
    let stages = stages(a, cfg)?;
    let http1 = http_mode && !a.http2;
    let given_connections = f.connections.take();
    // HTTP/1.1 holds one request per connection, so there (as in wrk) connections are workers.
    let c = match (f.concurrency.take(), given_connections) {
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
        .take()
        .filter(|d| !d.is_zero())
        .or(stages.as_ref().map(Stages::length));
    let max_duration = f.max_duration.take().filter(|d| !d.is_zero());
    let n = f.total.take().unwrap_or(200);
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
    let strategy = match f.strategy.take() {
        Some(_) if http1 => {
            bail!("--strategy applies to HTTP/2 (gRPC, or HTTP with --http2)")
        }
        Some(s) => Strategy::parse(&s, connections as usize)
            .map_err(|e| PlanError::new(format!("--strategy: {e}")))?,
        None if connections > 1 => Strategy::Pool(connections as usize),
        None => Strategy::Single,
    };
    let service_config = f.service_config.take();
    if service_config.is_some() && http1 {
        bail!("--service-config applies to gRPC calls");
    }
    let lb = match f.lb_strategy.take() {
        Some(_) if http1 => bail!("--lb-strategy applies to HTTP/2 (gRPC, or HTTP with --http2)"),
        Some(s) => Some(
            s.parse::<volley_client::Policy>()
                .map_err(|e| PlanError::new(format!("--lb-strategy: {e}")))?,
        ),
        None => None,
    };
    let concurrency = ramp(
        RampFlags {
            schedule: f.concurrency_schedule.take(),
            start: f.concurrency_start.take(),
            end: f.concurrency_end.take(),
            step: f.concurrency_step.take(),
            step_duration: f.concurrency_step_duration.take(),
            max_duration: f.concurrency_max_duration.take(),
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
    let rps = f.rps.take().unwrap_or(0);
    let load = ramp(
        RampFlags {
            schedule: f.load_schedule.take(),
            start: f.load_start.take(),
            end: f.load_end.take(),
            step: f.load_step.take(),
            step_duration: f.load_step_duration.take(),
            max_duration: f.load_max_duration.take(),
        },
        "load",
        rps as f64,
        0,
    )?;
    let rate = load.shape != Shape::Const || rps > 0;
    let pace = match (stages, rate) {
        (Some(_), true) => {
            bail!("--stage sets the rate over time: give it without -r and --load-*")
        }
        (Some(s), false) => Pace::Stages(s),
        (None, true) => Pace::Rate(load),
        (None, false) => Pace::Max,
    };

    let timeout = match f.timeout.take() {
        None => Some(Duration::from_secs(20)),
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
    };
    let skip_first = f.skip_first.take().unwrap_or(0);
    if duration.is_none() && skip_first >= n && skip_first > 0 {
        bail!("--skipFirst ({skip_first}) must be less than -n ({n})");
    }
    let cpus = f.cpus.take().map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |c| c.max(1) as usize,
    );
    Ok(Load {
        stop: match duration {
            Some(d) => Stop::Duration(d),
            None => Stop::Calls(n),
        },
        max_duration,
        duration_stop: f.duration_stop.take().unwrap_or(DurationStop::Close),
        concurrency,
        pace,
        async_mode: f.async_mode.take().unwrap_or(false),
        connections: connections.min(max_c.max(1)) as usize,
        strategy,
        lb,
        service_config,
        timeout,
        cpus,
        skip_first,
        max_c,
        c,
        n,
        rps,
        duration,
    })
}
