//! A request's field values against a stub's typed expectations: `equals` (whole values, lists
//! in order or as multisets), `contains` (subsets), and `matches`/`glob` patterns over the
//! values' text. Values are compared as decoded, with no JSON made, but for well-known types
//! written in their JSON form.

use std::borrow::Cow;

use base64::Engine;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, ReflectMessage, SerializeOptions, Value,
};
use serde_json::Value as Json;

use crate::model::{Expect, Pattern};

/// A message field's JSON (its well-known form, `Any` with `@type`), for `Expect::Json`.
pub(crate) fn json_of(v: &Value) -> Json {
    match v {
        Value::Message(m) => {
            let opts = SerializeOptions::new()
                .use_proto_field_name(true)
                .skip_default_fields(false);
            m.serialize_with_options(serde_json::value::Serializer, &opts)
                .unwrap_or_else(|_| any_fallback(m))
        }
        _ => Json::Null,
    }
}

/// A message field as GripMock's matchers see it: field by field with .proto names (well-known
/// types too: an `Any` is `{type_url, value}` with its bytes in base64, a `Timestamp`
/// `{seconds, nanos}`), scalars at their defaults included, unset messages `null`, unset
/// repeated fields left out. A stub written against that form matches as well as one written
/// in the JSON form.
pub(crate) fn raw_of(v: &Value) -> Json {
    match v {
        Value::Message(m) => raw_message(m),
        _ => Json::Null,
    }
}

fn raw_message(m: &DynamicMessage) -> Json {
    let mut out = serde_json::Map::new();
    for fd in m.descriptor().fields() {
        let unset_message =
            fd.kind().as_message().is_some() && !fd.is_list() && !fd.is_map() && !m.has_field(&fd);
        let value = if unset_message {
            Json::Null
        } else if (fd.is_list() || fd.is_map()) && !m.has_field(&fd) {
            continue;
        } else {
            raw_value(&m.get_field(&fd), &fd.kind())
        };
        out.insert(fd.name().to_owned(), value);
    }
    Json::Object(out)
}

fn raw_value(v: &Value, kind: &Kind) -> Json {
    match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(i) => Json::from(*i),
        Value::I64(i) => Json::from(*i),
        Value::U32(i) => Json::from(*i),
        Value::U64(i) => Json::from(*i),
        Value::F32(f) => {
            serde_json::Number::from_f64(f64::from(*f)).map_or(Json::Null, Json::Number)
        }
        Value::F64(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue" => Json::Null,
            Kind::Enum(e) => Json::String(
                e.get_value(*n)
                    .map_or_else(String::new, |ev| ev.name().to_owned()),
            ),
            _ => Json::from(*n),
        },
        Value::Message(m) => raw_message(m),
        Value::List(l) => Json::Array(l.iter().map(|x| raw_value(x, kind)).collect()),
        Value::Map(map) => {
            let value_kind = match kind {
                Kind::Message(e) if e.is_map_entry() => e.map_entry_value_field().kind(),
                k => k.clone(),
            };
            Json::Object(
                map.iter()
                    .map(|(k, x)| (map_key(k), raw_value(x, &value_kind)))
                    .collect(),
            )
        }
    }
}

fn map_key(k: &prost_reflect::MapKey) -> String {
    use prost_reflect::MapKey;
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(i) => i.to_string(),
        MapKey::I64(i) => i.to_string(),
        MapKey::U32(i) => i.to_string(),
        MapKey::U64(i) => i.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

/// An `Any` whose type is not known: its URL and its bytes in base64.
fn any_fallback(m: &DynamicMessage) -> Json {
    let url = match m.get_field_by_name("type_url").as_deref() {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let bytes = match m.get_field_by_name("value").as_deref() {
        Some(Value::Bytes(b)) => base64::engine::general_purpose::STANDARD.encode(b),
        _ => String::new(),
    };
    serde_json::json!({"@type": url, "value": bytes})
}

/// JSON equality with numbers by value (`5.0` is `5`, `"7"` is `7`).
pub(crate) fn json_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Number(x), Json::String(y)) | (Json::String(y), Json::Number(x)) => {
            y.parse::<f64>().ok() == x.as_f64()
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w))
        }
        _ => a == b,
    }
}

/// Whether `have` holds `want`: objects as subsets, lists holding each element.
pub(crate) fn json_contains(want: &Json, have: &Json) -> bool {
    match (want, have) {
        (Json::Object(w), Json::Object(h)) => w
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|x| json_contains(v, x))),
        (Json::Array(w), Json::Array(h)) => w.iter().all(|v| h.iter().any(|x| json_contains(v, x))),
        _ => json_equal(want, have),
    }
}

fn is_default(fd: &FieldDescriptor, v: &Value) -> bool {
    match v {
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Message(m) => m.fields().next().is_none(),
        other => *other == Value::default_value_for_field(fd),
    }
}

