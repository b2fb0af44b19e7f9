//! A stub's `output` checked against the method's output type: the data and stream messages
//! (decoded now, or parsed as templates), the status GripMock sends (an error with no code is
//! ABORTED), `google.rpc` error details, headers, trailers and the delay.

use std::time::Duration;

use http::HeaderName;
use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor};
use serde_json::{Map, Value};
use volley_server::Code;

use crate::{
    format::{MetaValue, RawOutput},
    model::{Delay, Item, Meta, Output, Reply, Text},
    template::{Shape, Template, is_templated},
};

/// Numbers written as text become numbers where the field is numeric (a template renders
/// text), `"true"`/`"false"` become bools, and the largest `float` as JSON rounds it
/// (`3.4028235e+38`) is `f32::MAX`: what GripMock's protojson accepts, prost-reflect accepts.
pub(crate) fn fixup(desc: &MessageDescriptor, v: &mut Value) {
    let Value::Object(m) = v else { return };
    for (k, x) in m.iter_mut() {
        let Some(fd) = super::expect::field(desc, k) else {
            continue;
        };
        let kind = if fd.is_map() {
            match fd.kind() {
                Kind::Message(e) => e.map_entry_value_field().kind(),
                k => k,
            }
        } else {
            fd.kind()
        };
        match x {
            Value::Array(items) if fd.is_list() => items.iter_mut().for_each(|i| fix(&kind, i)),
            Value::Object(entries) if fd.is_map() => {
                entries.values_mut().for_each(|i| fix(&kind, i));
            }
            one => fix(&kind, one),
        }
    }
}

fn fix(kind: &Kind, v: &mut Value) {
    match kind {
        Kind::Message(d) if !d.full_name().starts_with("google.protobuf.") => fixup(d, v),
        Kind::Bool => {
            if let Value::String(s) = v
                && (s == "true" || s == "false")
            {
                *v = Value::Bool(s == "true");
            }
        }
        Kind::Float | Kind::Double => {
            let n = match v {
                Value::String(s) => s.trim().parse::<f64>().ok(),
                Value::Number(n) => n.as_f64(),
                _ => None,
            };
            if let Some(mut n) = n {
                let max = f64::from(f32::MAX);
                if matches!(kind, Kind::Float)
                    && n.abs() > max
                    && n.abs() <= 3.402_823_5e38 * (1.0 + 1e-9)
                {
                    n = max.copysign(n);
                }
                if let Some(num) = serde_json::Number::from_f64(n) {
                    *v = Value::Number(num);
                }
            }
        }
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Uint32 | Kind::Fixed32 => {
            if let Value::String(s) = v
                && let Ok(f) = s.trim().parse::<f64>()
                && f.fract() == 0.0
            {
                *v = Value::from(f as i64);
            }
        }
        _ => {}
    }
}

/// `v` (fixed data) as a message of `desc`.
pub(crate) fn message(desc: &MessageDescriptor, v: &Value) -> Result<DynamicMessage, String> {
    let mut v = v.clone();
    fixup(desc, &mut v);
    DynamicMessage::deserialize(desc.clone(), v)
        .map_err(|e| format!("output does not fit {}: {e}", desc.full_name()))
}

fn reply(desc: &MessageDescriptor, v: &Value, what: &str) -> Result<Reply, String> {
    if !is_templated(v) {
        return match message(desc, v) {
            Ok(m) => Ok(Reply::Fixed(m)),
            // An Any of a type no served file defines: GripMock loads such a stub and fails
            // the calls it answers (UNKNOWN, "unable to resolve ..."); so does volley.
            Err(e) => match unresolved_any(desc.parent_pool(), v) {
                Some(url) => {
                    tracing::warn!(
                        "{what}: an Any of type {url:?}, which no served .proto defines: calls \
                         this stub answers fail with UNKNOWN"
                    );
                    Shape::parse(v)
                        .map(Reply::Templated)
                        .map_err(|e| format!("output template {e}"))
                }
                None => Err(e),
            },
        };
    }
    // Checked at load as far as it can be: the templates parse and the fields exist; the
    // rendered values are checked per call.
    let shape = Shape::parse(v).map_err(|e| format!("output template {e}"))?;
    if let Value::Object(m) = v {
        for k in m.keys() {
            if super::expect::field(desc, k).is_none() {
                return Err(format!(
                    "{what} names no field {k:?} of {}",
                    desc.full_name()
                ));
            }
        }
    }
    Ok(Reply::Templated(shape))
}

