//! A JSON value into a request message with the rules and error words of jhump's dynamic-message
//! unmarshaller, which grpcurl uses: fields by JSON or proto name, numbers as numbers or strings,
//! enums by name or number, `null` clearing a field, an array for a singular field keeping its
//! last element, and `message type X has no known field named y` or `bad input: expecting string
//! ; instead got 1` when the value does not fit. Well-known types go to prost-reflect's
//! deserializer (golang/protobuf's jsonpb reads them in grpcurl).

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value};

use crate::go_json::Node;

type R<T> = Result<T, String>;

/// Reads `node` as a `desc` message; unknown fields are skipped when `allow_unknown`.
pub fn message(desc: &MessageDescriptor, node: &Node, allow_unknown: bool) -> R<DynamicMessage> {
    if is_wkt(desc) {
        return DynamicMessage::deserialize(desc.clone(), node.to_serde())
            .map_err(|e| e.to_string());
    }
    let mut msg = DynamicMessage::new(desc.clone());
    let fields = match node {
        Node::Null => return Ok(msg),
        Node::Object(kv) => kv,
        other => {
            return Err(format!(
                "bad input: expecting start of JSON object: '{{' ; instead got {}",
                other.token()
            ));
        }
    };
    for (key, value) in fields {
        let fd = desc
            .fields()
            .find(|f| f.json_name() == key)
            .or_else(|| desc.get_field_by_name(key));
        let Some(fd) = fd else {
            if allow_unknown {
                continue;
            }
            return Err(format!(
                "message type {} has no known field named {key}",
                desc.full_name()
            ));
        };
        match field(&fd, value, allow_unknown)? {
            Some(v) => merge(&mut msg, &fd, v),
            None if fd.containing_oneof().is_some() => match fd.kind() {
                Kind::Message(m) => msg.set_field(&fd, Value::Message(DynamicMessage::new(m))),
                _ => {
                    return Err(format!(
                        "message type {} cannot set field {key} to null: it is not a message type",
                        desc.full_name()
                    ));
                }
            },
            None => msg.clear_field(&fd),
        }
    }
    Ok(msg)
}

fn is_wkt(desc: &MessageDescriptor) -> bool {
    desc.full_name().starts_with("google.protobuf.")
        && matches!(
            desc.name(),
            "Any"
                | "Empty"
                | "Duration"
                | "Timestamp"
                | "Struct"
                | "Value"
                | "ListValue"
                | "DoubleValue"
                | "FloatValue"
                | "Int64Value"
                | "UInt64Value"
                | "Int32Value"
                | "UInt32Value"
                | "BoolValue"
                | "StringValue"
                | "BytesValue"
        )
}

fn merge(msg: &mut DynamicMessage, fd: &FieldDescriptor, v: Value) {
    match (v, msg.has_field(fd)) {
        (Value::List(mut items), true) if fd.is_list() => {
            if let Value::List(old) = msg.get_field_mut(fd) {
                old.append(&mut items);
            }
        }
        (Value::Map(items), true) if fd.is_map() => {
            if let Value::Map(old) = msg.get_field_mut(fd) {
                old.extend(items);
            }
        }
        (Value::Message(new), true) => {
            if let Value::Message(old) = msg.get_field_mut(fd) {
                let _ = old.merge(new.encode_to_vec().as_slice());
            }
        }
        (v, _) => msg.set_field(fd, v),
    }
}

fn singular_value_wkt(fd: &FieldDescriptor, list_too: bool) -> bool {
    match fd.kind() {
        Kind::Message(m) if !fd.is_list() => {
            m.full_name() == "google.protobuf.Value"
                || (list_too && m.full_name() == "google.protobuf.ListValue")
        }
        _ => false,
    }
}

pub(crate) fn field(fd: &FieldDescriptor, node: &Node, allow_unknown: bool) -> R<Option<Value>> {
    if *node == Node::Null && !singular_value_wkt(fd, false) {
        return Ok(None);
    }
    if let (Node::Object(kv), true, Kind::Message(entry)) = (node, fd.is_map(), fd.kind()) {
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut map = std::collections::HashMap::new();
        for (k, v) in kv {
            let key = element(&kf.kind(), &Node::Str(k.clone()), allow_unknown, false)?
                .and_then(Value::into_map_key)
                .ok_or_else(|| format!("invalid map key {k}"))?;
            let value = match element(&vf.kind(), v, allow_unknown, true)? {
                Some(v) => v,
                None => Value::default_value(&vf.kind()),
            };
            map.insert(key, value);
        }
        return Ok(Some(Value::Map(map)));
    }
    if let (Node::Array(items), false) = (node, singular_value_wkt(fd, true)) {
        let mut list = Vec::new();
        let mut last = None;
        for item in items {
            last = element(&fd.kind(), item, allow_unknown, false)?;
            if let (true, Some(v)) = (fd.is_list() || fd.is_map(), &last) {
                list.push(v.clone());
            }
        }
        if fd.is_map() {
            let mut map = std::collections::HashMap::<MapKey, Value>::new();
            for entry in list {
                if let Value::Message(m) = entry {
                    let k = m.get_field_by_number(1).map(|v| v.into_owned());
                    let v = m.get_field_by_number(2).map(|v| v.into_owned());
                    if let (Some(k), Some(v)) = (k.and_then(Value::into_map_key), v) {
                        map.insert(k, v);
                    }
                }
            }
            return Ok(Some(Value::Map(map)));
        }
        return Ok(if fd.is_list() {
            Some(Value::List(list))
        } else {
            last
        });
    }
    let v = element(&fd.kind(), node, allow_unknown, false)?;
    Ok(match v {
        Some(v) if fd.is_list() => Some(Value::List(vec![v])),
        other => other,
    })
}

