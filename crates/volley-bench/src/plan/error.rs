//! Why flags or a config file do not make a plan.

/// Why flags or a config file do not make a plan: one line, naming the flag or key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(String);

impl PlanError {
    pub(crate) fn new(message: impl Into<String>) -> PlanError {
        PlanError(message.into())
    }
}
