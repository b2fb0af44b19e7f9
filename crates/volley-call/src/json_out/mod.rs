//! Messages as grpcurl prints them in JSON, byte for byte: written by hand because no crate
//! spells Go's forms (jhump's dynamic-message encoder for the message, golang/protobuf's jsonpb
//! for well-known types and `Any`, then `json.Indent` with two spaces).
//!
//! What that means: keys are each field's `json_name` (the proto name when a descriptor has
//! none), in field-number order; 64-bit integers are quoted; floats are Go's shortest `'g'` form
//! (`1e+06`); strings are HTML-escaped; map keys sorted; unknown enum numbers bare; with
//! `-emit-defaults`, unset fields print their default, an unset message `null`, but fields of a
//! oneof (and proto3 `optional` ones) never. Inside an `Any`, a message of a known type prints
//! with its keys sorted (Go re-marshals it through a map), an unknown one as
//! `{"@error", "@type", "@value"}`.

mod wkt;

use base64::Engine as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value,
};

use volley_proto::gofmt;

/// The JSON printer's options and the types it can open an `Any` with.
#[derive(Clone, Debug)]
pub(crate) struct JsonFormat {
    /// `-emit-defaults`.
    pub emit_defaults: bool,
    /// Message types an `Any` may hold (the schema's; well-known types are always known).
    pub pool: DescriptorPool,
}

type Out = Result<(), String>;

impl JsonFormat {
    /// A message as grpcurl prints it (indented, no trailing newline).
    pub(crate) fn format(&self, msg: &DynamicMessage) -> Result<String, String> {
        let mut compact = String::new();
        self.message(&mut compact, msg)?;
        Ok(indent(&compact))
    }

    /// An `Any` (a status detail) as grpcurl prints it.
    pub(crate) fn format_any(&self, type_url: &str, value: &[u8]) -> Result<String, String> {
        let mut compact = String::new();
        self.any(&mut compact, type_url, value)?;
        Ok(indent(&compact))
    }

    /// Compact JSON of a message: a well-known type in jsonpb's form, else jhump's.
    pub(crate) fn message(&self, out: &mut String, msg: &DynamicMessage) -> Out {
        if let Some(done) = self.well_known(out, msg) {
            return done;
        }
        out.push('{');
        for (i, (key, value)) in self.pairs(msg)?.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(key);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        Ok(())
    }

    /// A dynamic message's fields as (quoted key, compact value), in field-number order.
    pub(super) fn pairs(&self, msg: &DynamicMessage) -> Result<Vec<(String, String)>, String> {
        let desc = msg.descriptor();
        let mut fields: Vec<FieldDescriptor> = desc.fields().collect();
        fields.sort_by_key(FieldDescriptor::number);
        let mut pairs = Vec::new();
        for fd in fields {
            let present = msg.has_field(&fd);
            if !present && (!self.emit_defaults || fd.containing_oneof().is_some()) {
                continue;
            }
            let mut key = String::new();
            gofmt::json_string(&mut key, &json_name(&fd));
            let mut value = String::new();
            if !present && fd.is_list() {
                value.push_str("[]");
            } else if !present && fd.is_map() {
                value.push_str("{}");
            } else if !present && matches!(fd.kind(), Kind::Message(_)) {
                value.push_str("null");
            } else {
                self.field(&mut value, &fd, &msg.get_field(&fd))?;
            }
            pairs.push((key, value));
        }
        for (ext, v) in msg.extensions() {
            let scope = match ext.parent_message() {
                Some(m) => m.full_name().to_owned(),
                None => ext.parent_file().package_name().to_owned(),
            };
            let name = if scope.is_empty() {
                format!("[{}]", ext.json_name())
            } else {
                format!("[{scope}.{}]", ext.json_name())
            };
            let mut key = String::new();
            gofmt::json_string(&mut key, &name);
            let mut value = String::new();
            self.value(&mut value, &ext.kind(), ext.is_list(), v)?;
            pairs.push((key, value));
        }
        Ok(pairs)
    }

