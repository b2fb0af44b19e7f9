//! What REST callers read besides the message, in grpc-gateway's shapes (its users' clients
//! parse them): the error body `{"code","message","details"}` with each detail as JSON under
//! its `@type`, the reply's metadata as `Grpc-Metadata-*` headers, `response_body` (one field of
//! the reply is the body), and a PATCH's field mask filled from its body when the request
//! leaves it out.

use base64::{Engine, engine::general_purpose::STANDARD};
use http::{HeaderMap, HeaderName};
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MessageDescriptor};
use serde_json::{Map, Value};
use volley_wire::Status;

/// A status's error body: grpc-gateway's field order, each detail whose type `pool` knows as
/// its JSON under `@type` (protojson's `Any`), any other as `@type` and its bytes in base64.
pub(crate) fn error_body(s: &Status, pool: Option<&DescriptorPool>) -> String {
    let details: Vec<Value> = s
        .detail_list()
        .into_iter()
        .map(|any| {
            let name = any.type_url.rsplit('/').next().unwrap_or_default();
            let known = pool
                .and_then(|p| p.get_message_by_name(name))
                .and_then(|d| DynamicMessage::decode(d, any.value.as_slice()).ok())
                .and_then(|m| serde_json::to_value(&m).ok());
            let mut out = Map::new();
            out.insert("@type".into(), any.type_url.clone().into());
            match known {
                Some(Value::Object(fields)) => out.extend(fields),
                _ => {
                    out.insert("value".into(), STANDARD.encode(&any.value).into());
                }
            }
            Value::Object(out)
        })
        .collect();
    format!(
        "{{\"code\":{},\"message\":{},\"details\":{}}}",
        s.code() as i32,
        Value::from(s.message()),
        Value::Array(details)
    )
}

/// The reply's metadata as grpc-gateway writes it: each key as `Grpc-Metadata-<key>`.
pub(crate) fn metadata_headers(metadata: &HeaderMap, out: &mut HeaderMap) {
    for (k, v) in metadata {
        if let Ok(name) = HeaderName::try_from(format!("grpc-metadata-{}", k.as_str())) {
            out.append(name, v.clone());
        }
    }
}

/// `response_body`: the field (`json_name`) of a reply's JSON that is the HTTP body; `null`
/// when the reply leaves it unset.
pub(crate) fn response_field(json: &[u8], field: &str) -> Result<Vec<u8>, Status> {
    let mut v: Value = serde_json::from_slice(json)
        .map_err(|e| Status::internal(format!("cannot read the reply's JSON: {e}")))?;
    let part = v.get_mut(field).map(Value::take).unwrap_or(Value::Null);
    serde_json::to_vec(&part).map_err(|e| Status::internal(format!("cannot write JSON: {e}")))
}

/// For a PATCH whose body is one field (`body`, a message) and whose request has a
/// `google.protobuf.FieldMask` left empty: the mask grpc-gateway fills in, every field the
/// body's JSON sets, nested messages as `a.b` (maps and well-known types whole), in proto
/// names. `None` when there is no such mask to fill.
pub(crate) fn patch_mask(
    input: &MessageDescriptor,
    body_field: &str,
    obj: &Map<String, Value>,
) -> Option<(String, Value)> {
    let body = input.get_field_by_name(body_field)?;
    let Kind::Message(body_type) = body.kind() else {
        return None;
    };
    let mask = input.fields().find(
        |f| matches!(f.kind(), Kind::Message(m) if m.full_name() == "google.protobuf.FieldMask"),
    )?;
    if obj.contains_key(mask.json_name()) || obj.contains_key(mask.name()) {
        return None;
    }
    let Some(Value::Object(set)) = obj.get(body.json_name()) else {
        return None;
    };
    let mut paths = Vec::new();
    collect_paths(&body_type, set, "", &mut paths);
    // FieldMask's JSON is one string of lowerCamelCase paths, comma-separated.
    let json: Vec<String> = paths.iter().map(|p| camel_path(p)).collect();
    Some((mask.json_name().to_owned(), Value::String(json.join(","))))
}

fn collect_paths(
    m: &MessageDescriptor,
    set: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<String>,
) {
    for (key, value) in set {
        let Some(f) = m
            .get_field_by_json_name(key)
            .or_else(|| m.get_field_by_name(key))
        else {
            continue;
        };
        let path = format!("{prefix}{}", f.name());
        match (f.kind(), value) {
            (Kind::Message(inner), Value::Object(fields))
                if !f.is_map()
                    && !inner.full_name().starts_with("google.protobuf.")
                    && !fields.is_empty() =>
            {
                collect_paths(&inner, fields, &format!("{path}."), out);
            }
            _ => out.push(path),
        }
    }
}

/// `a_b.c_d` as FieldMask's JSON writes it: `aB.cD`.
fn camel_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut upper = false;
    for c in p.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_wire::Code;

    #[test]
    fn error_bodies_keep_grpc_gateways_order_and_show_unknown_details_as_bytes() {
        let s = Status::with_details(
            Code::InvalidArgument,
            "bad \"x\"",
            vec![prost_types::Any {
                type_url: "type.googleapis.com/no.Such".into(),
                value: vec![1, 2],
            }],
        );
        assert_eq!(
            error_body(&s, None),
            r#"{"code":3,"message":"bad \"x\"","details":[{"@type":"type.googleapis.com/no.Such","value":"AQI="}]}"#
        );
        assert_eq!(
            error_body(&Status::not_found("gone"), None),
            r#"{"code":5,"message":"gone","details":[]}"#
        );
    }

    #[test]
    fn response_body_takes_one_field() {
        assert_eq!(
            response_field(br#"{"title":"T","id":"1"}"#, "title").unwrap(),
            br#""T""#
        );
        assert_eq!(response_field(br#"{"id":"1"}"#, "title").unwrap(), b"null");
    }

    #[test]
    fn camel_paths() {
        assert_eq!(camel_path("book.page_count"), "book.pageCount");
        assert_eq!(camel_path("a_b_c"), "aBC");
    }
}
