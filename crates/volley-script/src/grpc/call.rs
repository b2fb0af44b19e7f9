//! What unary calls and streams both need: their params (`metadata`, `tags`, `timeout`,
//! `discardResponseMessage`), the method by name (or k6's error with the closest names), the
//! request head, and messages between protojson text and protobuf.

use std::{fmt::Write as _, sync::Arc, time::Duration};

use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, SerializeOptions,
};
use serde_json::Value;
use volley_call::dynamic::{CallStatus, Head, Metadata};

use super::{
    client::{metadata, with_client},
    host::{Conn, Host},
};

/// What `invoke` and `Stream` read from their params.
#[derive(Default)]
pub(super) struct CallParams {
    pub(super) metadata: Metadata,
    pub(super) tags: Vec<(String, String)>,
    pub(super) timeout: Option<Duration>,
    pub(super) discard: bool,
}

pub(super) fn call_params(params: &str, what: &str) -> Result<CallParams, String> {
    let v: Value =
        serde_json::from_str(params).map_err(|e| format!("invalid {what} parameters: {e}"))?;
    let mut p = CallParams::default();
    let bad = |s: String| format!("invalid {what} parameters: {s}");
    if let Some(obj) = v.as_object() {
        for (k, v) in obj {
            match k.as_str() {
                "metadata" => p.metadata = metadata(v).map_err(bad)?,
                "tags" => {
                    let o = v
                        .as_object()
                        .ok_or_else(|| bad("tags must be an object".into()))?;
                    p.tags = o
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                            )
                        })
                        .collect();
                }
                "timeout" => {
                    p.timeout = Some(
                        crate::duration::value_duration(v)
                            .map_err(|e| bad(format!("invalid timeout value: {e}")))?,
                    )
                }
                "discardResponseMessage" => {
                    p.discard = v
                        .as_bool()
                        .ok_or_else(|| bad("discardResponseMessage must be a boolean".into()))?
                }
                other => return Err(bad(format!("unknown param: {other:?}"))),
            }
        }
    }
    Ok(p)
}

/// The method named `pkg.Service/Method` (a leading `/` allowed), or k6's error with the
/// closest names volley knows.
pub(super) fn find_method(pool: &DescriptorPool, method: &str) -> Result<MethodDescriptor, String> {
    if method.is_empty() {
        return Err("method to invoke cannot be empty".into());
    }
    let name = method.strip_prefix('/').unwrap_or(method);
    let found = name.rsplit_once('/').and_then(|(svc, m)| {
        pool.get_service_by_name(svc)
            .and_then(|s| s.methods().find(|x| x.name() == m))
    });
    found.ok_or_else(|| {
        let all: Vec<String> = pool
            .services()
            .flat_map(|s| {
                s.methods()
                    .map(|m| format!("{}/{}", s.full_name(), m.name()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut best: Vec<(usize, &String)> = all.iter().map(|c| (distance(name, c), c)).collect();
        best.sort();
        match best.first() {
            Some((d, c)) if *d <= name.len().max(3) / 2 => {
                format!("method {method:?} not found in file descriptors (did you mean {c:?}?)")
            }
            _ => format!("method {method:?} not found in file descriptors"),
        }
    })
}

/// Levenshtein distance, for the closest name.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

pub(super) fn connected(
    st: &impl Host,
    client: u32,
) -> Result<(Conn, Arc<DescriptorPool>), String> {
    with_client(st, client, |c| {
        let conn = c
            .conn
            .clone()
            .ok_or("no gRPC connection, you must call connect first")?
            .pick();
        let pool = c.pool.clone().ok_or(
            "no schema: call client.load(), client.loadProtoset() or connect with reflect: true",
        )?;
        Ok((conn, pool))
    })
}

pub(super) fn head(conn: &Conn, method: &MethodDescriptor, p: &CallParams, unary: bool) -> Head {
    Head {
        scheme: conn.scheme,
        authority: conn.authority.clone(),
        path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
        metadata: volley_call::dynamic::to_header_map(&p.metadata),
        timeout: p.timeout,
        user_agent: concat!("volley-run/", env!("CARGO_PKG_VERSION")).to_owned(),
        protocol: conn.protocol,
        max_recv: conn.max_recv,
        unary,
    }
}

pub(super) fn request(desc: MessageDescriptor, body: &str) -> Result<DynamicMessage, String> {
    if body.is_empty() || body == "null" {
        return Err("request cannot be nil".into());
    }
    let mut de = serde_json::Deserializer::from_str(body);
    DynamicMessage::deserialize(desc, &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| format!("unable to serialise request object to protocol buffer: {e}"))
}

/// protojson with unpopulated fields, as k6 hands replies to scripts.
pub(super) fn to_json(out: &mut String, msg: &DynamicMessage) {
    let opts = SerializeOptions::new().skip_default_fields(false);
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::new(&mut buf);
    match msg.serialize_with_options(&mut ser, &opts) {
        Ok(()) => out.push_str(std::str::from_utf8(&buf).unwrap_or("null")),
        Err(_) => out.push_str("null"),
    }
}

pub(super) fn metadata_json(out: &mut String, md: &Metadata) {
    let mut keys: Vec<&str> = Vec::new();
    for (k, _) in md {
        if !keys.contains(&k.as_str()) {
            keys.push(k);
        }
    }
    let mut m = serde_json::Map::new();
    for k in keys {
        let vals: Vec<Value> = md
            .iter()
            .filter(|(x, _)| x == k)
            .map(|(_, v)| Value::String(String::from_utf8_lossy(v).into_owned()))
            .collect();
        m.insert(k.to_owned(), Value::Array(vals));
    }
    out.push_str(&Value::Object(m).to_string());
}

pub(super) fn status_json(out: &mut String, s: &CallStatus) {
    let _ = write!(
        out,
        "{{\"code\":{},\"message\":{},\"details\":[]}}",
        s.code,
        Value::String(s.message.clone())
    );
}