/// Whether `have` (the value of a field) is what `want` says, whole.
pub(crate) fn equals(want: &Expect, have: &Value, unordered: bool) -> bool {
    match (want, have) {
        (Expect::Unset, v) => match v {
            Value::Message(m) => m.fields().next().is_none(),
            Value::List(l) => l.is_empty(),
            Value::Map(m) => m.is_empty(),
            _ => false,
        },
        (Expect::Scalar(w), h) => w == h,
        (Expect::Json(w), h) => json_equal(w, &json_of(h)) || json_equal(w, &raw_of(h)),
        (Expect::Message(fields), Value::Message(m)) => {
            fields
                .iter()
                .all(|(fd, e)| equals(e, &m.get_field(fd), unordered))
                && m.fields().all(|(fd, v)| {
                    fields.iter().any(|(f, _)| f.number() == fd.number()) || is_default(&fd, v)
                })
        }
        (Expect::List(items), Value::List(vals)) => {
            if items.len() != vals.len() {
                return false;
            }
            if !unordered {
                return items.iter().zip(vals).all(|(e, v)| equals(e, v, unordered));
            }
            // A multiset: each expected element takes a distinct equal value.
            let mut used = vec![false; vals.len()];
            items.iter().all(|e| {
                let hit = vals
                    .iter()
                    .enumerate()
                    .find(|(i, v)| !used[*i] && equals(e, v, unordered))
                    .map(|(i, _)| i);
                hit.map(|i| used[i] = true).is_some()
            })
        }
        (Expect::Map(entries), Value::Map(m)) => {
            entries.len() == m.len()
                && entries
                    .iter()
                    .all(|(k, e)| m.get(k).is_some_and(|v| equals(e, v, unordered)))
        }
        _ => false,
    }
}

/// Whether `have` holds `want`: messages and maps as subsets, lists holding each element.
pub(crate) fn contains(want: &Expect, have: &Value) -> bool {
    match (want, have) {
        (Expect::Json(w), h) => json_contains(w, &json_of(h)) || json_contains(w, &raw_of(h)),
        (Expect::Message(fields), Value::Message(m)) => {
            fields.iter().all(|(fd, e)| contains(e, &m.get_field(fd)))
        }
        (Expect::List(items), Value::List(vals)) => {
            items.iter().all(|e| vals.iter().any(|v| contains(e, v)))
        }
        (Expect::Map(entries), Value::Map(m)) => entries
            .iter()
            .all(|(k, e)| m.get(k).is_some_and(|v| contains(e, v))),
        (w, h) => equals(w, h, false),
    }
}

/// A scalar's text as GripMock stringifies it for `matches` (bools never match).
fn text<'v>(v: &'v Value, kind: &Kind) -> Option<Cow<'v, str>> {
    Some(match v {
        Value::String(s) => Cow::Borrowed(s),
        Value::I32(i) => Cow::Owned(i.to_string()),
        Value::I64(i) => Cow::Owned(i.to_string()),
        Value::U32(i) => Cow::Owned(i.to_string()),
        Value::U64(i) => Cow::Owned(i.to_string()),
        Value::F32(f) => Cow::Owned(volley_proto::gofmt::format_g(f64::from(*f))),
        Value::F64(f) => Cow::Owned(volley_proto::gofmt::format_g(*f)),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => Cow::Owned(ev.name().to_owned()),
                None => Cow::Owned(n.to_string()),
            },
            _ => Cow::Owned(n.to_string()),
        },
        Value::Bytes(b) => Cow::Owned(base64::engine::general_purpose::STANDARD.encode(b)),
        // A well-known type whose JSON is a string or a number (a Timestamp's RFC 3339, a
        // FieldMask's paths, a wrapper's value): that text, as `equals` already reads it.
        Value::Message(m) if is_wkt(m) => match json_of(v) {
            Json::String(s) => Cow::Owned(s),
            Json::Number(n) => Cow::Owned(n.to_string()),
            _ => return None,
        },
        _ => return None,
    })
}

fn is_wkt(m: &DynamicMessage) -> bool {
    m.descriptor().full_name().starts_with("google.protobuf.")
}

/// Whether field `fd` of `msg` matches `p`. An unset well-known-type field is GripMock's `nil`:
/// its text is empty for `matches`, and `glob` (strings only) never matches it.
pub(crate) fn field_pattern(p: &Pattern, msg: &DynamicMessage, fd: &FieldDescriptor) -> bool {
    let unset_wkt = !fd.is_list()
        && !fd.is_map()
        && fd
            .kind()
            .as_message()
            .is_some_and(|d| d.full_name().starts_with("google.protobuf."))
        && !msg.has_field(fd);
    match (p, unset_wkt) {
        (Pattern::Regex(re), true) => re.is_match(""),
        (_, true) => false,
        (p, false) => pattern(p, &msg.get_field(fd), &fd.kind()),
    }
}

