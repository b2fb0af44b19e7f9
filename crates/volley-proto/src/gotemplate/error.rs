//! A template that failed to parse or run.

/// A template that failed to parse or run: what went wrong, with the function's name when a
/// function failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("template: {0}")]
pub struct TemplateError(pub(crate) String);

impl TemplateError {
    /// An error saying `message` (printed after `template: `).
    pub fn new(message: impl Into<String>) -> TemplateError {
        TemplateError(message.into())
    }
}
