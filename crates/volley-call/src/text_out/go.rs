//! golang/protobuf's text printer (compact `a:1 b:<c:2 > ` or indented, fields in declaration
//! order, `Any` opened for well-known types) and what both text printers share: scalars, Go's
//! octal-escaped strings, sorted map keys.

use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage, Value,
};

use volley_proto::gofmt;

use crate::json_out;

/// golang/protobuf's text printer, compact (`a:1 b:<c:2 > `) or indented.
pub(crate) struct GoText {
    compact: bool,
    pub(crate) depth: usize,
    pub(crate) buf: String,
}

impl GoText {
    pub(crate) fn new(compact: bool) -> GoText {
        GoText {
            compact,
            depth: 0,
            buf: String::new(),
        }
    }

    /// Starts a field's line: indentation (indented form), its name, `:` and a space.
    fn name(&mut self, name: &str, colon: bool) {
        if !self.compact && (self.buf.is_empty() || self.buf.ends_with('\n')) {
            for _ in 0..self.depth {
                self.buf.push_str("  ");
            }
        }
        self.buf.push_str(name);
        if colon {
            self.buf.push(':');
        }
        if !self.compact {
            self.buf.push(' ');
        }
    }

    fn end_line(&mut self) {
        self.buf.push(if self.compact { ' ' } else { '\n' });
    }

    pub(crate) fn message(&mut self, msg: &DynamicMessage, expand_any: bool) {
        let desc = msg.descriptor();
        if expand_any && desc.full_name() == "google.protobuf.Any" {
            let url = msg
                .get_field_by_number(1)
                .and_then(|v| v.as_str().map(str::to_owned));
            let value = msg
                .get_field_by_number(2)
                .and_then(|v| v.as_bytes().cloned());
            if let (Some(url), Some(value)) = (url, value) {
                self.any(&url, &value);
                return;
            }
        }
        for fd in desc.fields().filter(|f| msg.has_field(f)) {
            let value = msg.get_field(&fd);
            match (&*value, fd.kind()) {
                (Value::Map(map), Kind::Message(entry)) => {
                    let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
                    for k in sorted_keys(map) {
                        self.name(fd.name(), true);
                        self.open('<');
                        self.name(kf.name(), true);
                        self.value(&kf, &k.clone().into());
                        self.end_line();
                        self.name(vf.name(), true);
                        self.value(&vf, &map[k]);
                        self.end_line();
                        self.close('>');
                        self.end_line();
                    }
                }
                (Value::List(items), _) => {
                    for item in items {
                        self.name(fd.name(), !fd.is_group());
                        self.value(&fd, item);
                        self.end_line();
                    }
                }
                (v, _) => {
                    self.name(fd.name(), !fd.is_group());
                    self.value(&fd, v);
                    self.end_line();
                }
            }
        }
    }

    fn open(&mut self, bra: char) {
        self.buf.push(bra);
        if !self.compact {
            self.buf.push('\n');
        }
        self.depth += 1;
    }

    fn close(&mut self, ket: char) {
        self.depth -= 1;
        if !self.compact {
            for _ in 0..self.depth {
                self.buf.push_str("  ");
            }
        }
        self.buf.push(ket);
    }

    fn value(&mut self, fd: &FieldDescriptor, v: &Value) {
        match v {
            Value::Message(m) => {
                let (bra, ket) = if fd.is_group() {
                    ('{', '}')
                } else {
                    ('<', '>')
                };
                self.open(bra);
                self.message(m, false);
                self.close(ket);
            }
            Value::F32(f) => self
                .buf
                .push_str(&text_float(f64::from(*f), || gofmt::format_g32(*f))),
            Value::F64(f) => self.buf.push_str(&text_float(*f, || gofmt::format_g(*f))),
            other => scalar(&mut self.buf, &fd.kind(), other),
        }
    }

    /// An `Any`: `[url]: <...>` when the type is a well-known one (the registry grpcurl's
    /// binary has), else its two fields.
    pub(crate) fn any(&mut self, url: &str, value: &[u8]) {
        let name = url.rsplit('/').next().unwrap_or(url);
        let known = name
            .strip_prefix("google.protobuf.")
            .and_then(|_| DescriptorPool::global().get_message_by_name(name))
            .and_then(|d| DynamicMessage::decode(d, value).ok());
        match known {
            Some(m) => {
                self.name(&format!("[{url}]"), true);
                self.open('<');
                self.message(&m, false);
                self.close('>');
                self.end_line();
            }
            None => {
                self.name("type_url", true);
                quote(&mut self.buf, url.as_bytes());
                self.end_line();
                self.name("value", true);
                quote(&mut self.buf, value);
                self.end_line();
            }
        }
    }
}

pub(crate) fn sorted_keys(map: &std::collections::HashMap<MapKey, Value>) -> Vec<&MapKey> {
    let mut keys: Vec<&MapKey> = map.keys().collect();
    keys.sort_by(|a, b| match (a, b) {
        (MapKey::String(x), MapKey::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => json_out::map_key_string(a)
            .parse::<i128>()
            .ok()
            .cmp(&json_out::map_key_string(b).parse::<i128>().ok())
            .then_with(|| json_out::map_key_string(a).cmp(&json_out::map_key_string(b))),
    });
    keys
}

pub(crate) fn text_float(f: f64, finite: impl FnOnce() -> String) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        finite()
    }
}

/// Integers, enums, bools, strings and bytes: the same in both printers.
pub(crate) fn scalar(out: &mut String, kind: &Kind, v: &Value) {
    match v {
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => out.push_str(ev.name()),
                None => out.push_str(&n.to_string()),
            },
            _ => out.push_str(&n.to_string()),
        },
        Value::I32(n) => out.push_str(&n.to_string()),
        Value::I64(n) => out.push_str(&n.to_string()),
        Value::U32(n) => out.push_str(&n.to_string()),
        Value::U64(n) => out.push_str(&n.to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => quote(out, s.as_bytes()),
        Value::Bytes(b) => quote(out, b),
        Value::F32(f) => out.push_str(&gofmt::format_g32(*f)),
        Value::F64(f) => out.push_str(&gofmt::format_g(*f)),
        Value::Message(_) | Value::List(_) | Value::Map(_) => {}
    }
}

/// A text-format string: C escapes, every byte outside printable ASCII in three-digit octal.
pub(crate) fn quote(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &c in bytes {
        match c {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..0x7f => out.push(c as char),
            _ => out.push_str(&format!("\\{c:03o}")),
        }
    }
    out.push('"');
}
