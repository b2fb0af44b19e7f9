//! A template that failed to parse or run.

/// A template that failed to parse or run: what went wrong, with the function's name when a
/// function failed.
#[derive(Debug, Clone)]
pub(crate) struct TemplateError(pub String);

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "template: {}", self.0)
    }
}
