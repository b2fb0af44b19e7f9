//! volley-bench: the load engine behind `volley bench`.
//!
//! Data flows one way, and the modules follow it (each imports only those above it):
//!
//! - `plan`: ghz's flags and config file, typed, merged and checked into a [`Plan`], with the
//!   vocabulary it defines (thresholds, shards, schedules); its [`RunOptions`] (when to stop,
//!   how to pace) are what the engine runs.
//! - `recorder`: one thread's record of its calls (HDR histograms, exact min and max, status
//!   counts, errors), merged once at the end.
//! - `callee`: what is called, built from the plan: a gRPC method (endpoint, schema, payload
//!   encoded once) or one HTTP request ([`Target`]); a [`CustomCall`] is handed its thread's
//!   recorder.
//! - `engine`, after its parts `clock`, `live` and `call`: threads with a current-thread runtime
//!   each, workers pulling call numbers from one counter, pacing by intended send time; each call
//!   goes through `call` (unary, streams, HTTP) and is recorded in its thread's `recorder`. What
//!   watches the run ([`Observers`]: a progress counter, `live` ticks) is handed to [`run`]
//!   beside the plan.
//! - `results`: a run as data (HDR histograms and exact figures in `-O json`), from the engine's
//!   outcome and the merged recorder.
//! - `report`: the merged recorder as ghz's figures and volley's additions ([`Report`]), with the
//!   `options` block rebuilt from the plan and the results beside them; `report::format` prints
//!   it in ghz's layouts.
//! - `gate`: thresholds judged against the report, for CI (exit codes, verdicts, JUnit).
//! - `session`: a whole run, plan to exit code ([`run_plan`], or its three steps
//!   [`Session::prepare`], [`Session::run`], [`Ran::finish`]): the target built and the server
//!   scraped on one runtime, the engine run, the report judged, written and logged.
//! - `merge`, `compare`, `k8s`: shards merged exactly from their results, two runs compared
//!   beyond their noise, a plan printed as a Kubernetes Indexed Job.
#![deny(unreachable_pub)]

mod call;
pub mod callee;
mod clock;
pub mod compare;
mod engine;
pub mod gate;
pub mod k8s;
pub mod live;
pub mod merge;
pub mod plan;
pub mod recorder;
pub mod report;
pub mod results;
mod session;

pub use callee::{
    CallKind, CustomCall, CustomFuture, CustomTarget, GrpcTarget, HttpTarget, Target, TargetError,
};
pub use clock::cpu_time;
pub use engine::{BenchError, Control, MethodOutcome, Observers, Outcome, run};
pub use plan::{
    ClientPath, DurationStop, EndReason, Format, Pace, Plan, PlanError, RunOptions, Stop,
    StreamOptions,
};
pub use report::{Report, ReportOptions};
pub use session::{Finished, Ran, RunError, Session, run_plan};