/// One value of `kind`, with jhump's token expectations.
pub(crate) fn element(
    kind: &Kind,
    node: &Node,
    allow_unknown: bool,
    nil_message: bool,
) -> R<Option<Value>> {
    let bad = |expected: &str| {
        format!(
            "bad input: expecting {expected} ; instead got {}",
            node.token()
        )
    };
    let number = || -> R<String> {
        match node {
            Node::Num(n) | Node::Str(n) => Ok(n.clone()),
            Node::Null => Ok("0".into()),
            _ => Err(bad("number")),
        }
    };
    Ok(Some(match kind {
        Kind::Message(m) => {
            if *node == Node::Null && nil_message {
                return Ok(None);
            }
            Value::Message(message(m, node, allow_unknown)?)
        }
        Kind::Enum(e) => {
            let n = number()?;
            match parse_int(&n) {
                Ok(i) => Value::EnumNumber(i32::try_from(i).map_err(|_| overflow())?),
                Err(_) => match e.get_value_by_name(&n) {
                    Some(v) => Value::EnumNumber(v.number()),
                    None => {
                        return Err(format!(
                            "enum {} does not have value named {}",
                            crate::args::go_quote(e.full_name()),
                            crate::args::go_quote(&n)
                        ));
                    }
                },
            }
        }
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Value::I32(i32::try_from(parse_int(&number()?)?).map_err(|_| overflow())?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(parse_int(&number()?)?),
        Kind::Uint32 | Kind::Fixed32 => {
            Value::U32(u32::try_from(parse_uint(&number()?)?).map_err(|_| overflow())?)
        }
        Kind::Uint64 | Kind::Fixed64 => Value::U64(parse_uint(&number()?)?),
        Kind::Bool => match node {
            Node::Bool(b) => Value::Bool(*b),
            Node::Str(s) if s == "true" || s == "false" => Value::Bool(s == "true"),
            Node::Null => Value::Bool(false),
            _ => return Err(bad("boolean")),
        },
        Kind::Float => Value::F32(parse_float(&number()?)? as f32),
        Kind::Double => Value::F64(parse_float(&number()?)?),
        Kind::String => match node {
            Node::Str(s) => Value::String(s.clone()),
            Node::Null => Value::String(String::new()),
            _ => return Err(bad("string")),
        },
        Kind::Bytes => match node {
            Node::Str(s) => Value::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| go_base64_error(&e))?
                    .into(),
            ),
            Node::Null => Value::Bytes(Default::default()),
            _ => return Err(bad("string")),
        },
    }))
}

fn overflow() -> String {
    "numeric value is out of range".into()
}

/// `strconv.ParseInt(s, 10, 64)` with Go's error text.
fn parse_int(s: &str) -> R<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(num_error("ParseInt", s, "invalid syntax"));
    }
    s.trim_start_matches('+')
        .parse::<i64>()
        .map_err(|_| num_error("ParseInt", s, "value out of range"))
}

/// `strconv.ParseUint(s, 10, 64)`.
fn parse_uint(s: &str) -> R<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(num_error("ParseUint", s, "invalid syntax"));
    }
    s.parse::<u64>()
        .map_err(|_| num_error("ParseUint", s, "value out of range"))
}

/// `strconv.ParseFloat(s, 64)`.
fn parse_float(s: &str) -> R<f64> {
    let word = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    let f = s
        .parse::<f64>()
        .map_err(|_| num_error("ParseFloat", s, "invalid syntax"))?;
    if f.is_infinite() && word != "inf" && word != "infinity" {
        return Err(num_error("ParseFloat", s, "value out of range"));
    }
    Ok(f)
}

fn num_error(func: &str, s: &str, why: &str) -> String {
    format!(
        "strconv.{func}: parsing {}: {why}",
        crate::args::go_quote(s)
    )
}

fn go_base64_error(e: &base64::DecodeError) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(i, _) | base64::DecodeError::InvalidLastSymbol(i, _) => *i,
        base64::DecodeError::InvalidLength(n) => *n,
        base64::DecodeError::InvalidPadding => 0,
    };
    format!("illegal base64 data at input byte {at}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::go_json::Values;

    fn desc() -> MessageDescriptor {
        let pool =
            prost_reflect::DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        pool.get_message_by_name("grpc.health.v1.HealthCheckRequest")
            .unwrap()
    }

    fn read(s: &str) -> R<DynamicMessage> {
        let node = Values::new(s.as_bytes()).next_value()?.unwrap();
        message(&desc(), &node, false)
    }

    #[test]
    fn jhump_errors() {
        assert!(read(r#"{"service":"a"}"#).is_ok());
        assert_eq!(
            read(r#"{"servic":"a"}"#).unwrap_err(),
            "message type grpc.health.v1.HealthCheckRequest has no known field named servic"
        );
        assert_eq!(
            read(r#"{"service":1}"#).unwrap_err(),
            "bad input: expecting string ; instead got 1"
        );
        assert_eq!(
            read("[1]").unwrap_err(),
            "bad input: expecting start of JSON object: '{' ; instead got ["
        );
        assert_eq!(
            parse_int("1.5").unwrap_err(),
            "strconv.ParseInt: parsing \"1.5\": invalid syntax"
        );
        assert_eq!(
            parse_float("1e400").unwrap_err(),
            "strconv.ParseFloat: parsing \"1e400\": value out of range"
        );
    }
}