/// Whether `have` (of `kind`) matches `p`.
pub(crate) fn pattern(p: &Pattern, have: &Value, kind: &Kind) -> bool {
    match (p, have) {
        (Pattern::Regex(re), v) => {
            !matches!(v, Value::Bool(_)) && text(v, kind).is_some_and(|t| re.is_match(&t))
        }
        (Pattern::Glob(g), Value::String(s)) => super::glob::matches(g, s),
        (Pattern::Glob(g), Value::Message(m)) if is_wkt(m) => {
            matches!(json_of(have), Json::String(ref s) if super::glob::matches(g, s))
        }
        (Pattern::Glob(_), _) => false,
        (Pattern::Message(fields), Value::Message(m)) => fields
            .iter()
            .all(|(fd, p)| pattern(p, &m.get_field(fd), &fd.kind())),
        (Pattern::List(items), Value::List(vals)) => {
            // The same length, each pattern taking a distinct element.
            let mut used = vec![false; vals.len()];
            items.len() == vals.len()
                && items.iter().all(|p| {
                    let hit = vals
                        .iter()
                        .enumerate()
                        .find(|(i, v)| !used[*i] && pattern(p, v, kind))
                        .map(|(i, _)| i);
                    hit.map(|i| used[i] = true).is_some()
                })
        }
        (Pattern::Map(entries), Value::Map(m)) => {
            let value_kind = match kind {
                Kind::Message(e) if e.is_map_entry() => e.map_entry_value_field().kind(),
                k => k.clone(),
            };
            entries
                .iter()
                .all(|(k, p)| m.get(k).is_some_and(|v| pattern(p, v, &value_kind)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_by_value() {
        assert!(json_equal(&json!({"a": 5.0}), &json!({"a": 5})));
        assert!(json_equal(&json!("7"), &json!(7)));
        assert!(!json_equal(&json!({"a": 5, "b": 1}), &json!({"a": 5})));
        assert!(json_contains(
            &json!({"a": [1]}),
            &json!({"a": [2, 1], "b": 0})
        ));
    }

    #[test]
    fn matches_and_glob_read_well_known_types_in_their_json_form_as_equals_does() {
        use volley_server::DynamicHandler;

        use crate::testkit::{block_on, msg, stubs, temp_dir};

        let dir = temp_dir("wkt-match");
        std::fs::write(
            dir.join("wkt.proto"),
            r#"syntax = "proto3";
package wkt.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/wrappers.proto";
message Q {
  google.protobuf.Timestamp at = 1; google.protobuf.Duration wait = 2;
  google.protobuf.FieldMask mask = 3; google.protobuf.Int64Value big = 4;
  google.protobuf.StringValue name = 5; google.protobuf.BoolValue flag = 6;
}
service S { rpc M(Q) returns (Q); }
"#,
        )
        .unwrap();
        let pool = volley_proto::load::load_sources(&[dir.join("wkt.proto")], &[])
            .unwrap()
            .pool;
        let m = pool
            .get_service_by_name("wkt.v1.S")
            .unwrap()
            .methods()
            .next()
            .unwrap();
        let hit = |input: serde_json::Value, req: serde_json::Value| {
            let s = stubs(
                &pool,
                json!([{"service": "wkt.v1.S", "method": "M", "input": input,
                        "output": {"data": {}}}]),
            );
            block_on(s.unary(&m, volley_server::Request::new(msg(m.input(), req)))).is_ok()
        };
        let req = json!({"at": "2024-01-02T03:04:05.500Z", "wait": "1.500s",
                         "mask": "a,b.cD", "big": "5", "name": "ann", "flag": true});
        for (input, want) in [
            (json!({"matches": {"at": "^2024-01-02T03:04:05\\.5"}}), true),
            (json!({"matches": {"at": "^2023"}}), false),
            (json!({"glob": {"at": "2024-01-*Z"}}), true),
            (json!({"matches": {"wait": "^1\\.5"}}), true),
            (json!({"glob": {"mask": "a,b.*"}}), true),
            (json!({"matches": {"big": "^5$"}}), true),
            (json!({"glob": {"big": "5"}}), true),
            (json!({"matches": {"name": "^an+$"}}), true),
            (json!({"glob": {"name": "a?n"}}), true),
            // GripMock's regex never matches a bool, nor does a glob.
            (json!({"matches": {"flag": "true"}}), false),
            (json!({"glob": {"flag": "*"}}), false),
            // `equals` on the same string, as before.
            (json!({"equals": {"at": "2024-01-02T03:04:05.500Z"}}), true),
        ] {
            assert_eq!(hit(input.clone(), req.clone()), want, "{input}");
        }
        // An unset one is GripMock's nil: empty text for `matches`, never a `glob` match.
        assert!(hit(json!({"matches": {"at": "^$"}}), json!({})));
        assert!(!hit(json!({"matches": {"at": "^1970"}}), json!({})));
        assert!(!hit(json!({"glob": {"at": "*"}}), json!({})));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lists_in_order_or_as_multisets() {
        let want = Expect::List(vec![
            Expect::Scalar(Value::String("a".into())),
            Expect::Scalar(Value::String("b".into())),
        ]);
        let have = Value::List(vec![Value::String("b".into()), Value::String("a".into())]);
        assert!(!equals(&want, &have, false));
        assert!(equals(&want, &have, true));
        let twice = Value::List(vec![Value::String("a".into()), Value::String("a".into())]);
        assert!(!equals(&want, &twice, true));
        assert!(contains(
            &Expect::List(vec![Expect::Scalar(Value::String("a".into()))]),
            &have
        ));
    }
}
