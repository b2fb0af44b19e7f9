//! A matcher's JSON typed by the input message: each key resolved to its field (by its .proto
//! name, its JSON name, or either with `_` and case ignored), each value converted to the
//! field's type once, at load, so a call compares values, not JSON, and numbers compare by value.

use std::borrow::Cow;

use base64::Engine;
use prost_reflect::{FieldDescriptor, Kind, MapKey, MessageDescriptor, Value};
use regex::Regex;
use serde_json::{Map, Value as Json};

use crate::model::{Expect, Pattern};

/// `user_id`, `userId` and `userid` alike.
fn loose(key: &str) -> String {
    key.replace('_', "").to_ascii_lowercase()
}

/// The field `key` names in `desc`.
pub(crate) fn field(desc: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    desc.get_field_by_name(key)
        .or_else(|| desc.get_field_by_json_name(key))
        .or_else(|| {
            let k = loose(key);
            desc.fields().find(|f| loose(f.name()) == k)
        })
}

fn unknown(desc: &MessageDescriptor, key: &str, what: &str) -> String {
    if what.is_empty() {
        return format!("no field {key:?} in {}", desc.full_name());
    }
    format!("{what} names no field {key:?} of {}", desc.full_name())
}

fn at(what: &str, key: &str) -> String {
    if what.is_empty() {
        key.to_owned()
    } else {
        format!("{what}.{key}")
    }
}

/// Well-known messages whose JSON form is not an object of their fields (or is `Any`'s
/// `@type` form): compared as JSON.
fn json_form(desc: &MessageDescriptor, v: &Json) -> bool {
    let name = desc.full_name();
    name == "google.protobuf.Any"
        || name == "google.protobuf.Struct"
        || name == "google.protobuf.Value"
        || name == "google.protobuf.ListValue"
        || (name.starts_with("google.protobuf.") && !v.is_object())
}

/// Every key of `m` as `(field, Expect)`.
pub(crate) fn expects(
    desc: &MessageDescriptor,
    m: &Map<String, Json>,
    what: &str,
) -> Result<Vec<(FieldDescriptor, Expect)>, String> {
    m.iter()
        .map(|(k, v)| {
            let fd = field(desc, k).ok_or_else(|| unknown(desc, k, what))?;
            let e = expect(&fd, v).map_err(|e| format!("{}: {e}", at(what, k)))?;
            Ok((fd, e))
        })
        .collect()
}

/// The value `v` says field `fd` has.
pub(crate) fn expect(fd: &FieldDescriptor, v: &Json) -> Result<Expect, String> {
    if v.is_null() {
        return Ok(Expect::Unset);
    }
    if fd.is_map() {
        let Kind::Message(entry) = fd.kind() else {
            return Err("not a map".into());
        };
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let Json::Object(m) = v else {
            return Err(format!("{v} is not an object (the field is a map)"));
        };
        return m
            .iter()
            .map(|(k, x)| Ok((map_key(&kf.kind(), k)?, expect_kind(&vf.kind(), x)?)))
            .collect::<Result<_, String>>()
            .map(Expect::Map);
    }
    if fd.is_list() {
        let Json::Array(items) = v else {
            return Err(format!("{v} is not a list (the field is repeated)"));
        };
        return items
            .iter()
            .map(|x| expect_kind(&fd.kind(), x))
            .collect::<Result<_, _>>()
            .map(Expect::List);
    }
    expect_kind(&fd.kind(), v)
}

fn expect_kind(kind: &Kind, v: &Json) -> Result<Expect, String> {
    if v.is_null() {
        return Ok(Expect::Unset);
    }
    match kind {
        Kind::Message(desc) if json_form(desc, v) => Ok(Expect::Json(v.clone())),
        Kind::Message(desc) => match v {
            Json::Object(m) => expects(desc, m, "").map(Expect::Message),
            other => Err(format!("{other} is not an object ({})", desc.full_name())),
        },
        k => scalar(k, v).map(Expect::Scalar),
    }
}

