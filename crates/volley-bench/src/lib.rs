//! volley-bench: the load engine behind `volley bench`.
//!
//! Data flows one way, and the modules follow it:
//!
//! - `plan`: ghz's flags and config file, typed, merged and checked into a [`Plan`]; its
//!   [`RunOptions`] (with `plan::schedule`'s rate and worker ramps) are what the engine runs.
//! - `target`: what is called, built from the plan: a gRPC method (endpoint, schema, payload
//!   encoded once) or one HTTP request ([`Target`]).
//! - `engine`: threads with a current-thread runtime each, workers pulling call numbers from one
//!   counter, pacing by intended send time; each call goes through `call` (unary, streams, HTTP)
//!   and is recorded in its thread's `recorder`.
//! - `report`: the merged recorder as ghz's figures and volley's additions ([`Report`]), with the
//!   `options` block rebuilt from the plan; `report::format` prints it in ghz's layouts.
//! - `gate`: thresholds judged against the report, for CI (exit codes, verdicts, JUnit).
//! - `live`: the run as it goes, one merged tick per interval for live views and exports.
//! - `results`, `merge`, `compare`: a run as data (HDR histograms and exact figures in `-O
//!   json`), shards merged exactly, two runs compared beyond their noise; `k8s` prints a plan as
//!   a Kubernetes Indexed Job.

pub mod call;
pub mod compare;
pub mod engine;
pub mod gate;
pub mod k8s;
pub mod live;
pub mod merge;
pub mod plan;
pub mod recorder;
pub mod report;
pub mod results;
pub mod target;

pub use engine::{BenchError, Control, Outcome, cpu_time, run};
pub use plan::{DurationStop, EndReason, Format, Plan, PlanError, RunOptions, StreamOptions};
pub use report::{Report, ReportOptions};
pub use target::{
    CallKind, CustomCall, CustomFuture, CustomTarget, GrpcTarget, HttpTarget, Target,
    build::TargetError,
};
