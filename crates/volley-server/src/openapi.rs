//! OpenAPI 3 from the REST rules: one path per `google.api.http` rule (additional bindings
//! too), its operation named `Service_Method` and tagged with the service, as gnostic's
//! `protoc-gen-openapi` names them; parameters from the template's variables and, for rules
//! whose body is not `*`, the other fields as query parameters (nested ones dotted); the
//! request body and the reply (or its `response_body` field); errors as `google.rpc.Status`.
//! Schemas follow proto3's JSON mapping (64-bit integers as strings, enums by name, bytes as
//! base64, maps as objects, well-known types as their JSON forms); `google.api.field_behavior`
//! gives `required`, `readOnly` and `writeOnly`; the files' comments are the descriptions.
//! `GET /openapi.json` and `GET /openapi.yaml` serve it
//! ([`ServerBuilder::openapi`](crate::ServerBuilder::openapi)).

use std::{collections::BTreeMap, sync::Arc};

use bytes::Bytes;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor, Value as PValue};
use serde_json::{Map, Value, json};

use crate::route::{
    Endpoint,
    rest::{Route, RuleError},
};

/// The document for every rule in `pool`'s method options.
pub fn from_descriptors(pool: &DescriptorPool, title: &str) -> Result<Value, RuleError> {
    let mut routes = Vec::new();
    for s in pool.services() {
        for m in s.methods() {
            routes.extend(Route::from_options(&m)?);
        }
    }
    Ok(document(&routes, title))
}

/// `GET /openapi.json` and `GET /openapi.yaml`, answering the document for `routes`.
pub(crate) fn endpoints(routes: &[Route], title: &str) -> Vec<Endpoint> {
    let doc = document(routes, title);
    let yaml = serde_yaml::to_string(&doc).unwrap_or_default();
    [
        ("/openapi.json", doc.to_string(), "application/json"),
        ("/openapi.yaml", yaml, "application/yaml"),
    ]
    .into_iter()
    .map(|(path, body, kind)| {
        let body = Bytes::from(body);
        Endpoint {
            method: http::Method::GET,
            path: path.into(),
            handle: Arc::new(move |_| {
                let mut r = http::Response::new(body.clone());
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(kind),
                );
                Box::pin(std::future::ready(r))
            }),
        }
    })
    .collect()
}

