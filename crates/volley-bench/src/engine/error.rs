//! Why a run could not happen.

use std::time::Duration;

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A connection could not be opened.
    #[error("{0}")]
    Connect(String),
    /// Request data could not be made.
    #[error("{0}")]
    Data(String),
    /// `--start-at` had passed when every connection was ready.
    #[error("the start time had passed by {0:?} when every connection was ready")]
    MissedStart(Duration),
}
