//! Mends what prost-reflect (0.16) writes for a `google.protobuf.FloatValue` or `DoubleValue`
//! holding infinity or NaN: JSON `null` (its wrappers' serializer skips the check its plain
//! floats have), which reads back as an unset field instead of the number. Found by the
//! `json_message` fuzz target (a FloatValue of `"2222…2"`, past f32's range). proto3's JSON
//! mapping writes them as the strings `"Infinity"`, `"-Infinity"` and `"NaN"`, as here.
//!
//! Only replies whose type can hold such a wrapper are walked (one look at the descriptor, and
//! its message fields', per reply); the others are written as before.

use prost_reflect::{DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage, Value};

const FLOAT: &str = "google.protobuf.FloatValue";
const DOUBLE: &str = "google.protobuf.DoubleValue";

/// Whether a message of type `desc` is or can hold a FloatValue or DoubleValue, at any depth.
/// Asked once per JSON reply: a type with no message field answers without allocating; the
/// types already walked are compared as descriptors (an index into their pool), not by name.
pub(super) fn can_hold_wrapper(desc: &MessageDescriptor) -> bool {
    fn walk(desc: &MessageDescriptor, seen: &mut Vec<MessageDescriptor>) -> bool {
        if matches!(desc.full_name(), FLOAT | DOUBLE) {
            return true;
        }
        if seen.contains(desc) {
            return false;
        }
        seen.push(desc.clone());
        desc.fields().any(|f| match f.kind() {
            Kind::Message(m) => walk(&m, seen),
            _ => false,
        })
    }
    let has_messages = desc.fields().any(|f| matches!(f.kind(), Kind::Message(_)));
    matches!(desc.full_name(), FLOAT | DOUBLE) || has_messages && walk(desc, &mut Vec::new())
}

/// Puts the proto3 JSON string of each non-finite FloatValue or DoubleValue of `msg` (or `msg`
/// itself, when it is one) where prost-reflect wrote `null` in `json`, its JSON.
pub(super) fn mend(msg: &DynamicMessage, json: &mut serde_json::Value) {
    if matches!(msg.descriptor().full_name(), FLOAT | DOUBLE) {
        let x = match msg.get_field_by_number(1).as_deref() {
            Some(Value::F32(x)) => f64::from(*x),
            Some(Value::F64(x)) => *x,
            _ => return,
        };
        if json.is_null() && !x.is_finite() {
            let name = if x.is_nan() {
                "NaN"
            } else if x > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            *json = serde_json::Value::String(name.into());
        }
        return;
    }
    let serde_json::Value::Object(obj) = json else {
        return;
    };
    for (field, value) in msg.fields() {
        if let Some(slot) = obj.get_mut(field.json_name()) {
            mend_value(value, slot);
        }
    }
}

fn mend_value(value: &Value, slot: &mut serde_json::Value) {
    match value {
        Value::Message(m) => mend(m, slot),
        Value::List(items) => {
            if let serde_json::Value::Array(out) = slot {
                for (v, s) in items.iter().zip(out) {
                    mend_value(v, s);
                }
            }
        }
        Value::Map(map) => {
            if let serde_json::Value::Object(out) = slot {
                for (k, v) in map {
                    if let Some(s) = out.get_mut(&key_text(k)) {
                        mend_value(v, s);
                    }
                }
            }
        }
        _ => {}
    }
}

/// A map key as proto3's JSON writes it: always a string.
fn key_text(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}