/// The first `@type` in `v` whose message `pool` does not have (an `Any` that cannot be
/// encoded), as written.
pub(crate) fn unresolved_any(pool: &prost_reflect::DescriptorPool, v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(url)) = m.get("@type") {
                let name = url.rsplit('/').next().unwrap_or(url);
                if pool.get_message_by_name(name).is_none() {
                    return Some(url.clone());
                }
            }
            m.values().find_map(|x| unresolved_any(pool, x))
        }
        Value::Array(a) => a.iter().find_map(|x| unresolved_any(pool, x)),
        _ => None,
    }
}

/// A string that may be a template.
pub(crate) fn text(s: &str, what: &str) -> Result<Text, String> {
    if !s.contains("{{") {
        return Ok(Text::Fixed(s.to_owned()));
    }
    Template::parse(s)
        .map(|t| Text::Templated(Box::new(t)))
        .map_err(|e| format!("{what}: {s:?}: {e}"))
}

/// A status code: 0 to 16, or its name (`NOT_FOUND`, `NotFound`).
pub(crate) fn code(v: &Value) -> Result<Code, String> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse::<i64>().ok().or_else(|| {
            let want: String = s.chars().filter(|c| *c != '_').collect();
            (0..=16).find(|i| {
                let name = format!("{:?}", Code::from_i32(*i as i32));
                name.eq_ignore_ascii_case(&want)
            })
        }),
        _ => None,
    };
    match n {
        Some(n @ 0..=16) => Ok(Code::from_i32(n as i32)),
        _ => Err(format!(
            "output.code {v} is not a gRPC status code (0 to 16, or a name)"
        )),
    }
}

/// GripMock's rules: an error with no code is ABORTED; a code with no error has an empty
/// message; code 0 is success whatever the error says.
fn status(
    error: Option<&str>,
    code_v: Option<&Value>,
    what: &str,
) -> Result<Option<(Code, Text)>, String> {
    let c = code_v.map(code).transpose()?;
    Ok(match (error, c) {
        (_, Some(Code::Ok)) | (None, None) => None,
        (Some(e), None) => Some((Code::Aborted, text(e, what)?)),
        (e, Some(c)) => Some((c, text(e.unwrap_or_default(), what)?)),
    })
}

/// `details`: each `{"type": "type.googleapis.com/google.rpc.ErrorInfo", ...fields}` (or
/// `@type`, or its fields under `value`), packed as `google.protobuf.Any`.
pub(crate) fn details(
    pool: &prost_reflect::DescriptorPool,
    list: &[Value],
) -> Result<Vec<prost_types::Any>, String> {
    list.iter()
        .enumerate()
        .map(|(i, d)| {
            let Value::Object(m) = d else {
                return Err(format!("output.details[{i}] is not an object"));
            };
            let url = m
                .get("type")
                .or_else(|| m.get("@type"))
                .and_then(Value::as_str)
                .ok_or_else(|| format!("output.details[{i}] has no type"))?;
            let name = url.rsplit('/').next().unwrap_or(url);
            let type_url = if url.contains('/') {
                url.to_owned()
            } else {
                format!("type.googleapis.com/{url}")
            };
            let Some(desc) = pool.get_message_by_name(name) else {
                // A type no served file defines, as a recording writes one: its encoded bytes
                // under `value` in base64 (Connect's form of a detail), sent as they are.
                return match (m.len(), m.get("value")) {
                    (2, Some(Value::String(b64))) => Ok(prost_types::Any {
                        type_url,
                        value: decode_base64(b64)
                            .ok_or_else(|| format!("output.details[{i}].value is not base64"))?,
                    }),
                    _ => Err(format!(
                        "output.details[{i}]: unknown type {name:?} (give its bytes as \
                         base64 under \"value\", or serve a .proto that defines it)"
                    )),
                };
            };
            let mut fields: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| *k != "type" && *k != "@type")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if let (1, Some(Value::Object(inner))) = (fields.len(), fields.get("value"))
                && desc.get_field_by_name("value").is_none()
            {
                fields = inner.clone();
            }
            let msg = message(&desc, &Value::Object(fields))
                .map_err(|e| format!("output.details[{i}]: {e}"))?;
            Ok(prost_types::Any {
                type_url,
                value: msg.encode_to_vec(),
            })
        })
        .collect()
}

/// Standard base64, padded or not.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(s.trim_end_matches('='))
        .ok()
}

/// Header names a stub cannot set (the protocol's own).
fn reserved(name: &str) -> bool {
    name.starts_with(':')
        || matches!(
            name,
            "content-type"
                | "content-length"
                | "content-encoding"
                | "grpc-status"
                | "grpc-message"
                | "grpc-status-details-bin"
        )
}

