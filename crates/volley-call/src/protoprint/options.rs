//! Options as protoprint writes them: `name = value` from a descriptor's options message, sorted
//! by name with custom options (`(.pkg.ext)`) last, values in its forms (`%d`, Go's `%f`,
//! quoted strings, enum names, `{ a: 1 }` message literals), plus a field's `default` and
//! `json_name` pseudo-options.

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, Value};

/// One option: its name as written and its value as source text.
#[derive(Clone, Debug)]
pub(crate) struct Opt {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// The options set in `opts` (a `*Options` message), sorted as protoprint sorts them.
pub(crate) fn options_of(opts: &DynamicMessage) -> Vec<Opt> {
    let mut out = Vec::new();
    for (fd, v) in opts.fields() {
        if fd.number() == 999 {
            continue; // uninterpreted_option: never left once a file is linked
        }
        push_values(&mut out, fd.name().to_owned(), &fd.kind(), v);
    }
    for (ext, v) in opts.extensions() {
        push_values(&mut out, format!("(.{})", ext.full_name()), &ext.kind(), v);
    }
    sort(&mut out);
    out
}

/// A field's options with its `default` (proto2) and `json_name` (when not the derived one).
pub(crate) fn field_options(fd: &FieldDescriptor) -> Vec<Opt> {
    let mut out = options_of(&fd.options());
    let proto = fd.field_descriptor_proto();
    if fd.supports_presence() && proto.default_value.is_some() {
        let mut value = String::new();
        literal(&mut value, &fd.kind(), &fd.default_value());
        out.push(Opt {
            name: "default".into(),
            value,
        });
    }
    if let Some(j) = &proto.json_name
        && !j.is_empty()
        && *j != protoc_json_name(fd.name())
    {
        out.push(Opt {
            name: "json_name".into(),
            value: quoted_string(j),
        });
    }
    sort(&mut out);
    out
}

fn sort(opts: &mut [Opt]) {
    opts.sort_by(|a, b| {
        (a.name.starts_with('('), &a.name).cmp(&(b.name.starts_with('('), &b.name))
    });
}

fn push_values(out: &mut Vec<Opt>, name: String, kind: &Kind, v: &Value) {
    let values: Vec<&Value> = match v {
        Value::List(items) => items.iter().collect(),
        other => vec![other],
    };
    for v in values {
        // An enum number the enum does not name is skipped, as protoprint skips it.
        if let (Kind::Enum(e), Value::EnumNumber(n)) = (kind, v)
            && e.get_value(*n).is_none()
        {
            continue;
        }
        let mut value = String::new();
        literal(&mut value, kind, v);
        out.push(Opt {
            name: name.clone(),
            value,
        });
    }
}

/// A value as protoprint writes it in an option.
fn literal(out: &mut String, kind: &Kind, v: &Value) {
    match v {
        Value::Bool(b) => out.push_str(&b.to_string()),
        Value::I32(n) => out.push_str(&n.to_string()),
        Value::I64(n) => out.push_str(&n.to_string()),
        Value::U32(n) => out.push_str(&n.to_string()),
        Value::U64(n) => out.push_str(&n.to_string()),
        Value::F32(f) => out.push_str(&go_f(f64::from(*f))),
        Value::F64(f) => out.push_str(&go_f(*f)),
        Value::String(s) => out.push_str(&quoted_string(s)),
        Value::Bytes(b) => {
            let mut q = String::new();
            crate::text_out::quote(&mut q, b);
            out.push_str(&q);
        }
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => out.push_str(ev.name()),
                None => out.push_str(&n.to_string()),
            },
            _ => out.push_str(&n.to_string()),
        },
        Value::Message(m) => message_literal(out, m),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(out, kind, item);
            }
            out.push(']');
        }
        Value::Map(_) => {}
    }
}

/// A message literal in protoprint's compact form: `{ a: 1, b: { c: "x" } }`.
fn message_literal(out: &mut String, m: &DynamicMessage) {
    out.push('{');
    let mut fields: Vec<(u32, String, Kind, Value)> = m
        .fields()
        .map(|(fd, v)| (fd.number(), fd.name().to_owned(), fd.kind(), v.clone()))
        .collect();
    fields.extend(m.extensions().map(|(e, v)| {
        (
            e.number(),
            format!("[{}]", e.full_name()),
            e.kind(),
            v.clone(),
        )
    }));
    fields.sort_by_key(|f| f.0);
    for (i, (_, name, kind, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push(' ');
        out.push_str(name);
        out.push_str(": ");
        literal(out, kind, v);
    }
    out.push_str(" }");
}

/// Go's `%f`: six decimals.
fn go_f(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{f:.6}")
    }
}

/// protoc's JSON name for a field: underscores dropped, the letter after each capitalised.
fn protoc_json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// protoprint's `quotedString`: printable characters kept (UTF-8 included), the usual C escapes,
/// other characters as `\uXXXX`, `\UXXXXXXXX` or octal.
pub(crate) fn quoted_string(s: &str) -> String {
    let mut b = String::from('"');
    for r in s.chars() {
        match r {
            '\n' => b.push_str("\\n"),
            '\r' => b.push_str("\\r"),
            '\t' => b.push_str("\\t"),
            '"' => b.push_str("\\\""),
            '\\' => b.push_str("\\\\"),
            r if !r.is_control() && r != '\u{ad}' => b.push(r),
            r if (r as u32) > 0xffff => b.push_str(&format!("\\U{:08X}", r as u32)),
            r if (r as u32) > 0x7f => b.push_str(&format!("\\u{:04X}", r as u32)),
            r => b.push_str(&format!("\\{:03o}", r as u32)),
        }
    }
    b.push('"');
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_as_protoc() {
        assert_eq!(protoc_json_name("raw_blob"), "rawBlob");
        assert_eq!(protoc_json_name("oauth_scope"), "oauthScope");
        assert_eq!(protoc_json_name("x"), "x");
    }

    #[test]
    fn quoting_and_floats() {
        assert_eq!(quoted_string("a\"é\n"), "\"a\\\"é\\n\"");
        assert_eq!(quoted_string("\u{1}"), "\"\\001\"");
        assert_eq!(go_f(1.5), "1.500000");
    }
}
