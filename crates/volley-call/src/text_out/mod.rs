//! Messages in the protobuf text format as grpcurl prints them (`-format text`), byte for byte:
//! written by hand because grpcurl's bytes come from two Go printers no crate reproduces. A
//! response is jhump's dynamic-message printer (fields in number order, `name: <` ... `>` with
//! two-space indents, no final newline); the well-known types inside one, a well-known response
//! and status details go through golang/protobuf's printer (compact inside a message:
//! `ts: <\n  seconds:10 \n>`, fields in declaration order).

mod go;

use std::cell::Cell;

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, ReflectMessage, Value};

use go::{GoText, scalar, sorted_keys, text_float};
use volley_proto::gofmt;

pub(crate) use go::quote;

/// The text printer. Without `-v`, every message after the first starts with the record
/// separator 0x1E, so output can be piped into another grpcurl; the count covers status
/// details too, as grpcurl's does.
#[derive(Debug, Default)]
pub(crate) struct TextFormat {
    /// Start later messages with 0x1E.
    pub separators: bool,
    printed: Cell<usize>,
}

impl TextFormat {
    /// A printer; `separators` as grpcurl's `-v`-less output has them.
    pub(crate) fn new(separators: bool) -> TextFormat {
        TextFormat {
            separators,
            printed: Cell::new(0),
        }
    }

    fn prefix(&self) -> String {
        let n = self.printed.replace(self.printed.get() + 1);
        if self.separators && n > 0 {
            "\u{1e}".into()
        } else {
            String::new()
        }
    }

    /// A response message (no trailing newline).
    pub(crate) fn format(&self, msg: &DynamicMessage) -> String {
        let mut out = self.prefix();
        if msg.descriptor().full_name().starts_with("google.protobuf.") {
            let mut w = GoText::new(false);
            w.message(msg, true);
            out.push_str(&w.buf);
        } else {
            let mut b = Dyn { out, depth: 0 };
            b.message(msg);
            out = b.out;
        }
        trim_newline(out)
    }

    /// A status detail: golang/protobuf's printer, opening `Any`s of well-known types.
    pub(crate) fn format_any(&self, type_url: &str, value: &[u8]) -> String {
        let mut w = GoText::new(false);
        w.any(type_url, value);
        trim_newline(self.prefix() + &w.buf)
    }

    /// `google.rpc.Status` for `-format-error`.
    pub(crate) fn format_status(
        &self,
        code: i32,
        message: &str,
        details: &[prost_types::Any],
    ) -> String {
        let mut w = GoText::new(false);
        if code != 0 {
            w.buf.push_str(&format!("code: {code}\n"));
        }
        if !message.is_empty() {
            w.buf.push_str("message: ");
            quote(&mut w.buf, message.as_bytes());
            w.buf.push('\n');
        }
        for d in details {
            w.buf.push_str("details: <\n");
            w.depth += 1;
            w.any(&d.type_url, &d.value);
            w.depth -= 1;
            w.buf.push_str(">\n");
        }
        trim_newline(self.prefix() + &w.buf)
    }
}

fn trim_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

/// jhump's dynamic-message text printer (its `indentBuffer` with a two-space indent).
struct Dyn {
    out: String,
    depth: usize,
}