fn map_key(kind: &Kind, k: &str) -> Result<MapKey, String> {
    Ok(match scalar(kind, &Json::String(k.to_owned()))? {
        Value::Bool(b) => MapKey::Bool(b),
        Value::I32(i) => MapKey::I32(i),
        Value::I64(i) => MapKey::I64(i),
        Value::U32(i) => MapKey::U32(i),
        Value::U64(i) => MapKey::U64(i),
        Value::String(s) => MapKey::String(s),
        _ => return Err(format!("{k:?} is not a map key")),
    })
}

/// The largest `float`, as JSON writes it rounded (`3.4028235e+38`), is `f32::MAX`.
fn to_f32(x: f64) -> Option<f32> {
    let max = f64::from(f32::MAX);
    if x.is_finite() && x.abs() > max {
        return (x.abs() <= 3.402_823_5e38 * (1.0 + 1e-9)).then_some(f32::MAX.copysign(x as f32));
    }
    Some(x as f32)
}

fn num(v: &Json) -> Option<f64> {
    match v {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An integer in `v` (a number, whole, or its text), within `lo..=hi`.
fn int(v: &Json, lo: i128, hi: i128) -> Option<i128> {
    let i = match v {
        Json::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i128)),
        Json::String(s) => s.trim().parse::<i128>().ok().or_else(|| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.fract() == 0.0)
                .map(|f| f as i128)
        }),
        _ => None,
    }?;
    (lo..=hi).contains(&i).then_some(i)
}

/// `v` as a value of `kind`; numbers by value (`5.0` is the int `5`).
pub(crate) fn scalar(kind: &Kind, v: &Json) -> Result<Value, String> {
    let bad = || format!("{v} is not a {}", kind_name(kind));
    Ok(match kind {
        Kind::Double => Value::F64(num(v).ok_or_else(bad)?),
        Kind::Float => Value::F32(num(v).and_then(to_f32).ok_or_else(bad)?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Value::I32(int(v, i32::MIN.into(), i32::MAX.into()).ok_or_else(bad)? as i32)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(int(v, i64::MIN.into(), i64::MAX.into()).ok_or_else(bad)? as i64)
        }
        Kind::Uint32 | Kind::Fixed32 => {
            Value::U32(int(v, 0, u32::MAX.into()).ok_or_else(bad)? as u32)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            Value::U64(int(v, 0, u64::MAX.into()).ok_or_else(bad)? as u64)
        }
        Kind::Bool => match v {
            Json::Bool(b) => Value::Bool(*b),
            Json::String(s) if s == "true" || s == "false" => Value::Bool(s == "true"),
            _ => return Err(bad()),
        },
        Kind::String => match v {
            Json::String(s) => Value::String(s.clone()),
            Json::Number(n) => Value::String(n.to_string()),
            Json::Bool(b) => Value::String(b.to_string()),
            _ => return Err(bad()),
        },
        Kind::Bytes => match v {
            Json::String(s) => Value::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(s))
                    .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(s))
                    .map_err(|_| format!("{v} is not base64 (a bytes field)"))?
                    .into(),
            ),
            _ => return Err(bad()),
        },
        Kind::Enum(e) => match v {
            Json::String(s) => match e.get_value_by_name(s) {
                Some(ev) => Value::EnumNumber(ev.number()),
                None => Value::EnumNumber(
                    int(v, i32::MIN.into(), i32::MAX.into())
                        .ok_or_else(|| format!("{s:?} is not a value of {}", e.full_name()))?
                        as i32,
                ),
            },
            _ => {
                Value::EnumNumber(int(v, i32::MIN.into(), i32::MAX.into()).ok_or_else(bad)? as i32)
            }
        },
        Kind::Message(m) => {
            return Err(format!("{v} is not a {}", m.full_name()));
        }
    })
}

