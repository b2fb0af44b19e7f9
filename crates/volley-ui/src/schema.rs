//! `GET /metadata?method=...`: a method's request type as grpcui's page reads it, every message
//! and enum type it reaches, field by field (`name`, `protoName`, `type`, `oneOfFields`,
//! `isMessage`, `isEnum`, `isArray`, `isMap`, `isRequired`, `defaultVal`, `description`); or,
//! for `method=*`, every message type of the schema (the page's `Any` picker).

use std::collections::BTreeMap;

use prost_reflect::{
    Cardinality, DescriptorPool, EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor,
    MethodDescriptor, OneofDescriptor,
};
use serde_json::{Value, json};

/// The types a schema holds, by full name.
#[derive(Default)]
struct Types {
    messages: BTreeMap<String, Value>,
    enums: BTreeMap<String, Value>,
}

impl Types {
    fn message(&mut self, m: &MessageDescriptor) {
        if self.messages.contains_key(m.full_name()) {
            return;
        }
        // Inserted before its fields are walked: a message that holds itself ends here.
        self.messages.insert(m.full_name().to_owned(), Value::Null);
        let mut fields = Vec::new();
        let mut oneofs_done: Vec<String> = Vec::new();
        for f in m.fields() {
            match real_oneof(&f) {
                Some(o) if oneofs_done.iter().any(|n| n == o.name()) => continue,
                Some(o) => {
                    oneofs_done.push(o.name().to_owned());
                    let members: Vec<Value> = o.fields().map(|f| self.field(&f)).collect();
                    fields.push(json!({
                        "name": o.name(), "protoName": o.name(), "type": "oneof",
                        "oneOfFields": members, "isMessage": false, "isEnum": false,
                        "isArray": false, "isMap": false, "isRequired": false,
                        "defaultVal": null, "description": "",
                    }));
                }
                None => fields.push(self.field(&f)),
            }
        }
        self.messages
            .insert(m.full_name().to_owned(), Value::Array(fields));
    }

    fn enumeration(&mut self, e: &EnumDescriptor) {
        let values: Vec<Value> = e
            .values()
            .map(|v| json!({"num": v.number(), "name": v.name()}))
            .collect();
        self.enums
            .insert(e.full_name().to_owned(), Value::Array(values));
    }

    fn field(&mut self, f: &FieldDescriptor) -> Value {
        let (ty, is_message, is_enum) = match f.kind() {
            Kind::Message(m) => {
                self.message(&m);
                (m.full_name().to_owned(), true, false)
            }
            Kind::Enum(e) => {
                self.enumeration(&e);
                (e.full_name().to_owned(), false, true)
            }
            k => (scalar(&k).to_owned(), false, false),
        };
        json!({
            "name": f.json_name(),
            "protoName": f.name(),
            "type": ty,
            "oneOfFields": null,
            "isMessage": is_message,
            "isEnum": is_enum,
            "isArray": f.is_list(),
            "isMap": f.is_map(),
            "isRequired": f.cardinality() == Cardinality::Required,
            "defaultVal": default_value(f),
            "description": description(f),
        })
    }
}

/// The oneof `f` is in, unless it is proto3's synthetic one (an `optional` field).
fn real_oneof(f: &FieldDescriptor) -> Option<OneofDescriptor> {
    f.containing_oneof().filter(|o| !o.is_synthetic())
}

fn scalar(k: &Kind) -> &'static str {
    match k {
        Kind::Double => "double",
        Kind::Float => "float",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Uint32 => "uint32",
        Kind::Uint64 => "uint64",
        Kind::Sint32 => "sint32",
        Kind::Sint64 => "sint64",
        Kind::Fixed32 => "fixed32",
        Kind::Fixed64 => "fixed64",
        Kind::Sfixed32 => "sfixed32",
        Kind::Sfixed64 => "sfixed64",
        Kind::Bool => "bool",
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Message(_) | Kind::Enum(_) => "",
    }
}

/// grpcui's `defaultVal`: 64-bit numbers as strings, an enum's first value by name, `{}` for a
/// map, `null` for a message.
fn default_value(f: &FieldDescriptor) -> Value {
    if f.is_map() {
        return json!({});
    }
    match f.kind() {
        Kind::Message(_) => Value::Null,
        Kind::Enum(e) => {
            let first = e.default_value();
            Value::String(first.name().to_owned())
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint64 | Kind::Fixed64 => {
            json!("0")
        }
        Kind::Double | Kind::Float => json!(0),
        Kind::Bool => json!(false),
        Kind::String | Kind::Bytes => json!(""),
        _ => json!(0),
    }
}

/// The field as its .proto declares it: `repeated string tags = 3;`.
fn description(f: &FieldDescriptor) -> String {
    let ty = match f.kind() {
        Kind::Message(m) if f.is_map() => {
            let (k, v) = (m.map_entry_key_field(), m.map_entry_value_field());
            return format!(
                "map<{}, {}> {} = {};",
                type_name(&k),
                type_name(&v),
                f.name(),
                f.number()
            );
        }
        _ => type_name(f),
    };
    let label = match f.cardinality() {
        Cardinality::Repeated => "repeated ",
        Cardinality::Required => "required ",
        _ if f.field_descriptor_proto().proto3_optional() => "optional ",
        _ => "",
    };
    format!("{label}{ty} {} = {};", f.name(), f.number())
}

fn type_name(f: &FieldDescriptor) -> String {
    match f.kind() {
        Kind::Message(m) => format!(".{}", m.full_name()),
        Kind::Enum(e) => format!(".{}", e.full_name()),
        k => scalar(&k).to_owned(),
    }
}

/// The schema of `method`'s request (grpcui's `/metadata?method=pkg.Svc.Method`).
pub(crate) fn of_method(method: &MethodDescriptor) -> Value {
    let mut t = Types::default();
    t.message(&method.input());
    json!({
        "requestType": method.input().full_name(),
        "requestStream": method.is_client_streaming(),
        "messageTypes": t.messages,
        "enumTypes": t.enums,
    })
}

/// Every message type of `pool` (grpcui's `/metadata?method=*`).
pub(crate) fn of_all(pool: &DescriptorPool) -> Value {
    let mut t = Types::default();
    for m in pool.all_messages() {
        t.message(&m);
    }
    json!({
        "requestType": "",
        "requestStream": false,
        "messageTypes": t.messages,
        "enumTypes": t.enums,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_type_and_what_it_reaches() {
        let pool = DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        let check = pool
            .get_service_by_name("grpc.health.v1.Health")
            .and_then(|s| s.methods().find(|m| m.name() == "Check"))
            .unwrap();
        let s = of_method(&check);
        assert_eq!(s["requestType"], "grpc.health.v1.HealthCheckRequest");
        assert_eq!(s["requestStream"], false);
        let fields = &s["messageTypes"]["grpc.health.v1.HealthCheckRequest"];
        assert_eq!(fields[0]["name"], "service");
        assert_eq!(fields[0]["type"], "string");
        assert_eq!(fields[0]["defaultVal"], "");
        assert_eq!(fields[0]["description"], "string service = 1;");
        let all = of_all(&pool);
        assert!(all["messageTypes"]["grpc.health.v1.HealthCheckResponse"].is_array());
        assert!(all["enumTypes"]["grpc.health.v1.HealthCheckResponse.ServingStatus"].is_array());
    }
}