impl Dyn {
    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
    }

    fn message(&mut self, msg: &DynamicMessage) {
        let mut fields: Vec<FieldDescriptor> = msg
            .descriptor()
            .fields()
            .filter(|f| msg.has_field(f))
            .collect();
        fields.sort_by_key(FieldDescriptor::number);
        let mut first = true;
        let mut next = |this: &mut Dyn| {
            if !std::mem::take(&mut first) {
                this.newline();
            }
        };
        for fd in fields {
            let value = msg.get_field(&fd);
            match (&*value, fd.kind()) {
                (Value::Map(map), Kind::Message(entry)) => {
                    let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
                    for k in sorted_keys(map) {
                        next(self);
                        self.out.push_str(fd.name());
                        self.out.push_str(": <");
                        self.depth += 1;
                        self.newline();
                        self.field(&kf, &k.clone().into());
                        self.newline();
                        self.field(&vf, &map[k]);
                        self.depth -= 1;
                        self.newline();
                        self.out.push('>');
                    }
                }
                (Value::List(items), _) => {
                    for item in items {
                        next(self);
                        self.field(&fd, item);
                    }
                }
                (v, _) => {
                    next(self);
                    self.field(&fd, v);
                }
            }
        }
    }

    fn field(&mut self, fd: &FieldDescriptor, v: &Value) {
        let group = fd.is_group();
        match (&fd.kind(), group) {
            (Kind::Message(m), true) => self.out.push_str(m.name()),
            _ => {
                self.out.push_str(fd.name());
                self.out.push_str(": ");
            }
        }
        match v {
            Value::Message(m) => {
                let (open, close) = if group { ('{', '}') } else { ('<', '>') };
                self.out.push(open);
                self.depth += 1;
                self.newline();
                if m.descriptor().full_name().starts_with("google.protobuf.") {
                    // proto.CompactText: `Any`s stay as their two fields.
                    let mut w = GoText::new(true);
                    w.message(m, false);
                    self.out.push_str(&w.buf);
                } else {
                    self.message(m);
                }
                self.depth -= 1;
                self.newline();
                self.out.push(close);
            }
            Value::F32(f) => self
                .out
                .push_str(&text_float(f64::from(*f), || gofmt::format_g32(*f))),
            Value::F64(f) => self.out.push_str(&text_float(*f, || gofmt::format_g(*f))),
            other => scalar(&mut self.out, &fd.kind(), other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go() {
        let mut s = String::new();
        quote(&mut s, "é\n\u{1}\"x".as_bytes());
        assert_eq!(s, r#""\303\251\n\001\"x""#);
        s.clear();
        quote(&mut s, &[0, 0xff]);
        assert_eq!(s, r#""\000\377""#);
    }

    #[test]
    fn floats_as_go_print() {
        // fmt.Println(1e6, 1e20, 0.5) prints `1e+06 1e+20 0.5`.
        assert_eq!(text_float(1e6, || gofmt::format_g(1e6)), "1e+06");
        assert_eq!(text_float(1e20, || gofmt::format_g(1e20)), "1e+20");
        assert_eq!(text_float(f64::NAN, || unreachable!()), "nan");
        assert_eq!(text_float(f64::NEG_INFINITY, || unreachable!()), "-inf");
    }

    /// A reflection reply (nested messages, a repeated message field, a string), decoded from
    /// the framework's own descriptors.
    fn reply(json: &str) -> DynamicMessage {
        let pool =
            prost_reflect::DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        let desc = pool
            .get_message_by_name("grpc.reflection.v1.ServerReflectionResponse")
            .unwrap();
        DynamicMessage::deserialize(desc, &mut serde_json::Deserializer::from_str(json)).unwrap()
    }

    #[test]
    fn dynamic_messages_as_jhumps_printer() {
        let m = reply(
            r#"{"validHost":"h","listServicesResponse":{"service":[{"name":"a"},{"name":"b"}]}}"#,
        );
        let expected = "valid_host: \"h\"\nlist_services_response: <\n  service: <\n    name: \"a\"\n  >\n  service: <\n    name: \"b\"\n  >\n>";
        let t = TextFormat::new(true);
        assert_eq!(t.format(&m), expected);
        // Every message after the first starts with the record separator (not with -v).
        assert_eq!(t.format(&m), format!("\u{1e}{expected}"));
        assert_eq!(TextFormat::new(false).format(&reply("{}")), "");
    }

    #[test]
    fn details_as_golang_protobufs_printer() {
        let t = TextFormat::new(false);
        assert_eq!(
            t.format_any("type.googleapis.com/google.rpc.ErrorInfo", b"\n\x01R"),
            "type_url: \"type.googleapis.com/google.rpc.ErrorInfo\"\nvalue: \"\\n\\001R\""
        );
        assert_eq!(
            t.format_status(3, "fail", &[]),
            "code: 3\nmessage: \"fail\""
        );
    }
}