fn metadata(
    m: &std::collections::BTreeMap<String, MetaValue>,
    what: &str,
) -> Result<Vec<Meta>, String> {
    let mut out = Vec::new();
    for (k, v) in m {
        let lower = k.to_ascii_lowercase();
        if reserved(&lower) {
            continue;
        }
        let name = HeaderName::from_bytes(lower.as_bytes())
            .map_err(|_| format!("{what}: {k:?} is not a header name"))?;
        let what = format!("{what}.{k}");
        match v {
            MetaValue::Text(t) => out.push(Meta {
                name,
                value: text(t, &what)?,
                split: true,
            }),
            MetaValue::List(list) => {
                for t in list {
                    out.push(Meta {
                        name: name.clone(),
                        value: text(t, &what)?,
                        split: false,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// `delay`: a Go duration (`100ms`), milliseconds as a number, or a template rendering one.
pub(crate) fn delay(v: Option<&Value>, what: &str) -> Result<Delay, String> {
    Ok(match v {
        None | Some(Value::Null) => Delay::None,
        Some(Value::Number(n)) => Delay::Fixed(Duration::from_millis(n.as_u64().unwrap_or(0))),
        Some(Value::String(s)) if s.contains("{{") => Delay::Templated(Box::new(
            Template::parse(s).map_err(|e| format!("{what}: {s:?}: {e}"))?,
        )),
        Some(Value::String(s)) => Delay::Fixed(
            volley_proto::gofmt::parse_duration(s)
                .map_err(|_| format!("{what} {s:?} is not a duration (50ms, 1s)"))?,
        ),
        Some(other) => return Err(format!("{what} {other} is not a duration")),
    })
}

/// One `stream` element: a message, or GripMock's `_gripmock` marker with it.
fn item(
    desc: &MessageDescriptor,
    pool: &prost_reflect::DescriptorPool,
    v: &Value,
    i: usize,
) -> Result<Item, String> {
    let what = format!("output.stream[{i}]");
    let (mut body, marker) = match v {
        Value::Object(m) if m.contains_key("_gripmock") => {
            let mut m = m.clone();
            let marker = m.remove("_gripmock");
            (Some(Value::Object(m)), marker)
        }
        other => (Some(other.clone()), None),
    };
    let mut out = Item {
        reply: None,
        delay: None,
        status: None,
    };
    if let Some(Value::Object(mk)) = &marker {
        if mk.contains_key("delay") {
            out.delay = Some(delay(mk.get("delay"), &format!("{what}._gripmock.delay"))?);
        }
        let error = mk.get("error").and_then(Value::as_str);
        if let Some((c, t)) = status(error, mk.get("code"), &format!("{what}._gripmock.error"))? {
            let d = match mk.get("details") {
                Some(Value::Array(list)) => details(pool, list)?,
                _ => Vec::new(),
            };
            out.status = Some((c, t, d));
        }
        if matches!(&body, Some(Value::Object(m)) if m.is_empty()) {
            body = None;
        }
    }
    if let Some(b) = body.filter(|_| out.status.is_none()) {
        out.reply = Some(reply(desc, &b, &what)?);
    }
    Ok(out)
}

/// The checked output of a stub of a method whose output type is `desc`.
pub(crate) fn output(desc: &MessageDescriptor, raw: &RawOutput) -> Result<Output, String> {
    let pool = desc.parent_pool();
    let data = raw
        .data
        .as_ref()
        .filter(|v| !v.is_null())
        .map(|v| reply(desc, v, "output.data"))
        .transpose()?;
    let stream = raw
        .stream
        .as_ref()
        .map(|items| {
            items
                .iter()
                .enumerate()
                .map(|(i, v)| item(desc, pool, v, i))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(Output {
        data,
        stream,
        status: status(raw.error.as_deref(), raw.code.as_ref(), "output.error")?,
        details: details(pool, &raw.details)?,
        headers: metadata(&raw.headers, "output.headers")?,
        trailers: metadata(&raw.trailers, "output.trailers")?,
        delay: delay(raw.delay.as_ref(), "output.delay")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_by_number_or_name() {
        assert_eq!(code(&serde_json::json!(5)).unwrap(), Code::NotFound);
        assert_eq!(
            code(&serde_json::json!("NOT_FOUND")).unwrap(),
            Code::NotFound
        );
        assert_eq!(
            code(&serde_json::json!("PermissionDenied")).unwrap(),
            Code::PermissionDenied
        );
        assert!(code(&serde_json::json!(42)).is_err());
    }

    #[test]
    fn gripmock_status_rules() {
        let s =
            |e: Option<&str>, c: Option<Value>| status(e, c.as_ref(), "e").unwrap().map(|(c, _)| c);
        assert_eq!(s(Some("boom"), None), Some(Code::Aborted));
        assert_eq!(
            s(None, Some(serde_json::json!(14))),
            Some(Code::Unavailable)
        );
        assert_eq!(s(Some("ignored"), Some(serde_json::json!(0))), None);
        assert_eq!(s(None, None), None);
    }
}
