//! An action's value, owned, as the protobuf route takes it: a string, a number or a boolean.

use crate::gotemplate::Val;

/// An action's value, owned (what [`super::ProtoTemplate`] fills a field from).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl From<Val<'_>> for Value {
    fn from(v: Val<'_>) -> Value {
        match v.norm() {
            Val::Str(s) => Value::Str(s.into_owned()),
            Val::Int(i) => Value::Int(i),
            Val::Float(f) => Value::Float(f),
            Val::Bool(b) => Value::Bool(b),
            other => Value::Str(other.text()),
        }
    }
}

/// Printed as the template prints it (Go's `%v`).
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&crate::gofmt::format_g(*x)),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}
