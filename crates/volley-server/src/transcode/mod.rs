//! Between protobuf and the JSON protocols: JSON <-> protobuf bytes for a message type, Connect's
//! names and HTTP statuses for codes and its error JSON, and query strings (Connect GET, REST).

mod nonfinite;

use base64::{Engine, engine::general_purpose::STANDARD_NO_PAD};
use bytes::Bytes;
use http::StatusCode;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use volley_wire::{Code, Status};

/// Connect's name for a code.
pub fn code_name(c: Code) -> &'static str {
    match c {
        Code::Ok => "ok",
        Code::Cancelled => "canceled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The HTTP status Connect sends for a code.
pub fn http_status(c: Code) -> StatusCode {
    let s = match c {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::PermissionDenied => 403,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
        Code::Unauthenticated => 401,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
    };
    StatusCode::from_u16(s).expect("valid status")
}

/// `{"code": "...", "message": "..."}`.
pub fn error_json(s: &Status) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("code".into(), code_name(s.code()).into());
    if !s.message().is_empty() {
        m.insert("message".into(), s.message().into());
    }
    let details = s.detail_list();
    if !details.is_empty() {
        let list: Vec<serde_json::Value> = details
            .iter()
            .map(|d| {
                let name = d.type_url.rsplit('/').next().unwrap_or(&d.type_url);
                serde_json::json!({"type": name, "value": STANDARD_NO_PAD.encode(&d.value)})
            })
            .collect();
        m.insert("details".into(), list.into());
    }
    m.into()
}

/// JSON to protobuf bytes for `desc`; the error names the field.
pub fn json_to_proto(desc: &MessageDescriptor, json: &[u8]) -> Result<Bytes, Status> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let msg = DynamicMessage::deserialize(desc.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            let field = serde_json::from_slice(json)
                .ok()
                .and_then(|v| culprit(desc, &v))
                .map(|f| format!("field {f}: "))
                .unwrap_or_default();
            Status::invalid_argument(format!("invalid {} JSON: {field}{e}", desc.full_name()))
        })?;
    Ok(msg.encode_to_vec().into())
}

/// The field (a dotted path) of a JSON object that does not fit `desc`: one its message does
/// not have, or the first whose value does not decode alone. Only on the error path.
fn culprit(desc: &MessageDescriptor, v: &serde_json::Value) -> Option<String> {
    let obj = v.as_object()?;
    for (key, value) in obj {
        let Some(field) = desc
            .get_field_by_json_name(key)
            .or_else(|| desc.get_field_by_name(key))
        else {
            return Some(key.clone());
        };
        let alone = serde_json::Value::Object([(key.clone(), value.clone())].into_iter().collect());
        if DynamicMessage::deserialize(desc.clone(), alone).is_ok() {
            continue;
        }
        let inner = match field.kind() {
            prost_reflect::Kind::Message(m)
                if !field.is_map()
                    && !field.is_list()
                    && !m.full_name().starts_with("google.protobuf.") =>
            {
                culprit(&m, value)
            }
            _ => None,
        };
        return Some(match inner {
            Some(rest) => format!("{}.{rest}", field.name()),
            None => field.name().to_owned(),
        });
    }
    None
}

