//! What recording leaves behind: each distinct call (its method and request messages) as a
//! GripMock stub file answering as the upstream did (data or stream, status and details,
//! headers, trailers), and every call's request(s) as an NDJSON line for `volley bench
//! --data-file`.

use std::{
    collections::{HashMap, HashSet},
    hash::{Hash, Hasher},
    io::Write,
    path::PathBuf,
    sync::Mutex,
};

use http::HeaderMap;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor, SerializeOptions};
use serde_json::{Map, Value, json};
use volley_server::Status;

/// A call seen through the proxy.
pub(crate) struct Recorded {
    pub method: MethodDescriptor,
    pub requests: Vec<DynamicMessage>,
    pub replies: Vec<DynamicMessage>,
    pub headers: HeaderMap,
    pub trailers: HeaderMap,
    pub status: Option<Status>,
}

/// Where recordings go.
pub(crate) struct Writer {
    stubs_out: PathBuf,
    /// `.ndjson`: one file; else a folder with one file per method.
    data_out: Option<PathBuf>,
    seen: Mutex<HashSet<u64>>,
    /// The NDJSON files open for appending, by path; one lock for all (lines stay whole).
    io: Mutex<HashMap<PathBuf, std::io::BufWriter<std::fs::File>>>,
}

/// Response metadata a stub does not replay (the protocol's own).
fn protocol(name: &str) -> bool {
    name.starts_with(':')
        || name.starts_with("grpc-")
        || matches!(
            name,
            "content-type"
                | "content-length"
                | "date"
                | "server"
                | "te"
                | "trailer"
                | "accept-encoding"
        )
}

fn metadata(h: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for k in h.keys() {
        if protocol(k.as_str()) || k.as_str().ends_with("-bin") {
            continue;
        }
        let vals: Vec<&str> = h
            .get_all(k)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        out.insert(k.as_str().to_owned(), vals.join(";").into());
    }
    out
}

/// A message as a stub's JSON: .proto names, defaults left out.
fn json_of(m: &DynamicMessage) -> Value {
    let opts = SerializeOptions::new().use_proto_field_name(true);
    m.serialize_with_options(serde_json::value::Serializer, &opts)
        .unwrap_or(Value::Null)
}

/// A status's details as GripMock's `details` (`type` and the message's fields).
fn details(pool: &DescriptorPool, st: &Status) -> Vec<Value> {
    st.detail_list()
        .iter()
        .filter_map(|any| {
            let name = any.type_url.rsplit('/').next()?;
            let desc = pool.get_message_by_name(name)?;
            let msg = DynamicMessage::decode(desc, any.value.as_slice()).ok()?;
            let mut v = json_of(&msg);
            v.as_object_mut()?
                .insert("type".into(), any.type_url.clone().into());
            Some(v)
        })
        .collect()
}

impl Writer {
    pub(super) fn new(stubs_out: PathBuf, data_out: Option<PathBuf>) -> std::io::Result<Writer> {
        std::fs::create_dir_all(&stubs_out)?;
        if let Some(d) = data_out.as_ref().filter(|d| !is_file(d)) {
            std::fs::create_dir_all(d)?;
        }
        if let Some(f) = data_out.as_ref().filter(|d| is_file(d)) {
            if let Some(parent) = f.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::File::create(f)?;
        }
        Ok(Writer {
            stubs_out,
            data_out,
            seen: Mutex::new(HashSet::new()),
            io: Mutex::new(HashMap::new()),
        })
    }

    /// Writes the call: its NDJSON line, and its stub when the call is new.
    pub(super) fn write(&self, call: &Recorded) -> std::io::Result<()> {
        let mut files = self.io.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(out) = &self.data_out {
            let reqs: Vec<Value> = call
                .requests
                .iter()
                .map(|m| {
                    m.serialize_with_options(
                        serde_json::value::Serializer,
                        &SerializeOptions::new(),
                    )
                    .unwrap_or(Value::Null)
                })
                .collect();
            let line = if call.method.is_client_streaming() {
                Value::Array(reqs)
            } else {
                reqs.into_iter().next().unwrap_or(json!({}))
            };
            let path = if is_file(out) {
                out.clone()
            } else {
                out.join(format!("{}.ndjson", call.method.full_name()))
            };
            let f = match files.entry(path) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(e.key())?;
                    e.insert(std::io::BufWriter::new(file))
                }
            };
            // A whole line at a time reaches the file, so a recording stopped any time is
            // usable up to its last call.
            writeln!(f, "{line}")?;
            f.flush()?;
        }
        let mut h = std::hash::DefaultHasher::new();
        call.method.full_name().hash(&mut h);
        for r in &call.requests {
            r.encode_to_vec().hash(&mut h);
        }
        let key = h.finish();
        if !self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key)
        {
            return Ok(());
        }
        let stub = self.stub(call);
        let dir = self
            .stubs_out
            .join(call.method.parent_service().full_name());
        std::fs::create_dir_all(&dir)?;
        let file = dir.join(format!("{}-{key:016x}.json", call.method.name()));
        std::fs::write(
            file,
            serde_json::to_string_pretty(&stub).unwrap_or_default() + "\n",
        )
    }

    /// The GripMock stub that answers `call` as the upstream did.
    fn stub(&self, call: &Recorded) -> Value {
        let m = &call.method;
        let equals: Vec<Value> = call
            .requests
            .iter()
            .map(|r| json!({"equals": json_of(r)}))
            .collect();
        let mut stub = json!({
            "service": m.parent_service().full_name(),
            "method": m.name(),
        });
        if m.is_client_streaming() {
            stub["inputs"] = Value::Array(equals);
        } else if let Some(e) = equals.into_iter().next() {
            stub["input"] = e;
        }
        let mut output = Map::new();
        let replies: Vec<Value> = call.replies.iter().map(json_of).collect();
        if m.is_server_streaming() {
            output.insert("stream".into(), Value::Array(replies));
        } else if let Some(r) = replies.into_iter().next() {
            output.insert("data".into(), r);
        }
        let mut headers = metadata(&call.headers);
        let mut trailers = metadata(&call.trailers);
        if let Some(st) = &call.status {
            output.insert("error".into(), st.message().into());
            output.insert("code".into(), (st.code() as i32).into());
            let d = details(m.parent_pool(), st);
            if !d.is_empty() {
                output.insert("details".into(), Value::Array(d));
            }
            // An error's metadata arrives with its status: sent back as headers (GripMock sends
            // an error's headers as trailers).
            headers.extend(metadata(st.metadata()));
            trailers.clear();
        }
        if !headers.is_empty() {
            output.insert("headers".into(), Value::Object(headers));
        }
        if !trailers.is_empty() {
            output.insert("trailers".into(), Value::Object(trailers));
        }
        stub["output"] = Value::Object(output);
        stub
    }
}

fn is_file(p: &std::path::Path) -> bool {
    p.extension()
        .is_some_and(|e| e == "ndjson" || e == "jsonl" || e == "json")
}