/// The document for `routes`.
pub(crate) fn document(routes: &[Route], title: &str) -> Value {
    let mut schemas = BTreeMap::new();
    let mut paths: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut used = std::collections::HashMap::<String, usize>::new();
    for r in routes {
        let (path, vars) = openapi_path(&r.path);
        let method = r.rpc.name();
        let service = r.rpc.parent_service();
        let mut id = format!("{}_{method}", service.name());
        let n = used.entry(id.clone()).or_default();
        *n += 1;
        if *n > 1 {
            // An additional binding: the same operation again, under another path.
            id = format!("{id}{n}");
        }
        let mut op = Map::new();
        op.insert("tags".into(), json!([service.name()]));
        op.insert("operationId".into(), id.into());
        if let Some(d) = comment(r.rpc.parent_file().file_descriptor_proto(), r.rpc.path()) {
            op.insert("description".into(), d.into());
        }
        let mut params = Vec::new();
        for v in &vars {
            if let Some(f) = field_at(&r.input, v) {
                params.push(json!({"name": v, "in": "path", "required": true,
                    "schema": schema(&f, &mut schemas)}));
            }
        }
        if r.body != "*" {
            let bound: Vec<&str> = vars.iter().map(String::as_str).collect();
            query(
                &r.input,
                ("", ""),
                &bound,
                &r.body,
                &mut params,
                &mut schemas,
                0,
            );
        }
        if !params.is_empty() {
            op.insert("parameters".into(), params.into());
        }
        let body = match r.body.as_str() {
            "" => None,
            "*" => Some(message_ref(&r.input, &mut schemas)),
            f => r
                .input
                .get_field_by_name(f)
                .map(|f| schema(&f, &mut schemas)),
        };
        if let Some(b) = body {
            op.insert(
                "requestBody".into(),
                json!({"content": {"application/json": {"schema": b}}, "required": true}),
            );
        }
        let reply = match r.response_body.as_str() {
            "" => message_ref(&r.output, &mut schemas),
            f => r
                .output
                .get_field_by_json_name(f)
                .map(|f| schema(&f, &mut schemas))
                .unwrap_or_else(|| json!({})),
        };
        let reply = if r.rpc.is_server_streaming() {
            // grpc-gateway's stream: one `{"result": ...}` object per line.
            json!({"type": "object", "properties": {"result": reply,
                "error": {"$ref": "#/components/schemas/Status"}}})
        } else {
            reply
        };
        status_schema(&mut schemas);
        op.insert(
            "responses".into(),
            json!({
                "200": {"description": "OK", "content": {"application/json": {"schema": reply}}},
                "default": {"description": "Default error response", "content":
                    {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}
            }),
        );
        paths
            .entry(path)
            .or_default()
            .insert(r.method.as_str().to_ascii_lowercase(), op.into());
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": title, "version": "0.0.1"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// `/v1/{name=shelves/*}/books:get` as OpenAPI writes it (`/v1/{name}/books:get`), and the
/// variables.
fn openapi_path(template: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut vars = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        let name = inside.split('=').next().unwrap_or(inside);
        out.push('{');
        out.push_str(name);
        out.push('}');
        vars.push(name.to_owned());
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    (out, vars)
}

/// The field a dotted path names in `m`.
fn field_at(m: &MessageDescriptor, path: &str) -> Option<FieldDescriptor> {
    let (head, tail) = path
        .split_once('.')
        .map_or((path, None), |(h, t)| (h, Some(t)));
    let f = m.get_field_by_name(head)?;
    match (tail, f.kind()) {
        (None, _) => Some(f),
        (Some(t), Kind::Message(inner)) => field_at(&inner, t),
        _ => None,
    }
}

/// Query parameters: the fields of `m` not bound by the path nor the body, nested messages
/// dotted (three levels, as far as REST callers go), maps and well-known messages left out.
/// Named by their JSON names (`filter.pageSize`), as gnostic names them; REST callers may use
/// either spelling.
fn query(
    m: &MessageDescriptor,
    (proto, json_prefix): (&str, &str),
    bound: &[&str],
    body: &str,
    out: &mut Vec<Value>,
    schemas: &mut BTreeMap<String, Value>,
    depth: usize,
) {
    for f in m.fields() {
        let path = format!("{proto}{}", f.name());
        let name = format!("{json_prefix}{}", f.json_name());
        if bound.contains(&path.as_str()) || (proto.is_empty() && f.name() == body) || f.is_map() {
            continue;
        }
        match f.kind() {
            Kind::Message(inner) if !well_known(&inner) => {
                if !f.is_list() && depth < 3 {
                    let next = (&*format!("{path}."), &*format!("{name}."));
                    query(&inner, next, bound, body, out, schemas, depth + 1);
                }
            }
            _ => {
                let mut p = json!({"name": name, "in": "query", "schema": schema(&f, schemas)});
                if let Some(d) = comment(f.parent_file().file_descriptor_proto(), f.path()) {
                    p["description"] = d.into();
                }
                out.push(p);
            }
        }
    }
}

fn well_known(m: &MessageDescriptor) -> bool {
    m.package_name() == "google.protobuf"
}

/// A reference to `m`'s schema, adding it (and what it uses) to `schemas`.
fn message_ref(m: &MessageDescriptor, schemas: &mut BTreeMap<String, Value>) -> Value {
    if let Some(inline) = well_known_schema(m, schemas) {
        return inline;
    }
    let name = schema_name(m);
    if !schemas.contains_key(&name) {
        // Placed first, so a message that contains itself refers back instead of recursing.
        schemas.insert(name.clone(), Value::Null);
        let mut props = Map::new();
        let mut required = Vec::new();
        for f in m.fields() {
            let mut s = schema(&f, schemas);
            for b in behaviors(&f) {
                match b {
                    2 => required.push(Value::from(f.json_name())),
                    3 => s = with(s, "readOnly", true.into()),
                    4 => s = with(s, "writeOnly", true.into()),
                    _ => {}
                }
            }
            if let Some(d) = comment(f.parent_file().file_descriptor_proto(), f.path()) {
                s = with(s, "description", d.into());
            }
            props.insert(f.json_name().to_owned(), s);
        }
        let mut body = json!({"type": "object", "properties": props});
        if !required.is_empty() {
            body["required"] = required.into();
        }
        if let Some(d) = comment(m.parent_file().file_descriptor_proto(), m.path()) {
            body["description"] = d.into();
        }
        schemas.insert(name.clone(), body);
    }
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `a` with `key` set: beside a `$ref` (which takes no siblings in OpenAPI 3.0) through
/// `allOf`.
fn with(mut a: Value, key: &str, v: Value) -> Value {
    if a.get("$ref").is_some() {
        a = json!({"allOf": [a]});
    }
    a[key] = v;
    a
}

/// gnostic's names: the message's name, nested ones joined with `_`.
fn schema_name(m: &MessageDescriptor) -> String {
    let full = m.full_name();
    let local = full
        .strip_prefix(m.package_name())
        .map_or(full, |s| s.trim_start_matches('.'));
    local.replace('.', "_")
}

/// The JSON form of a well-known type, inline (`None` for other messages).
fn well_known_schema(
    m: &MessageDescriptor,
    schemas: &mut BTreeMap<String, Value>,
) -> Option<Value> {
    if !well_known(m) {
        return None;
    }
    Some(match m.name() {
        "Timestamp" => json!({"type": "string", "format": "date-time"}),
        "Duration" => {
            json!({"type": "string", "pattern": "^-?(?:0|[1-9][0-9]{0,11})(?:\\.[0-9]{1,9})?s$"})
        }
        "FieldMask" => json!({"type": "string", "format": "field-mask"}),
        "Empty" => json!({"type": "object"}),
        "Struct" => json!({"type": "object", "additionalProperties": true}),
        "Value" => json!({}),
        "ListValue" => json!({"type": "array", "items": {}}),
        "DoubleValue" | "FloatValue" => json!({"type": "number"}),
        "Int32Value" | "UInt32Value" => json!({"type": "integer", "format": "int32"}),
        "Int64Value" | "UInt64Value" => json!({"type": "string"}),
        "BoolValue" => json!({"type": "boolean"}),
        "StringValue" => json!({"type": "string"}),
        "BytesValue" => json!({"type": "string", "format": "bytes"}),
        "Any" => any_ref(schemas),
        _ => json!({"type": "object"}),
    })
}

/// A reference to `google.protobuf.Any`'s schema (gnostic's `GoogleProtobufAny`), adding it.
fn any_ref(schemas: &mut BTreeMap<String, Value>) -> Value {
    schemas.entry("GoogleProtobufAny".into()).or_insert_with(|| {
        json!({"type": "object", "properties": {"@type": {"type": "string",
            "description": "The type of the serialized message."}},
            "additionalProperties": true,
            "description": "Contains an arbitrary serialized message along with a @type that describes the type of the serialized message."})
    });
    json!({"$ref": "#/components/schemas/GoogleProtobufAny"})
}

/// `google.rpc.Status`, the errors' body.
fn status_schema(schemas: &mut BTreeMap<String, Value>) {
    if schemas.contains_key("Status") {
        return;
    }
    any_ref(schemas);
    schemas.insert(
        "Status".into(),
        json!({"type": "object", "description": "The error a call ended with (google.rpc.Status).",
            "properties": {
                "code": {"type": "integer", "format": "int32", "description": "The status code, a value of google.rpc.Code."},
                "message": {"type": "string", "description": "A developer-facing error message."},
                "details": {"type": "array", "items": {"$ref": "#/components/schemas/GoogleProtobufAny"},
                    "description": "Error details, each with its type."}
            }}),
    );
}

/// A field's schema: its value's, in an array when repeated, in an object when a map.
fn schema(f: &FieldDescriptor, schemas: &mut BTreeMap<String, Value>) -> Value {
    if f.is_map()
        && let Kind::Message(entry) = f.kind()
    {
        let value = entry.map_entry_value_field();
        return json!({"type": "object", "additionalProperties": single(&value, schemas)});
    }
    let one = single(f, schemas);
    if f.is_list() {
        json!({"type": "array", "items": one})
    } else {
        one
    }
}

/// The schema of one value of `f`, by proto3's JSON mapping.
fn single(f: &FieldDescriptor, schemas: &mut BTreeMap<String, Value>) -> Value {
    match f.kind() {
        Kind::Double => json!({"type": "number", "format": "double"}),
        Kind::Float => json!({"type": "number", "format": "float"}),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            json!({"type": "integer", "format": "int32"})
        }
        Kind::Uint32 | Kind::Fixed32 => json!({"type": "integer", "format": "uint32"}),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => json!({"type": "string", "format": "int64"}),
        Kind::Uint64 | Kind::Fixed64 => json!({"type": "string", "format": "uint64"}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::String => json!({"type": "string"}),
        Kind::Bytes => json!({"type": "string", "format": "bytes"}),
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
            json!({"type": "string", "enum": names, "format": "enum"})
        }
        Kind::Message(m) => message_ref(&m, schemas),
    }
}

/// The `google.api.field_behavior` values of `f` (2 required, 3 output only, 4 input only).
fn behaviors(f: &FieldDescriptor) -> Vec<i32> {
    let Some(ext) = f
        .parent_pool()
        .get_extension_by_name("google.api.field_behavior")
    else {
        return Vec::new();
    };
    let options = f.options();
    if !options.has_extension(&ext) {
        return Vec::new();
    }
    match options.get_extension(&ext).as_ref() {
        PValue::List(l) => l.iter().filter_map(PValue::as_enum_number).collect(),
        PValue::EnumNumber(n) => vec![*n],
        _ => Vec::new(),
    }
}

/// The leading comment of the element at `path` in `file`, trimmed, if the file kept them.
fn comment(file: &prost_types::FileDescriptorProto, path: &[i32]) -> Option<String> {
    let info = file.source_code_info.as_ref()?;
    let loc = info.location.iter().find(|l| l.path == path)?;
    let text = loc.leading_comments.as_deref()?;
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let joined = lines.join("\n").trim().to_owned();
    (!joined.is_empty()).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_become_openapi_paths() {
        assert_eq!(
            openapi_path("/v1/{name=shelves/*}/books/{book.id}:get"),
            (
                "/v1/{name}/books/{book.id}:get".to_owned(),
                vec!["name".to_owned(), "book.id".to_owned()]
            )
        );
        assert_eq!(
            openapi_path("/v1/shelves"),
            ("/v1/shelves".to_owned(), vec![])
        );
    }
}
