//! What a template's pipelines make (a string, a number, a boolean), and why one fails.

/// A template that failed to parse or render.
#[derive(Debug, thiserror::Error)]
#[error("template: {0}")]
pub struct TemplateError(pub(super) String);

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}
