//! Why a `volley bench` run could not be made or reported.

use crate::{callee::TargetError, engine::BenchError};

/// Why a run could not be made or reported (a threshold that fails is not this: it is the exit
/// code).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target could not be built (schema, data, endpoint, TLS, reflection).
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The engine could not run (a connection, request data).
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// `--server-metrics` could not be scraped or read.
    #[error("{0}")]
    ServerMetrics(String),
    /// The runtime for building the target could not start.
    #[error(transparent)]
    Runtime(std::io::Error),
    /// A file or the report could not be written (`-o`, `--debug`, `--junit`).
    #[error("cannot write {what}")]
    Write {
        /// What: the flag and its path, or the report.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
