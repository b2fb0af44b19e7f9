//! jsonpb's forms for the well-known types and `Any`, which grpcurl's dynamic-message encoder
//! hands to golang/protobuf: RFC 3339 timestamps and `1.500s` durations with 0, 3, 6 or 9
//! fractional digits, wrappers unwrapped, `Struct`/`Value`/`ListValue` as plain JSON with
//! `encoding/json`'s number forms, and an `Any` opened with the schema's types.

use prost_reflect::{
    DescriptorPool, DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};

use super::{JsonFormat, Out, b64, float, map_key_order, map_key_string, unquote};
use volley_proto::gofmt;

impl JsonFormat {
    /// jsonpb's forms for the well-known types jhump hands to it; `None` for other messages.
    pub(super) fn well_known(&self, out: &mut String, msg: &DynamicMessage) -> Option<Out> {
        let desc = msg.descriptor();
        let name = desc.full_name().strip_prefix("google.protobuf.")?;
        let int = |n: u32| msg.get_field_by_number(n).and_then(|v| v.as_i64());
        let int32 = |n: u32| msg.get_field_by_number(n).and_then(|v| v.as_i32());
        match name {
            "Any" => {
                let url = msg.get_field_by_number(1)?.as_str()?.to_owned();
                let bytes = msg.get_field_by_number(2)?.as_bytes()?.clone();
                Some(self.any(out, &url, &bytes))
            }
            "Timestamp" => {
                let nanos = int32(2).unwrap_or(0);
                if !(0..1_000_000_000).contains(&nanos) {
                    return Some(Err("ns out of range [0, 1000000000)".into()));
                }
                out.push('"');
                out.push_str(&gofmt::proto_timestamp(int(1).unwrap_or(0), nanos));
                out.push('"');
                Some(Ok(()))
            }
            "Duration" => {
                out.push('"');
                out.push_str(&gofmt::proto_duration(
                    int(1).unwrap_or(0),
                    int32(2).unwrap_or(0),
                ));
                out.push('"');
                Some(Ok(()))
            }
            "BoolValue" | "BytesValue" | "StringValue" | "Int32Value" | "UInt32Value"
            | "FloatValue" | "Int64Value" | "UInt64Value" | "DoubleValue" => {
                let fd = desc.get_field(1)?;
                Some(jsonpb_scalar(out, &fd.kind(), &msg.get_field(&fd)))
            }
            "Value" | "Struct" | "ListValue" => Some(struct_value(out, msg)),
            _ => None,
        }
    }

    /// jsonpb's `Any`: a known message with `@type` among its sorted keys, a well-known type as
    /// `{"@type", "value"}`, an unknown one as grpcurl's placeholder.
    pub(crate) fn any(&self, out: &mut String, url: &str, bytes: &[u8]) -> Out {
        let name = url.rsplit('/').next().unwrap_or(url);
        let mut url_json = String::new();
        gofmt::json_string(&mut url_json, url);
        let Some(desc) = find_message(&self.pool, name) else {
            let error = format!("{name} is not recognized; see @value for raw binary message data");
            let mut e = String::new();
            gofmt::json_string(&mut e, &error);
            out.push_str(&format!(
                "{{\"@error\":{e},\"@type\":{url_json},\"@value\":\"{}\"}}",
                b64(bytes)
            ));
            return Ok(());
        };
        let msg = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| e.to_string())?;
        if desc.full_name().starts_with("google.protobuf.") && is_jsonpb_wkt(desc.name()) {
            out.push_str("{\"@type\":");
            out.push_str(&url_json);
            out.push_str(",\"value\":");
            self.message(out, &msg)?;
            out.push('}');
            return Ok(());
        }
        let mut pairs = self.pairs(&msg)?;
        pairs.push(("\"@type\"".to_owned(), url_json));
        // Go's map order: keys compared as the strings they are, before escaping.
        pairs.sort_by_key(|p| unquote(&p.0));
        out.push('{');
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push(':');
            out.push_str(v);
        }
        out.push('}');
        Ok(())
    }
}

fn is_jsonpb_wkt(name: &str) -> bool {
    matches!(
        name,
        "Empty"
            | "Any"
            | "BoolValue"
            | "BytesValue"
            | "StringValue"
            | "Int32Value"
            | "UInt32Value"
            | "FloatValue"
            | "Int64Value"
            | "UInt64Value"
            | "DoubleValue"
            | "Duration"
            | "Timestamp"
            | "Struct"
            | "Value"
            | "ListValue"
    )
}

/// A message type from the schema, or a well-known type (grpcurl's binary always knows those).
fn find_message(pool: &DescriptorPool, name: &str) -> Option<MessageDescriptor> {
    pool.get_message_by_name(name)
        .or_else(|| DescriptorPool::global().get_message_by_name(name))
}

/// jsonpb's scalar (wrappers, `Value`): `encoding/json`'s number forms.
fn jsonpb_scalar(out: &mut String, kind: &Kind, v: &Value) -> Out {
    match v {
        Value::F32(f) => float(out, f64::from(*f), || {
            gofmt::json_float(f64::from(*f), true)
        }),
        Value::F64(f) => float(out, *f, || gofmt::json_float(*f, false)),
        Value::Bytes(b) => gofmt::json_string(out, &b64(b)),
        other => {
            let plain = JsonFormat {
                emit_defaults: false,
                pool: DescriptorPool::new(),
            };
            plain.scalar_or_message(out, kind, other)?;
        }
    }
    Ok(())
}

/// `google.protobuf.Struct`, `Value` and `ListValue` as the JSON they stand for.
fn struct_value(out: &mut String, msg: &DynamicMessage) -> Out {
    match msg.descriptor().name() {
        "Struct" => {
            let empty = std::collections::HashMap::new();
            let field = msg.get_field_by_number(1);
            let map = field.as_deref().and_then(Value::as_map).unwrap_or(&empty);
            let mut keys: Vec<&MapKey> = map.keys().collect();
            keys.sort_by(|a, b| map_key_order(a, b));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                gofmt::json_string(out, &map_key_string(k));
                out.push(':');
                nested_value(out, &map[k])?;
            }
            out.push('}');
            Ok(())
        }
        "ListValue" => {
            let field = msg.get_field_by_number(1);
            out.push('[');
            for (i, v) in field
                .as_deref()
                .and_then(Value::as_list)
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                if i > 0 {
                    out.push(',');
                }
                nested_value(out, v)?;
            }
            out.push(']');
            Ok(())
        }
        _ => {
            let Some(which) = msg.descriptor().oneofs().next() else {
                return Err("nil Value".into());
            };
            let Some(fd) = which.fields().find(|f| msg.has_field(f)) else {
                return Err("nil Value".into());
            };
            match fd.number() {
                1 => out.push_str("null"),
                4 => out.push_str(if msg.get_field(&fd).as_bool() == Some(true) {
                    "true"
                } else {
                    "false"
                }),
                5 | 6 => nested_value(out, &msg.get_field(&fd))?,
                _ => jsonpb_scalar(out, &fd.kind(), &msg.get_field(&fd))?,
            }
            Ok(())
        }
    }
}

fn nested_value(out: &mut String, v: &Value) -> Out {
    match v {
        Value::Message(m) => struct_value(out, m),
        _ => Err("a Struct holds Values".into()),
    }
}
