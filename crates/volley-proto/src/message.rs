//! Request payloads: JSON (an object, or an array of them) or binary protobuf, checked against a
//! method's input type and encoded once.

use bytes::Bytes;
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor};

/// Why data did not fit the message.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// JSON that is not JSON, or that does not fit the type (the message names the field).
    #[error("data does not fit {ty}: {problem}")]
    Json {
        /// The message type.
        ty: String,
        /// serde's or prost-reflect's words (field name, line and column).
        problem: String,
    },
    /// Binary data that is not the message.
    #[error("binary data is not a {ty}: {problem}")]
    Binary {
        /// The message type.
        ty: String,
        /// prost's words.
        problem: String,
    },
}

/// Parses JSON into messages of type `desc`: an object gives one, an array one per element.
pub fn from_json(desc: &MessageDescriptor, json: &str) -> Result<Vec<DynamicMessage>, DataError> {
    let err = |problem: String| DataError::Json {
        ty: desc.full_name().to_owned(),
        problem,
    };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| err(format!("invalid JSON: {e}")))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        other => vec![other],
    };
    let opts = DeserializeOptions::new().deny_unknown_fields(true);
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            DynamicMessage::deserialize_with_options(desc.clone(), v, &opts).map_err(|e| {
                if i == 0 {
                    err(e.to_string())
                } else {
                    err(format!("element {i}: {e}"))
                }
            })
        })
        .collect()
}

/// Encodes messages into their wire bytes.
pub fn encode_all(msgs: &[DynamicMessage]) -> Vec<Bytes> {
    msgs.iter()
        .map(|m| Bytes::from(m.encode_to_vec()))
        .collect()
}

/// Reads binary data as ghz does: a sequence of varint-length-delimited messages if it parses as
/// one, otherwise a single message.
pub fn from_binary(desc: &MessageDescriptor, data: &[u8]) -> Result<Vec<Bytes>, DataError> {
    if let Some(msgs) = delimited(desc, data) {
        return Ok(msgs);
    }
    DynamicMessage::decode(desc.clone(), data).map_err(|e| DataError::Binary {
        ty: desc.full_name().to_owned(),
        problem: e.to_string(),
    })?;
    Ok(vec![Bytes::copy_from_slice(data)])
}

fn delimited(desc: &MessageDescriptor, mut data: &[u8]) -> Option<Vec<Bytes>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let len = prost::encoding::decode_varint(&mut data).ok()? as usize;
        if len > data.len() {
            return None;
        }
        let (msg, rest) = data.split_at(len);
        DynamicMessage::decode(desc.clone(), msg).ok()?;
        out.push(Bytes::copy_from_slice(msg));
        data = rest;
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load::compile_proto, schema::resolve};
    use std::path::Path;

    fn users_get() -> MessageDescriptor {
        let pool = compile_proto(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto/api/users.proto"),
            &[],
        )
        .unwrap();
        resolve(&pool, "api.Users/Get").unwrap().descriptor.input()
    }

    #[test]
    fn objects_and_arrays() {
        let d = users_get();
        let one = from_json(&d, r#"{"id": 228}"#).unwrap();
        assert_eq!(
            encode_all(&one),
            vec![Bytes::from_static(&[0x08, 0xe4, 0x01])]
        );
        let many = from_json(&d, r#"[{"id": 1}, {"id": "2"}, {}]"#).unwrap();
        assert_eq!(many.len(), 3);
    }

    #[test]
    fn misfits_name_the_field() {
        let d = users_get();
        let e = from_json(&d, r#"{"idx": 1}"#).unwrap_err().to_string();
        assert!(
            e.starts_with("data does not fit api.GetUserRequest:"),
            "{e}"
        );
        assert!(e.contains("idx"), "{e}");
        let e = from_json(&d, r#"{"id": "abc"}"#).unwrap_err().to_string();
        assert!(e.contains("api.GetUserRequest"), "{e}");
        let e = from_json(&d, r#"[{"id": 1}, {"id": true}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("element 1"), "{e}");
        let e = from_json(&d, "{").unwrap_err().to_string();
        assert!(e.contains("invalid JSON"), "{e}");
    }

    #[test]
    fn binary_single_and_delimited() {
        let d = users_get();
        let one = [0x08, 0xe4, 0x01];
        assert_eq!(from_binary(&d, &one).unwrap().len(), 1);
        let two = [3, 0x08, 0xe4, 0x01, 2, 0x08, 0x05];
        assert_eq!(from_binary(&d, &two).unwrap().len(), 2);
        assert!(from_binary(&d, &[0xff, 0xff]).is_err());
    }
}
