//! volley-bench: the load engine behind `volley bench`.
//!
//! Data flows one way: `options` (the resolved run) and `schedule` (rate and worker ramps) feed
//! the `engine`, whose workers make calls (`streaming`) with bodies from `payload` and record into
//! per-thread `recorder`s; the merged results become a `report`, which `format` prints in ghz's
//! layouts.

pub mod call;
pub mod engine;
pub mod format;
pub mod options;
pub mod recorder;
pub mod report;
pub mod schedule;
pub mod target;

pub use engine::{BenchError, Control, Outcome, cpu_time, run};
pub use format::Format;
pub use options::{DurationStop, EndReason, RunOptions, StreamOptions};
pub use report::{Report, ReportOptions};
pub use target::{CallKind, GrpcTarget, HttpTarget, Target};
