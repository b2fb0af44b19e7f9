//! The NOT_FOUND message a call no stub matches gets: GripMock's text (the request with every
//! field by its .proto name, the closest stub's rules) for `volley mock`, volley's one line for
//! `volley serve`.

use std::fmt::Write;

use http::HeaderMap;
use prost_reflect::{DynamicMessage, MethodDescriptor, SerializeOptions};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{Input, InputMatcher, Stub};

/// Headers GripMock leaves out of matching and of this message.
pub(crate) const SKIPPED_HEADERS: [&str; 7] = [
    ":authority",
    "content-type",
    "grpc-accept-encoding",
    "user-agent",
    "accept-encoding",
    "te",
    "grpc-timeout",
];

/// `v` with every object's keys sorted.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        // Go prints a whole float64 as an integer.
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        other => other,
    }
}

/// JSON indented with tabs, keys sorted (Go's `json.MarshalIndent(v, "", "\t")`).
pub(crate) fn tabbed(v: &Value) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    let _ = sorted(v.clone()).serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// A request as GripMock's matcher sees it: every field, by its .proto name.
pub(crate) fn request_map(msg: &DynamicMessage) -> Value {
    let opts = SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false)
        .stringify_64_bit_integers(false);
    let mut v = msg
        .serialize_with_options(serde_json::value::Serializer, &opts)
        .unwrap_or(Value::Null);
    // An unset message field is there, as null.
    if let Value::Object(m) = &mut v {
        for f in prost_reflect::ReflectMessage::descriptor(msg).fields() {
            if f.kind().as_message().is_some() && !f.is_list() && !f.is_map() {
                m.entry(f.name().to_owned()).or_insert(Value::Null);
            }
        }
    }
    v
}

/// The request headers GripMock shows and matches (lowercase names; values joined with `;`).
pub(crate) fn header_map(headers: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for name in headers.keys() {
        if SKIPPED_HEADERS.contains(&name.as_str()) {
            continue;
        }
        if let Some(v) = crate::matcher::header(headers, name) {
            out.insert(name.as_str().to_owned(), Value::String(v.into_owned()));
        }
    }
    out
}

fn rules(out: &mut String, m: &InputMatcher, at: &str) {
    for (name, block) in &m.shown {
        if *name == "anyOf" {
            let n = block.as_array().map_or(0, Vec::len);
            let _ = writeln!(
                out,
                "{at}.anyOf: selected [0], hidden: {}",
                n.saturating_sub(1)
            );
            if let Some(first) = block.get(0) {
                let _ = writeln!(out, "{at}.anyOf[0]:\n{}", tabbed(first));
            }
            continue;
        }
        let _ = writeln!(out, "{at}.{name}:\n{}", tabbed(block));
    }
}

/// GripMock's NOT_FOUND text.
pub(crate) fn gripmock(
    method: &MethodDescriptor,
    headers: &HeaderMap,
    requests: &[&DynamicMessage],
    stream: bool,
    closest: Option<&Stub>,
) -> String {
    let mut out = format!(
        "No matching stub found\n\nService: {}\nMethod: {}\n\n",
        method.parent_service().full_name(),
        method.name()
    );
    let shown = header_map(headers);
    if !shown.is_empty() {
        let _ = write!(
            out,
            "Request headers:\n{}\n\n",
            tabbed(&Value::Object(shown))
        );
    }
    if stream {
        out.push_str("Request input (stream):\n");
        for (i, r) in requests.iter().enumerate() {
            let _ = writeln!(out, "[{i}]\n{}", tabbed(&request_map(r)));
        }
        if requests.is_empty() {
            out.push_str("(empty)\n");
        }
        out.push('\n');
    } else {
        match requests.first() {
            Some(r) => {
                let _ = write!(out, "Request input:\n{}\n\n", tabbed(&request_map(r)));
            }
            None => out.push_str("Request input:\n(empty)\n\n"),
        }
    }
    let Some(stub) = closest else {
        out.push_str("No similar stubs found.");
        return out;
    };
    let _ = writeln!(out, "Closest match:\npriority: {}", stub.priority);
    if stub.times > 0 {
        let _ = writeln!(out, "times: {}", stub.times);
    }
    if let Some(h) = stub
        .raw
        .get("headers")
        .filter(|h| h.as_object().is_some_and(|m| !m.is_empty()))
    {
        out.push_str("headers:\n");
        if let Some(m) = h.as_object() {
            for (k, v) in m {
                let _ = writeln!(out, "headers.{k}:\n{}", tabbed(v));
            }
        }
    }
    match &stub.input {
        Input::Any => out.push_str("input rules:\n(any)\n"),
        Input::One(m) => {
            out.push_str("input rules:\n");
            rules(&mut out, m, "input");
        }
        Input::Each(list) => {
            out.push_str("input rules (stream):\n");
            for (i, m) in list.iter().enumerate() {
                let _ = writeln!(out, "inputs[{i}]:");
                rules(&mut out, m, &format!("inputs[{i}]"));
            }
        }
    }
    out.trim_end().to_owned()
}

/// volley's one line: the request as sent (default fields left out) and the closest stub.
pub(crate) fn volley(
    method: &MethodDescriptor,
    request: Option<&DynamicMessage>,
    closest: Option<&Stub>,
) -> String {
    let opts = SerializeOptions::new().use_proto_field_name(true);
    let req = request
        .and_then(|r| {
            r.serialize_with_options(serde_json::value::Serializer, &opts)
                .ok()
        })
        .unwrap_or_else(|| Value::Object(Map::new()));
    let closest = closest.map_or(String::new(), |s| {
        let shown = match &s.input {
            Input::Any => "any request".to_owned(),
            Input::One(m) => shown(m),
            Input::Each(list) => list.iter().map(shown).collect::<Vec<_>>().join("; "),
        };
        format!("; closest: {} ({shown})", s.source)
    });
    format!(
        "no stub matches {req} for {}/{}{closest}",
        method.parent_service().full_name(),
        method.name()
    )
}

fn shown(m: &InputMatcher) -> String {
    m.shown
        .iter()
        .map(|(name, v)| format!("{name} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_indented_sorted_json() {
        let v = serde_json::json!({"value": 5, "to_unit": "METERS"});
        assert_eq!(
            tabbed(&v),
            "{\n\t\"to_unit\": \"METERS\",\n\t\"value\": 5\n}"
        );
    }
}
