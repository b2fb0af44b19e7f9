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

/// Response metadata as a stub's `headers` or `trailers`, every value kept: several values
/// joined with `;` (GripMock's form) unless one holds a `;`, then a list (volley's extension);
/// `-bin` values as they travel (base64); `{{` escaped so that no value becomes a template.
/// A value that is not UTF-8 cannot be a stub's text: left out, with one line saying so.
fn metadata(h: &HeaderMap, method: &MethodDescriptor) -> Map<String, Value> {
    let mut out = Map::new();
    for k in h.keys() {
        if protocol(k.as_str()) {
            continue;
        }
        let mut vals = Vec::new();
        for v in h.get_all(k) {
            match std::str::from_utf8(v.as_bytes()) {
                Ok(t) => vals.push(literal(t)),
                Err(_) => tracing::warn!(
                    "recording {}: a value of {k} is not UTF-8; the stub leaves it out",
                    method.full_name()
                ),
            }
        }
        let value = match vals.iter().any(|v| v.contains(';')) {
            true => Value::Array(vals.into_iter().map(Value::String).collect()),
            false if vals.is_empty() => continue,
            false => vals.join(";").into(),
        };
        out.insert(k.as_str().to_owned(), value);
    }
    out
}

/// `text` as a template that renders it unchanged: each `{{` written as the action that
/// prints it (`{{"{{"}}`, as Go's text/template reads it, GripMock's too).
fn literal(text: &str) -> String {
    text.replace("{{", r#"{{"{{"}}"#)
}

/// Every string in `v` made [`literal`].
fn literal_strings(v: &mut Value) {
    match v {
        Value::String(s) if s.contains("{{") => *s = literal(s),
        Value::Array(a) => a.iter_mut().for_each(literal_strings),
        Value::Object(m) => m.values_mut().for_each(literal_strings),
        _ => {}
    }
}

/// A message as a stub's JSON: .proto names, defaults left out.
fn json_of(m: &DynamicMessage) -> Value {
    let opts = SerializeOptions::new().use_proto_field_name(true);
    m.serialize_with_options(serde_json::value::Serializer, &opts)
        .unwrap_or(Value::Null)
}

/// A reply as a stub's JSON, its strings [`literal`] (a reply's strings are templates).
fn reply_of(m: &DynamicMessage) -> Value {
    let mut v = json_of(m);
    literal_strings(&mut v);
    v
}

/// A status's details as GripMock's `details` (`type` and the message's fields); a type the
/// pool does not know (or bytes that do not decode as it) as its bytes in base64 under
/// `value`, Connect's form of a detail.
fn details(pool: &DescriptorPool, st: &Status) -> Vec<Value> {
    st.detail_list()
        .iter()
        .map(|any| {
            let name = any.type_url.rsplit('/').next().unwrap_or_default();
            let decoded = pool
                .get_message_by_name(name)
                .and_then(|desc| DynamicMessage::decode(desc, any.value.as_slice()).ok());
            let mut v = match decoded {
                Some(msg) => json_of(&msg),
                None => {
                    use base64::Engine as _;
                    json!({"value": base64::engine::general_purpose::STANDARD.encode(&any.value)})
                }
            };
            if let Some(m) = v.as_object_mut() {
                m.insert("type".into(), any.type_url.clone().into());
            }
            v
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
        let replies: Vec<Value> = call.replies.iter().map(reply_of).collect();
        if m.is_server_streaming() {
            output.insert("stream".into(), Value::Array(replies));
        } else if let Some(r) = replies.into_iter().next() {
            output.insert("data".into(), r);
        }
        let mut headers = metadata(&call.headers, m);
        let mut trailers = metadata(&call.trailers, m);
        if let Some(st) = &call.status {
            output.insert("error".into(), literal(st.message()).into());
            output.insert("code".into(), (st.code() as i32).into());
            let d = details(m.parent_pool(), st);
            if !d.is_empty() {
                output.insert("details".into(), Value::Array(d));
            }
            // An error's metadata arrives with its status: sent back as headers (GripMock sends
            // an error's headers as trailers).
            headers.extend(metadata(st.metadata(), m));
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

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use volley_server::{Code, DynamicHandler, Request};

    use super::*;
    use crate::{
        stubs::{Options, Stubs},
        testkit::{block_on, check, method, msg, pool, split, temp_dir},
    };

    /// The stub files written for `service`, sorted.
    fn stub_files(stubs_out: &std::path::Path, service: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(stubs_out.join(service))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    }

    fn read_json(p: &std::path::Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn load(stubs_out: &std::path::Path, pool: &DescriptorPool) -> Stubs {
        Stubs::load_with(
            &[stubs_out.to_path_buf()],
            std::slice::from_ref(pool),
            Options::gripmock(),
        )
        .unwrap()
    }

    fn error_info(pool: &DescriptorPool, reason: &str) -> prost_types::Any {
        let info = msg(
            pool.get_message_by_name("google.rpc.ErrorInfo").unwrap(),
            json!({"reason": reason, "domain": "example.com"}),
        );
        prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: info.encode_to_vec(),
        }
    }

    #[test]
    fn a_recorded_unary_call_becomes_a_stub_that_answers_as_the_upstream_did() {
        let pool = pool();
        let m = check(&pool);
        let dir = temp_dir("record-unary");
        let w = Writer::new(dir.join("stubs"), Some(dir.join("calls.ndjson"))).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/grpc"));
        headers.append("x-multi", HeaderValue::from_static("a"));
        headers.append("x-multi", HeaderValue::from_static("b"));
        headers.insert("x-region", HeaderValue::from_static("eu"));
        headers.insert("x-token-bin", HeaderValue::from_static("AAEC"));
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        trailers.insert("x-trace", HeaderValue::from_static("t1"));
        let call = Recorded {
            method: m.clone(),
            requests: vec![msg(m.input(), json!({"service": "users"}))],
            replies: vec![msg(m.output(), json!({"status": "SERVING"}))],
            headers,
            trailers,
            status: None,
        };
        w.write(&call).unwrap();

        let files = stub_files(&dir.join("stubs"), "grpc.health.v1.Health");
        assert_eq!(files.len(), 1);
        let name = files[0].file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("Check-") && name.ends_with(".json") && name.len() == 27,
            "{name}"
        );
        // The protocol's headers are not replayed; repeated ones join with `;`; binary ones
        // are kept as they travel (base64).
        assert_eq!(
            read_json(&files[0]),
            json!({"service": "grpc.health.v1.Health", "method": "Check",
                   "input": {"equals": {"service": "users"}},
                   "output": {"data": {"status": "SERVING"},
                              "headers": {"x-multi": "a;b", "x-region": "eu",
                                          "x-token-bin": "AAEC"},
                              "trailers": {"x-trace": "t1"}}})
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("calls.ndjson")).unwrap(),
            "{\"service\":\"users\"}\n"
        );

        // Read back by the loader, the stub answers the recorded request as the upstream did.
        let s = load(&dir.join("stubs"), &pool);
        let req = Request::new(msg(m.input(), json!({"service": "users"})));
        let (headers, trailers, reply) = split(block_on(s.unary(&m, req)).unwrap());
        assert_eq!(reply, call.replies[0]);
        let multi: Vec<&HeaderValue> = headers.get_all("x-multi").iter().collect();
        assert_eq!(multi, ["a", "b"]);
        assert_eq!(headers["x-region"], "eu");
        assert_eq!(headers["x-token-bin"], "AAEC");
        assert_eq!(trailers["x-trace"], "t1");
        let other = Request::new(msg(m.input(), json!({"service": "orders"})));
        assert_eq!(
            block_on(s.unary(&m, other)).unwrap_err().code(),
            Code::NotFound
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_recorded_failure_keeps_its_code_message_details_and_metadata() {
        let pool = pool();
        let m = check(&pool);
        let dir = temp_dir("record-error");
        let w = Writer::new(dir.join("stubs"), None).unwrap();
        let unknown = prost_types::Any {
            type_url: "type.googleapis.com/example.NotInThePool".into(),
            value: vec![8, 1, 0xff],
        };
        let mut st = Status::with_details(
            volley_server::Code::NotFound,
            "no such user",
            vec![error_info(&pool, "GONE"), unknown.clone()],
        );
        st.metadata_mut()
            .insert("x-err", HeaderValue::from_static("e1"));
        let mut headers = HeaderMap::new();
        headers.insert("x-region", HeaderValue::from_static("eu"));
        let mut trailers = HeaderMap::new();
        trailers.insert("x-trace", HeaderValue::from_static("t1"));
        w.write(&Recorded {
            method: m.clone(),
            requests: vec![msg(m.input(), json!({"service": "ghost"}))],
            replies: Vec::new(),
            headers,
            trailers,
            status: Some(st),
        })
        .unwrap();

        let files = stub_files(&dir.join("stubs"), "grpc.health.v1.Health");
        // A type the pool does not know is kept as its bytes; the error's metadata goes with
        // the headers, and there are no trailers.
        assert_eq!(
            read_json(&files[0])["output"],
            json!({"error": "no such user", "code": 5,
                   "details": [{"type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "GONE", "domain": "example.com"},
                               {"type": "type.googleapis.com/example.NotInThePool",
                                "value": "CAH/"}],
                   "headers": {"x-err": "e1", "x-region": "eu"}})
        );

        let s = load(&dir.join("stubs"), &pool);
        let req = Request::new(msg(m.input(), json!({"service": "ghost"})));
        let e = block_on(s.unary(&m, req)).unwrap_err();
        assert_eq!((e.code(), e.message()), (Code::NotFound, "no such user"));
        assert_eq!(e.detail_list(), [error_info(&pool, "GONE"), unknown]);
        assert_eq!(e.metadata()["x-err"], "e1");
        assert_eq!(e.metadata()["x-region"], "eu");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_call_is_an_ndjson_line_and_each_distinct_call_one_stub() {
        let pool = pool();
        let m = check(&pool);
        let bidi = method(
            &pool,
            "grpc.reflection.v1.ServerReflection",
            "ServerReflectionInfo",
        );
        let dir = temp_dir("record-data");
        let w = Writer::new(dir.join("stubs"), Some(dir.join("data"))).unwrap();
        let unary = |service: &str| Recorded {
            method: m.clone(),
            requests: vec![msg(m.input(), json!({ "service": service }))],
            replies: vec![msg(m.output(), json!({}))],
            headers: HeaderMap::new(),
            trailers: HeaderMap::new(),
            status: None,
        };
        for s in ["a", "a", "b"] {
            w.write(&unary(s)).unwrap();
        }
        w.write(&Recorded {
            method: bidi.clone(),
            requests: vec![
                msg(bidi.input(), json!({"host": "h", "listServices": "*"})),
                msg(
                    bidi.input(),
                    json!({"host": "h", "fileByFilename": "x.proto"}),
                ),
            ],
            replies: vec![msg(bidi.output(), json!({"validHost": "h"}))],
            headers: HeaderMap::new(),
            trailers: HeaderMap::new(),
            status: None,
        })
        .unwrap();

        // One file per method; a client stream's requests are one line, a JSON array.
        let data = dir.join("data");
        assert_eq!(
            std::fs::read_to_string(data.join("grpc.health.v1.Health.Check.ndjson")).unwrap(),
            "{\"service\":\"a\"}\n{\"service\":\"a\"}\n{\"service\":\"b\"}\n"
        );
        let line = std::fs::read_to_string(
            data.join("grpc.reflection.v1.ServerReflection.ServerReflectionInfo.ndjson"),
        )
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!([{"host": "h", "listServices": "*"}, {"host": "h", "fileByFilename": "x.proto"}])
        );
        assert_eq!(line.lines().count(), 1);

        assert_eq!(
            stub_files(&dir.join("stubs"), "grpc.health.v1.Health").len(),
            2
        );
        let streams = stub_files(&dir.join("stubs"), "grpc.reflection.v1.ServerReflection");
        assert_eq!(
            read_json(&streams[0]),
            json!({"service": "grpc.reflection.v1.ServerReflection",
                   "method": "ServerReflectionInfo",
                   "inputs": [{"equals": {"host": "h", "list_services": "*"}},
                              {"equals": {"host": "h", "file_by_filename": "x.proto"}}],
                   "output": {"stream": [{"valid_host": "h"}]}})
        );
        // Every stub written loads back.
        assert_eq!(load(&dir.join("stubs"), &pool).len(), 3);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
