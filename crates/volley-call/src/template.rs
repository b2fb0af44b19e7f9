//! `-msg-template`: grpcurl's template of a message for `describe`, every nested message filled
//! in (once per type on a path, against recursion), one element in each repeated field and map,
//! and placeholders for `Any`, `Struct`, `Value` and `ListValue`; printed with defaults shown.

use std::collections::HashMap;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MapKey, MessageDescriptor, Value};

/// The template of `md`.
pub(crate) fn make(md: &MessageDescriptor) -> DynamicMessage {
    build(md, &mut Vec::new())
}

fn build(md: &MessageDescriptor, path: &mut Vec<String>) -> DynamicMessage {
    if let Some(m) = placeholder(md) {
        return m;
    }
    let mut dm = DynamicMessage::new(md.clone());
    if path.iter().any(|p| p == md.full_name()) {
        return dm;
    }
    path.push(md.full_name().to_owned());
    for fd in md.fields() {
        let kind = fd.kind();
        if fd.is_map() {
            let Kind::Message(entry) = kind else { continue };
            let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            let key = Value::default_value(&kf.kind())
                .into_map_key()
                .unwrap_or(MapKey::I32(0));
            let value = element(&vf.kind(), path);
            fd_set(&mut dm, &fd, Value::Map(HashMap::from([(key, value)])));
        } else if fd.is_list() {
            let v = element(&kind, path);
            fd_set(&mut dm, &fd, Value::List(vec![v]));
        } else if let Kind::Message(m) = kind {
            fd_set(&mut dm, &fd, Value::Message(build(&m, path)));
        }
    }
    path.pop();
    dm
}

fn fd_set(dm: &mut DynamicMessage, fd: &prost_reflect::FieldDescriptor, v: Value) {
    dm.set_field(fd, v);
}

fn element(kind: &Kind, path: &mut Vec<String>) -> Value {
    match kind {
        Kind::Message(m) => Value::Message(build(m, path)),
        other => Value::default_value(other),
    }
}

/// grpcurl's stand-ins for the well-known types JSON cannot show empty.
fn placeholder(md: &MessageDescriptor) -> Option<DynamicMessage> {
    let struct_of =
        |key: &str, text: &str| -> serde_json::Value { serde_json::json!({ key: text }) };
    let json = match md.full_name() {
        "google.protobuf.Any" => {
            let empty = DescriptorPool::global().get_message_by_name("google.protobuf.Empty")?;
            let mut any = DynamicMessage::new(md.clone());
            any.set_field_by_number(
                1,
                Value::String("type.googleapis.com/google.protobuf.Empty".into()),
            );
            any.set_field_by_number(
                2,
                Value::Bytes(DynamicMessage::new(empty).encode_to_vec().into()),
            );
            return Some(any);
        }
        "google.protobuf.Value" => struct_of("google.protobuf.Value", "supports arbitrary JSON"),
        "google.protobuf.ListValue" => serde_json::json!([struct_of(
            "google.protobuf.ListValue",
            "is an array of arbitrary JSON values"
        )]),
        "google.protobuf.Struct" => {
            struct_of("google.protobuf.Struct", "supports arbitrary JSON objects")
        }
        _ => return None,
    };
    DynamicMessage::deserialize(md.clone(), json).ok()
}
