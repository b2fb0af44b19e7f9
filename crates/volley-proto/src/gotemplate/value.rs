//! Template values (`Val`, borrowing the call's JSON where it can), the root they are read
//! from, and Go's way of printing them (`%v`).

use std::{borrow::Cow, collections::BTreeMap};

use serde_json::Value;

use crate::gofmt;

/// A template value.
#[derive(Clone, Debug)]
pub enum Val<'a> {
    /// A map key that is not there (Go prints `<no value>`).
    Missing,
    /// Go's `nil`.
    Nil,
    /// A `bool`.
    Bool(bool),
    /// An `int`.
    Int(i64),
    /// A `float64`.
    Float(f64),
    /// A `string`.
    Str(Cow<'a, str>),
    /// The call's data, borrowed.
    Json(&'a Value),
    /// A slice a function made.
    List(Vec<Val<'a>>),
    /// A map a function made (keys in order, as Go prints maps).
    Map(BTreeMap<String, Val<'a>>),
    /// A moment, in nanoseconds since the Unix epoch (UTC).
    Time(i64),
    /// A duration, in nanoseconds.
    Dur(i64),
    /// A `[]byte`.
    Bytes(Vec<u8>),
}

/// The root of the data a template reads (`.Request`, `.Headers`, ...).
pub trait Root {
    /// The value of `.name`, or `None` when there is no such name.
    fn field(&self, name: &str) -> Option<Val<'_>>;
}

impl<'a> Val<'a> {
    /// Scalars out of borrowed JSON.
    pub fn norm(self) -> Val<'a> {
        match self {
            Val::Json(Value::Null) => Val::Nil,
            Val::Json(Value::Bool(b)) => Val::Bool(*b),
            Val::Json(Value::Number(n)) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or(0.0)),
            },
            Val::Json(Value::String(s)) => Val::Str(Cow::Borrowed(s)),
            other => other,
        }
    }

    /// Go's truth: false, 0, nil, empty strings, lists and maps are false.
    pub fn truthy(&self) -> bool {
        match self.clone().norm() {
            Val::Missing | Val::Nil => false,
            Val::Bool(b) => b,
            Val::Int(i) => i != 0,
            Val::Float(f) => f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::Json(Value::Array(a)) => !a.is_empty(),
            Val::Json(Value::Object(m)) => !m.is_empty(),
            Val::List(l) => !l.is_empty(),
            Val::Map(m) => !m.is_empty(),
            Val::Bytes(b) => !b.is_empty(),
            _ => true,
        }
    }

    /// `.name` of this value.
    pub fn field(&self, name: &str) -> Result<Val<'a>, String> {
        match self {
            Val::Json(Value::Object(m)) => Ok(m.get(name).map_or(Val::Missing, Val::Json)),
            Val::Map(m) => Ok(m.get(name).cloned().unwrap_or(Val::Missing)),
            Val::Missing | Val::Nil | Val::Json(Value::Null) => Ok(Val::Missing),
            other => Err(format!(
                "can't evaluate field {name} in type {}",
                other.type_name()
            )),
        }
    }

    /// Go's name of the value's type, for errors.
    pub fn type_name(&self) -> &'static str {
        match self.clone().norm() {
            Val::Missing | Val::Nil => "nil",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Float(_) => "float64",
            Val::Str(_) => "string",
            Val::Json(Value::Array(_)) | Val::List(_) => "slice",
            Val::Json(_) | Val::Map(_) => "map",
            Val::Time(_) => "time.Time",
            Val::Dur(_) => "time.Duration",
            Val::Bytes(_) => "[]byte",
        }
    }

    /// The items of a list (borrowed JSON arrays too), or `None`.
    pub fn items(&self) -> Option<Vec<Val<'a>>> {
        match self {
            Val::Json(Value::Array(a)) => Some(a.iter().map(Val::Json).collect()),
            Val::List(l) => Some(l.clone()),
            _ => None,
        }
    }

    /// A number as f64, numeric strings too.
    pub fn num(&self) -> Option<f64> {
        match self.clone().norm() {
            Val::Int(i) => Some(i as f64),
            Val::Float(f) => Some(f),
            Val::Bool(b) => Some(f64::from(u8::from(b))),
            Val::Str(s) => s.trim().parse().ok(),
            Val::Dur(d) => Some(d as f64),
            _ => None,
        }
    }

    /// An integer, numeric strings and whole floats too.
    pub fn int(&self) -> Option<i64> {
        match self.clone().norm() {
            Val::Int(i) => Some(i),
            Val::Float(f) => Some(f as i64),
            Val::Str(s) => s
                .trim()
                .parse::<i64>()
                .ok()
                .or_else(|| s.trim().parse::<f64>().ok().map(|f| f as i64)),
            Val::Bool(b) => Some(i64::from(b)),
            Val::Dur(d) => Some(d),
            _ => None,
        }
    }

    /// Printed as Go's `fmt` prints it with `%v`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    /// Appends the value to `out` as Go's `fmt` prints it with `%v`.
    pub fn write(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Val::Missing => out.push_str("<no value>"),
            Val::Nil | Val::Json(Value::Null) => out.push_str("<nil>"),
            Val::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Val::Json(Value::Bool(b)) => {
                let _ = write!(out, "{b}");
            }
            Val::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Val::Float(f) => out.push_str(&gofmt::format_g(*f)),
            Val::Json(Value::Number(n)) => match n.as_i64().or(None) {
                Some(i) => {
                    let _ = write!(out, "{i}");
                }
                None if n.is_u64() => {
                    let _ = write!(out, "{n}");
                }
                None => out.push_str(&gofmt::format_g(n.as_f64().unwrap_or(0.0))),
            },
            Val::Str(s) => out.push_str(s),
            Val::Json(Value::String(s)) => out.push_str(s),
            Val::Json(Value::Array(a)) => list(out, a.iter().map(Val::Json)),
            Val::List(l) => list(out, l.iter().cloned()),
            Val::Json(Value::Object(m)) => {
                map(out, m.iter().map(|(k, v)| (k.as_str(), Val::Json(v))))
            }
            Val::Map(m) => map(out, m.iter().map(|(k, v)| (k.as_str(), v.clone()))),
            Val::Time(t) => out.push_str(&gofmt::rfc3339_nano(*t)),
            Val::Dur(d) => out.push_str(&gofmt::duration(*d)),
            Val::Bytes(b) => list(out, b.iter().map(|x| Val::Int(i64::from(*x)))),
        }
    }
}

fn list<'a>(out: &mut String, items: impl Iterator<Item = Val<'a>>) {
    out.push('[');
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        v.write(out);
    }
    out.push(']');
}

fn map<'a, 'k>(out: &mut String, items: impl Iterator<Item = (&'k str, Val<'a>)>) {
    let mut sorted: Vec<_> = items.collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    out.push_str("map[");
    for (i, (k, v)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        v.write(out);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_maps_print_as_go_does() {
        let v = serde_json::json!({"b": [1, "x"], "a": true});
        assert_eq!(Val::Json(&v).text(), "map[a:true b:[1 x]]");
        assert_eq!(Val::Missing.text(), "<no value>");
    }
}