/// Protobuf bytes to JSON for `desc` (the JSON codecs' reply path).
pub fn proto_to_json(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Bytes, Status> {
    let msg = DynamicMessage::decode(desc.clone(), bytes)
        .map_err(|e| Status::internal(format!("reply is not a {}: {e}", desc.full_name())))?;
    let cannot = |e: serde_json::Error| Status::internal(format!("cannot write JSON: {e}"));
    if !nonfinite::can_hold_wrapper(desc) {
        return serde_json::to_vec(&msg).map(Bytes::from).map_err(cannot);
    }
    let mut json = serde_json::to_value(&msg).map_err(cannot)?;
    nonfinite::mend(&msg, &mut json);
    serde_json::to_vec(&json).map(Bytes::from).map_err(cannot)
}

pub(crate) fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A query string's `key=value` pairs, percent-decoded (`+` as space), in order.
pub fn query_pairs(q: &str) -> impl Iterator<Item = (String, String)> + '_ {
    q.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(&k.replace('+', " ")), decode(&v.replace('+', " ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses() {
        assert_eq!(code_name(Code::Cancelled), "canceled");
        assert_eq!(http_status(Code::InvalidArgument), StatusCode::BAD_REQUEST);
        assert_eq!(
            http_status(Code::Unimplemented),
            StatusCode::NOT_IMPLEMENTED
        );
        assert_eq!(
            http_status(Code::ResourceExhausted),
            StatusCode::TOO_MANY_REQUESTS
        );
        let j = error_json(&Status::not_found("x"));
        assert_eq!(j, serde_json::json!({"code": "not_found", "message": "x"}));
    }

    #[test]
    fn a_body_that_does_not_fit_names_its_field() {
        let dir = std::env::temp_dir().join(format!("volley-culprit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.proto");
        std::fs::write(
            &file,
            r#"syntax = "proto3";
            message Inner { int32 count = 1; }
            message Outer { string text = 1; Inner inner = 2; repeated string tags = 3; }"#,
        )
        .unwrap();
        let pool = volley_proto::load::compile_proto(&file, std::slice::from_ref(&dir)).unwrap();
        let outer = pool.get_message_by_name("Outer").unwrap();
        let why = |json: &str| {
            json_to_proto(&outer, json.as_bytes())
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert!(
            why(r#"{"text": 1}"#).contains("field text: invalid type"),
            "{}",
            why(r#"{"text": 1}"#)
        );
        let nested = why(r#"{"text": "ok", "inner": {"count": "many"}}"#);
        assert!(nested.contains("field inner.count: "), "{nested}");
        assert!(why(r#"{"nope": 1}"#).contains("field nope: "));
        assert!(why(r#"{"tags": "one"}"#).contains("field tags: "));
        // JSON that does not parse names no field.
        assert!(!why("{").contains("field"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn non_finite_float_and_double_wrappers_are_written_as_proto3_json_strings() {
        let dir = std::env::temp_dir().join(format!("volley-nonfinite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("w.proto");
        std::fs::write(
            &file,
            r#"syntax = "proto3";
            import "google/protobuf/wrappers.proto";
            message W {
              google.protobuf.FloatValue f = 1;
              repeated google.protobuf.DoubleValue ds = 2;
              map<string, google.protobuf.DoubleValue> m = 3;
              W inner = 4;
              float plain = 5;
            }
            message Plain { int32 n = 1; }"#,
        )
        .unwrap();
        let pool = volley_proto::load::compile_proto(&file, std::slice::from_ref(&dir)).unwrap();
        let w = pool.get_message_by_name("W").unwrap();
        assert!(nonfinite::can_hold_wrapper(&w));
        assert!(!nonfinite::can_hold_wrapper(
            &pool.get_message_by_name("Plain").unwrap()
        ));

        let json = br#"{"f": "Infinity", "ds": [1.5, "NaN", "-Infinity"], "m": {"k": "Infinity"},
            "inner": {"f": "-Infinity"}, "plain": "NaN"}"#;
        let wire = json_to_proto(&w, json).unwrap();
        let out: serde_json::Value =
            serde_json::from_slice(&proto_to_json(&w, &wire).unwrap()).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"f": "Infinity", "ds": [1.5, "NaN", "-Infinity"],
                "m": {"k": "Infinity"}, "inner": {"f": "-Infinity"}, "plain": "NaN"})
        );
        // A wrapper as the whole message, too.
        let f = pool
            .get_message_by_name("google.protobuf.FloatValue")
            .unwrap();
        let fw = json_to_proto(&f, b"\"-Infinity\"").unwrap();
        assert_eq!(&proto_to_json(&f, &fw).unwrap()[..], b"\"-Infinity\"");
        // And it reads back as the same message.
        assert_eq!(
            json_to_proto(&w, &serde_json::to_vec(&out).unwrap()).unwrap(),
            wire
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