fn kind_name(kind: &Kind) -> Cow<'static, str> {
    match kind {
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => "32-bit integer".into(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => "64-bit integer".into(),
        Kind::Uint32 | Kind::Fixed32 => "32-bit unsigned integer".into(),
        Kind::Uint64 | Kind::Fixed64 => "64-bit unsigned integer".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
        Kind::Enum(e) => e.full_name().to_owned().into(),
        Kind::Message(m) => m.full_name().to_owned().into(),
    }
}

/// How a `matches` or `glob` leaf is made from its text.
pub(crate) type Leaf = fn(&str) -> Result<Pattern, String>;

/// A regular expression, unanchored as GripMock runs them.
pub(crate) fn regex_leaf(text: &str) -> Result<Pattern, String> {
    Regex::new(text).map(Pattern::Regex).map_err(|e| {
        // regex draws the place on lines of their own: keep the last one, the reason.
        let why = e.to_string();
        let why = why.lines().last().unwrap_or_default().to_owned();
        format!(
            "{text:?} is not a regex: {}",
            why.trim_start_matches("error: ")
        )
    })
}

pub(crate) fn glob_leaf(text: &str) -> Result<Pattern, String> {
    Ok(Pattern::Glob(text.to_owned()))
}

/// Every key of `m` as `(field, Pattern)`.
pub(crate) fn patterns(
    desc: &MessageDescriptor,
    m: &Map<String, Json>,
    what: &str,
    leaf: Leaf,
) -> Result<Vec<(FieldDescriptor, Pattern)>, String> {
    m.iter()
        .map(|(k, v)| {
            let fd = field(desc, k).ok_or_else(|| unknown(desc, k, what))?;
            let p = pattern(&fd.kind(), fd.is_list(), fd.is_map(), v, leaf)
                .map_err(|e| format!("{}: {e}", at(what, k)))?;
            Ok((fd, p))
        })
        .collect()
}

fn pattern(kind: &Kind, list: bool, map: bool, v: &Json, leaf: Leaf) -> Result<Pattern, String> {
    match (v, kind) {
        (Json::Array(items), _) if list => items
            .iter()
            .map(|x| pattern(kind, false, false, x, leaf))
            .collect::<Result<_, _>>()
            .map(Pattern::List),
        (Json::Object(m), Kind::Message(entry)) if map => {
            let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            m.iter()
                .map(|(k, x)| {
                    Ok((
                        map_key(&kf.kind(), k)?,
                        pattern(&vf.kind(), false, false, x, leaf)?,
                    ))
                })
                .collect::<Result<_, String>>()
                .map(Pattern::Map)
        }
        (Json::Object(m), Kind::Message(desc)) => patterns(desc, m, "", leaf).map(Pattern::Message),
        (Json::String(s), _) => leaf(s),
        (Json::Number(n), _) => leaf(&n.to_string()),
        (Json::Bool(b), _) => leaf(&b.to_string()),
        (other, _) => Err(format!("{other} cannot be matched")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_by_value_and_the_largest_float() {
        assert_eq!(
            scalar(&Kind::Int32, &serde_json::json!(5.0)).unwrap(),
            Value::I32(5)
        );
        assert_eq!(
            scalar(&Kind::Int64, &serde_json::json!("7")).unwrap(),
            Value::I64(7)
        );
        assert!(scalar(&Kind::Int32, &serde_json::json!(5.5)).is_err());
        assert_eq!(
            scalar(&Kind::Float, &serde_json::json!(3.4028235e38)).unwrap(),
            Value::F32(f32::MAX)
        );
        assert!(scalar(&Kind::Float, &serde_json::json!(3.5e38)).is_err());
        assert_eq!(
            scalar(&Kind::Double, &serde_json::json!(5)).unwrap(),
            Value::F64(5.0)
        );
        assert_eq!(
            scalar(&Kind::String, &serde_json::json!(12)).unwrap(),
            Value::String("12".into())
        );
    }
}