    fn field(&self, out: &mut String, fd: &FieldDescriptor, v: &Value) -> Out {
        if let (true, Value::Map(map), Kind::Message(entry)) = (fd.is_map(), v, fd.kind()) {
            let value_kind = entry.map_entry_value_field().kind();
            let mut keys: Vec<&MapKey> = map.keys().collect();
            keys.sort_by(|a, b| map_key_order(a, b));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                gofmt::json_string(out, &map_key_string(k));
                out.push(':');
                self.scalar_or_message(out, &value_kind, &map[k])?;
            }
            out.push('}');
            return Ok(());
        }
        self.value(out, &fd.kind(), fd.is_list(), v)
    }

    fn value(&self, out: &mut String, kind: &Kind, list: bool, v: &Value) -> Out {
        match (list, v) {
            (true, Value::List(items)) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.scalar_or_message(out, kind, item)?;
                }
                out.push(']');
                Ok(())
            }
            _ => self.scalar_or_message(out, kind, v),
        }
    }

    /// One value in jhump's forms.
    pub(super) fn scalar_or_message(&self, out: &mut String, kind: &Kind, v: &Value) -> Out {
        match v {
            Value::I64(n) => gofmt::json_string(out, &n.to_string()),
            Value::U64(n) => gofmt::json_string(out, &n.to_string()),
            Value::I32(n) => out.push_str(&n.to_string()),
            Value::U32(n) => out.push_str(&n.to_string()),
            Value::EnumNumber(n) => match kind {
                Kind::Enum(e) => match e.get_value(*n) {
                    Some(ev) => gofmt::json_string(out, ev.name()),
                    None => out.push_str(&n.to_string()),
                },
                _ => out.push_str(&n.to_string()),
            },
            Value::F32(f) => float(out, f64::from(*f), || gofmt::format_g32(*f)),
            Value::F64(f) => float(out, *f, || gofmt::format_g(*f)),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::String(s) => gofmt::json_string(out, s),
            Value::Bytes(b) => gofmt::json_string(out, &b64(b)),
            Value::Message(m) => self.message(out, m)?,
            Value::List(_) | Value::Map(_) => return Err("a list where a value belongs".into()),
        }
        Ok(())
    }
}

/// A field's JSON key as jhump reads it: the descriptor's `json_name`, else its proto name.
fn json_name(fd: &FieldDescriptor) -> String {
    match &fd.field_descriptor_proto().json_name {
        Some(n) if !n.is_empty() => n.clone(),
        _ => fd.name().to_owned(),
    }
}

fn unquote(key: &str) -> String {
    serde_json::from_str(key).unwrap_or_else(|_| key.to_owned())
}

fn float(out: &mut String, f: f64, finite: impl FnOnce() -> String) {
    if f.is_nan() {
        out.push_str("\"NaN\"");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        out.push_str(&finite());
    }
}

fn map_key_order(a: &MapKey, b: &MapKey) -> std::cmp::Ordering {
    match (a, b) {
        (MapKey::Bool(x), MapKey::Bool(y)) => x.cmp(y),
        (MapKey::I32(x), MapKey::I32(y)) => x.cmp(y),
        (MapKey::I64(x), MapKey::I64(y)) => x.cmp(y),
        (MapKey::U32(x), MapKey::U32(y)) => x.cmp(y),
        (MapKey::U64(x), MapKey::U64(y)) => x.cmp(y),
        (MapKey::String(x), MapKey::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => std::cmp::Ordering::Equal,
    }
}

pub(crate) fn map_key_string(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

pub(crate) fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Go's `json.Indent(dst, src, "", "  ")` over compact JSON: one value or key per line, empty
/// objects and arrays kept as `{}` and `[]`.
pub(crate) fn indent(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = compact.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    out.push(chars.next().expect("peeked"));
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indents_as_go() {
        assert_eq!(indent("{}"), "{}");
        assert_eq!(
            indent(r#"{"a":[],"b":{"c":"x,:{"},"d":[1,2]}"#),
            "{\n  \"a\": [],\n  \"b\": {\n    \"c\": \"x,:{\"\n  },\n  \"d\": [\n    1,\n    2\n  ]\n}"
        );
    }

    fn health(json: &str) -> DynamicMessage {
        let pool = DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        let desc = pool
            .get_message_by_name("grpc.health.v1.HealthCheckResponse")
            .unwrap();
        DynamicMessage::deserialize(desc, &mut serde_json::Deserializer::from_str(json)).unwrap()
    }

    #[test]
    fn proto3_defaults_and_enums() {
        let plain = JsonFormat {
            emit_defaults: false,
            pool: DescriptorPool::new(),
        };
        let defaults = JsonFormat {
            emit_defaults: true,
            ..plain.clone()
        };
        assert_eq!(plain.format(&health("{}")).unwrap(), "{}");
        assert_eq!(
            defaults.format(&health("{}")).unwrap(),
            "{\n  \"status\": \"UNKNOWN\"\n}"
        );
        assert_eq!(
            plain.format(&health(r#"{"status":"SERVING"}"#)).unwrap(),
            "{\n  \"status\": \"SERVING\"\n}"
        );
        // An enum number the enum does not name prints bare.
        assert_eq!(
            plain.format(&health(r#"{"status":7}"#)).unwrap(),
            "{\n  \"status\": 7\n}"
        );
    }
}
