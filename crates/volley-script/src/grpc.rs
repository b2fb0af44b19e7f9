//! `k6/net/grpc` in Rust: a VU's clients (schemas from `load`, `loadProtoset` or reflection; a
//! connection from `connect`), unary calls (`invoke`, `healthCheck`) and streams, on
//! volley-call's one-call layer (`volley_call::dynamic`: gRPC, gRPC-Web or Connect over
//! volley-client's HTTP/2 connection). Messages come in as protojson text and go back out as
//! protojson with unpopulated fields emitted, as k6's `protojson.MarshalOptions{EmitUnpopulated:
//! true}` gives them; a reply is `{status, message, headers, trailers, error}`.

use std::{
    collections::HashMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, SerializeOptions,
};
use serde_json::Value;
use tokio::sync::mpsc;
use volley_call::dynamic::{Call, CallStatus, DialOpts, Head, Metadata, Protocol, dial};
use volley_client::Connection;

use crate::{
    metrics::{Kind, id},
    vu::VuState,
};

/// The largest reply k6 takes unless `maxReceiveSize` says otherwise (grpc-go's default).
const MAX_RECEIVE: usize = 4 * 1024 * 1024;

/// One `new grpc.Client()`.
#[derive(Default)]
pub(crate) struct Client {
    pool: Option<Arc<DescriptorPool>>,
    conn: Option<Conn>,
}

/// A connected client.
#[derive(Clone)]
struct Conn {
    conn: Connection,
    scheme: &'static str,
    authority: String,
    addr: String,
    protocol: Protocol,
    max_recv: usize,
    max_send: usize,
}

/// A stream's event for the VU's event loop.
pub(crate) struct Event {
    pub id: u32,
    pub kind: &'static str,
    pub payload: Option<String>,
}

/// A VU's open streams and the channel their events come back on.
pub(crate) struct Streams {
    next: u32,
    /// Streams whose `end` has not been dispatched yet.
    pub open: usize,
    /// Each open stream's writer, its request type and whether the client streams (a
    /// server-streaming call's one request ends its side, as k6 sends it).
    writers: HashMap<
        u32,
        (
            mpsc::UnboundedSender<Option<DynamicMessage>>,
            MessageDescriptor,
            bool,
        ),
    >,
    tx: mpsc::UnboundedSender<Event>,
    pub rx: mpsc::UnboundedReceiver<Event>,
}

impl Default for Streams {
    fn default() -> Streams {
        let (tx, rx) = mpsc::unbounded_channel();
        Streams {
            next: 0,
            open: 0,
            writers: HashMap::new(),
            tx,
            rx,
        }
    }
}

impl Streams {
    /// A stream has ended: its writer goes.
    pub(crate) fn ended(&mut self, id: u32) {
        self.writers.remove(&id);
        self.open = self.open.saturating_sub(1);
    }
}

/// `new grpc.Client()`: its handle.
pub(crate) fn new_client(st: &VuState) -> u32 {
    let mut clients = st.clients.borrow_mut();
    clients.push(Client::default());
    (clients.len() - 1) as u32
}

fn with_client<T>(
    st: &VuState,
    id: u32,
    f: impl FnOnce(&mut Client) -> Result<T, String>,
) -> Result<T, String> {
    let mut clients = st.clients.borrow_mut();
    let c = clients.get_mut(id as usize).ok_or("not a grpc.Client")?;
    f(c)
}

/// `client.load(importPaths, ...files)`: init context only, as in k6.
pub(crate) fn load(st: &VuState, client: u32, paths: &str, files: &str) -> Result<String, String> {
    if !st.in_init.get() {
        return Err("load must be called in the init context".into());
    }
    let paths: Vec<String> =
        serde_json::from_str(paths).map_err(|e| format!("load: import paths: {e}"))?;
    let files: Vec<String> =
        serde_json::from_str(files).map_err(|e| format!("load: files: {e}"))?;
    if files.is_empty() {
        return Err("load: no .proto file given".into());
    }
    let dir = &st.shared.dir;
    let includes: Vec<PathBuf> = if paths.is_empty() {
        vec![dir.clone()]
    } else {
        paths
            .iter()
            .map(|p| dir.join(p.strip_prefix("file://").unwrap_or(p)))
            .collect()
    };
    let named: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            let f = Path::new(f.strip_prefix("file://").unwrap_or(f));
            let here = dir.join(f);
            if f.is_absolute() || here.exists() {
                here
            } else {
                f.to_path_buf()
            }
        })
        .collect();
    let key = format!("load\0{includes:?}\0{named:?}");
    let pool = st.shared.schema(&key, || {
        let resolved = volley_proto::load::resolve_filenames(&includes, &named);
        let set =
            volley_proto::load::compile_files(&resolved, &includes).map_err(|e| e.to_string())?;
        DescriptorPool::from_file_descriptor_set(set).map_err(|e| e.to_string())
    })?;
    let info = method_infos(&pool);
    with_client(st, client, |c| {
        c.pool = Some(pool);
        Ok(info)
    })
}

/// `client.loadProtoset(path)`.
pub(crate) fn load_protoset(st: &VuState, client: u32, path: &str) -> Result<String, String> {
    if !st.in_init.get() {
        return Err("load must be called in the init context".into());
    }
    let path = st
        .shared
        .dir
        .join(path.strip_prefix("file://").unwrap_or(path));
    let key = format!("protoset\0{}", path.display());
    let pool = st.shared.schema(&key, || {
        let p = volley_proto::load::read_protoset(&path)
            .map_err(|e| format!("couldn't unmarshal protoset file {}: {e}", path.display()))?;
        DescriptorPool::from_file_descriptor_set(p.set).map_err(|e| e.to_string())
    })?;
    let info = method_infos(&pool);
    with_client(st, client, |c| {
        c.pool = Some(pool);
        Ok(info)
    })
}

/// k6's `MethodInfo` list.
fn method_infos(pool: &DescriptorPool) -> String {
    let list: Vec<Value> = pool
        .services()
        .flat_map(|s| {
            let methods: Vec<MethodDescriptor> = s.methods().collect();
            methods.into_iter().map(move |m| {
                serde_json::json!({
                    "package": s.package_name(),
                    "service": s.full_name(),
                    "fullMethod": format!("/{}/{}", s.full_name(), m.name()),
                    "name": m.name(),
                    "isClientStream": m.is_client_streaming(),
                    "isServerStream": m.is_server_streaming(),
                })
            })
        })
        .collect();
    Value::Array(list).to_string()
}

/// `client.connect(address, params)`.
pub(crate) fn connect(st: &VuState, client: u32, addr: &str, params: &str) -> Result<bool, String> {
    if st.in_init.get() {
        return Err("connecting to a gRPC server in the init context is not supported".into());
    }
    let params: Value = serde_json::from_str(params)
        .map_err(|e| format!("invalid grpc.connect() parameters: {e}"))?;
    let mut o = DialOpts {
        target: addr.to_owned(),
        plaintext: false,
        insecure: st
            .shared
            .insecure_tls
            .load(std::sync::atomic::Ordering::Relaxed),
        cacert: String::new(),
        cert: String::new(),
        key: String::new(),
        authority: String::new(),
        servername: String::new(),
        keepalive: None,
        deadline: tokio::time::Instant::now() + Duration::from_secs(60),
    };
    let mut reflect = false;
    let mut reflect_md = Metadata::new();
    let mut protocol = Protocol::Grpc;
    let (mut max_recv, mut max_send) = (MAX_RECEIVE, usize::MAX);
    let bad = |what: String| format!("invalid grpc.connect() parameters: {what}");
    if let Some(obj) = params.as_object() {
        for (k, v) in obj {
            match k.as_str() {
                "plaintext" => {
                    o.plaintext = v
                        .as_bool()
                        .ok_or_else(|| bad("invalid plaintext value: must be a boolean".into()))?
                }
                "timeout" => {
                    let d = crate::options::value_duration(v)
                        .map_err(|e| bad(format!("invalid timeout value: {e}")))?;
                    o.deadline = tokio::time::Instant::now() + d;
                }
                "reflect" => {
                    reflect = v
                        .as_bool()
                        .ok_or_else(|| bad("invalid reflect value: must be a boolean".into()))?
                }
                "reflectMetadata" => reflect_md = metadata(v).map_err(bad)?,
                "maxReceiveSize" => {
                    max_recv =
                        size(v).map_err(|e| bad(format!("invalid maxReceiveSize value: {e}")))?
                }
                "maxSendSize" => {
                    max_send =
                        size(v).map_err(|e| bad(format!("invalid maxSendSize value: {e}")))?
                }
                "authority" => {
                    o.authority = v
                        .as_str()
                        .ok_or_else(|| bad("invalid authority value: must be a string".into()))?
                        .to_owned()
                }
                "tls" => tls(st, v, &mut o).map_err(bad)?,
                "protocol" => {
                    protocol = v.as_str().and_then(Protocol::parse).ok_or_else(|| {
                        bad(format!(
                            "invalid protocol {v}: volley takes grpc, grpc-web or connect"
                        ))
                    })?
                }
                other => return Err(bad(format!("unknown connect param: {other:?}"))),
            }
        }
    }
    let mut warnings = Vec::new();
    let dialed = st
        .block(dial(&o, &mut warnings))
        .ok_or("interrupted")?
        .map_err(|e| match e {
            volley_call::dynamic::DialError::Usage(s)
            | volley_call::dynamic::DialError::TlsConfig(s) => s,
            volley_call::dynamic::DialError::Dial(s, hint) => match hint {
                Some(h) => format!("failed to connect to {addr}: {s} ({h})"),
                None => format!("failed to connect to {addr}: {s}"),
            },
        })?;
    let conn = Conn {
        conn: dialed.conn,
        scheme: dialed.scheme,
        authority: dialed.authority,
        addr: addr.to_owned(),
        protocol,
        max_recv,
        max_send,
    };
    if reflect {
        let md = volley_call::dynamic::to_header_map(&reflect_md)?;
        let md: Vec<_> = md.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let pool = st
            .block(async {
                let services = volley_client::reflect::list_services(
                    &conn.conn,
                    conn.scheme,
                    &conn.authority,
                    &md,
                )
                .await
                .map_err(|e| format!("can't list services: {e}"))?;
                // Each service's files with their imports, added as one batch (in any order).
                let mut files: Vec<prost_types::FileDescriptorProto> = Vec::new();
                for s in services
                    .iter()
                    .filter(|s| !s.starts_with("grpc.reflection."))
                {
                    let got = volley_client::reflect::fetch_pool(
                        &conn.conn,
                        conn.scheme,
                        &conn.authority,
                        s,
                        &md,
                    )
                    .await
                    .map_err(|e| format!("can't fetch descriptor for {s}: {e}"))?;
                    for f in got.files() {
                        if !files.iter().any(|x| x.name() == f.name()) {
                            files.push(f.file_descriptor_proto().clone());
                        }
                    }
                }
                let mut pool = DescriptorPool::new();
                pool.add_file_descriptor_protos(files)
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(pool)
            })
            .ok_or("interrupted")??;
        with_client(st, client, |c| {
            c.pool = Some(Arc::new(pool));
            Ok(())
        })?;
    }
    with_client(st, client, |c| {
        c.conn = Some(conn);
        Ok(true)
    })
}

fn size(v: &Value) -> Result<usize, String> {
    v.as_f64()
        .filter(|f| *f > 0.0 && f.fract() == 0.0)
        .map(|f| f as usize)
        .ok_or_else(|| format!("{v} is not a positive whole number"))
}

/// `tls: {cert, key, password, cacerts}`: PEM texts, as `open()` gives them. The TLS loader
/// reads files (it reloads a renewed certificate from them), so the texts are written to a
/// private folder of the run's, once per distinct text.
fn tls(st: &VuState, v: &Value, o: &mut DialOpts) -> Result<(), String> {
    let obj = v
        .as_object()
        .ok_or("invalid tls value: must be an object")?;
    let text = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Array(a)) if k == "cacerts" => Ok(Some(
                a.iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_owned)
                            .ok_or("invalid tls cacerts value: must be strings")
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n"),
            )),
            Some(_) => Err(format!("invalid tls {k} value: must be a string")),
        }
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "cert" | "key" | "password" | "cacerts") {
            return Err(format!("unknown tls param: {k:?}"));
        }
    }
    if text("password")?.is_some_and(|p| !p.is_empty()) {
        return Err("invalid tls password: volley run does not read encrypted keys yet; give the key decrypted".into());
    }
    let (cert, key) = (text("cert")?, text("key")?);
    if cert.is_some() != key.is_some() {
        return Err("tls: cert and key must be given together".into());
    }
    if let Some(ca) = text("cacerts")? {
        o.cacert = st.pem_file(&ca)?;
    }
    if let (Some(cert), Some(key)) = (cert, key) {
        o.cert = st.pem_file(&cert)?;
        o.key = st.pem_file(&key)?;
    }
    Ok(())
}

/// `metadata: {key: value}` (values strings; several as an array).
fn metadata(v: &Value) -> Result<Metadata, String> {
    let mut md = Metadata::new();
    let Some(obj) = v.as_object() else {
        return Err("metadata must be an object".into());
    };
    for (k, val) in obj {
        let key = k.to_ascii_lowercase();
        let mut push = |x: &Value| -> Result<(), String> {
            match x {
                Value::String(s) => {
                    md.push((key.clone(), s.as_bytes().to_vec()));
                    Ok(())
                }
                other => Err(format!("metadata {k:?}: {other} is not a string")),
            }
        };
        match val {
            Value::Array(a) => a.iter().try_for_each(&mut push)?,
            x => push(x)?,
        }
    }
    Ok(md)
}

/// What `invoke` and `Stream` read from their params.
#[derive(Default)]
struct CallParams {
    metadata: Metadata,
    tags: Vec<(String, String)>,
    timeout: Option<Duration>,
    discard: bool,
}

fn call_params(params: &str, what: &str) -> Result<CallParams, String> {
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
                        crate::options::value_duration(v)
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
fn find_method(pool: &DescriptorPool, method: &str) -> Result<MethodDescriptor, String> {
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

fn connected(st: &VuState, client: u32) -> Result<(Conn, Arc<DescriptorPool>), String> {
    with_client(st, client, |c| {
        let conn = c
            .conn
            .clone()
            .ok_or("no gRPC connection, you must call connect first")?;
        let pool = c.pool.clone().ok_or(
            "no schema: call client.load(), client.loadProtoset() or connect with reflect: true",
        )?;
        Ok((conn, pool))
    })
}

fn head(conn: &Conn, method: &MethodDescriptor, p: &CallParams, unary: bool) -> Head {
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

fn request(desc: MessageDescriptor, body: &str) -> Result<DynamicMessage, String> {
    if body.is_empty() || body == "null" {
        return Err("request cannot be nil".into());
    }
    let mut de = serde_json::Deserializer::from_str(body);
    DynamicMessage::deserialize(desc, &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| format!("unable to serialise request object to protocol buffer: {e}"))
}

/// protojson with unpopulated fields, as k6 hands replies to scripts.
fn to_json(out: &mut String, msg: &DynamicMessage) {
    let opts = SerializeOptions::new().skip_default_fields(false);
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::new(&mut buf);
    match msg.serialize_with_options(&mut ser, &opts) {
        Ok(()) => out.push_str(std::str::from_utf8(&buf).unwrap_or("null")),
        Err(_) => out.push_str("null"),
    }
}

fn metadata_json(out: &mut String, md: &Metadata) {
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

fn status_json(out: &mut String, s: &CallStatus) {
    let _ = write!(
        out,
        "{{\"code\":{},\"message\":{},\"details\":[]}}",
        s.code,
        Value::String(s.message.clone())
    );
}

/// `client.invoke(method, request, params)`.
pub(crate) fn invoke(
    st: &VuState,
    client: u32,
    method: &str,
    body: &str,
    params: &str,
) -> Result<String, String> {
    let (conn, pool) = connected(st, client)?;
    let m = find_method(&pool, method)?;
    let p = call_params(params, "GRPC's client.invoke()")?;
    let msg = request(m.input(), body)?;
    let out_desc = m.output();
    let head = head(&conn, &m, &p, true);
    let sent = msg.encoded_len();
    if sent > conn.max_send {
        return Err(format!(
            "trying to send message larger than max ({sent} vs. {})",
            conn.max_send
        ));
    }
    let started = Instant::now();
    let done = st
        .block(async {
            let mut call = Call::open(&conn.conn, &head).await?;
            call.send(&msg, true).await?;
            let headers = call.headers().await;
            let reply = call.message().await?;
            // Read to the end: gRPC-Web and Connect carry the status after the message.
            while call.message().await?.is_some() {}
            let (status, trailers) = call.finish().await;
            Ok::<_, CallStatus>((headers, reply, status, trailers))
        })
        .ok_or("interrupted")?;
    let took = started.elapsed();
    let (headers, reply, status, trailers) = match done {
        Ok(x) => x,
        Err(s) => (Metadata::new(), None, s, Metadata::new()),
    };
    let received = reply.as_ref().map_or(0, Bytes::len);
    st.record_call(
        &conn.addr,
        &head.path,
        status.code,
        took,
        sent + 5,
        received + 5 * usize::from(received > 0),
        &p.tags,
    );
    let mut out = String::with_capacity(128 + received * 2);
    let _ = write!(out, "{{\"status\":{},\"message\":", status.code);
    if p.discard {
        out.push_str("null");
    } else {
        let msg = match reply.filter(|_| status.code == 0) {
            Some(b) => DynamicMessage::decode(out_desc.clone(), b).map_err(|e| {
                format!(
                    "unable to decode the reply as {}: {e}",
                    out_desc.full_name()
                )
            })?,
            None => DynamicMessage::new(out_desc),
        };
        to_json(&mut out, &msg);
    }
    out.push_str(",\"headers\":");
    metadata_json(&mut out, &headers);
    out.push_str(",\"trailers\":");
    metadata_json(&mut out, &trailers);
    if status.code != 0 {
        out.push_str(",\"error\":");
        status_json(&mut out, &status);
    }
    out.push('}');
    Ok(out)
}

/// `client.healthCheck(service)`: grpc.health.v1's Check, `{status}` back.
pub(crate) fn health(st: &VuState, client: u32, service: &str) -> Result<String, String> {
    let conn = with_client(st, client, |c| {
        c.conn
            .clone()
            .ok_or_else(|| "no gRPC connection, you must call connect first".to_owned())
    })?;
    let head = Head {
        scheme: conn.scheme,
        authority: conn.authority.clone(),
        path: "/grpc.health.v1.Health/Check".into(),
        metadata: Ok(http::HeaderMap::new()),
        timeout: None,
        user_agent: concat!("volley-run/", env!("CARGO_PKG_VERSION")).to_owned(),
        protocol: conn.protocol,
        max_recv: conn.max_recv,
        unary: true,
    };
    // HealthCheckRequest { string service = 1; }, written by hand: one field.
    let mut req = Vec::with_capacity(service.len() + 2);
    if !service.is_empty() {
        prost::encoding::string::encode(1, &service.to_owned(), &mut req);
    }
    let req = Bytes::from(req);
    let done = st
        .block(async {
            let mut call = Call::open(&conn.conn, &head).await?;
            call.send_encoded(req, true).await?;
            let _ = call.headers().await;
            let reply = call.message().await?;
            while call.message().await?.is_some() {}
            let (status, _) = call.finish().await;
            Ok::<_, CallStatus>((reply, status))
        })
        .ok_or("interrupted")?;
    let (reply, status) = done.map_err(|s| format!("code = {} desc = {}", s.code, s.message))?;
    if status.code != 0 {
        return Err(format!(
            "rpc error: code = {} desc = {}",
            status.code, status.message
        ));
    }
    // HealthCheckResponse { ServingStatus status = 1; }.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Reply {
        #[prost(int32, tag = "1")]
        status: i32,
    }
    let r = reply
        .map(|b| Reply::decode(b).unwrap_or_default())
        .unwrap_or_default();
    Ok(format!("{{\"status\":{}}}", r.status))
}

/// `client.close()`.
pub(crate) fn close(st: &VuState, client: u32) {
    let _ = with_client(st, client, |c| {
        c.conn = None;
        Ok(())
    });
}

/// `new grpc.Stream(client, method, params)`: opens the call in a task of the VU's runtime,
/// whose events the VU's event loop hands to the script.
pub(crate) fn stream_open(
    st: &VuState,
    client: u32,
    method: &str,
    params: &str,
) -> Result<u32, String> {
    let (conn, pool) = connected(st, client)?;
    let m = find_method(&pool, method)?;
    let p = call_params(params, "GRPC's stream")?;
    let head = head(&conn, &m, &p, false);
    let out_desc = m.output();
    let (wtx, mut wrx) = mpsc::unbounded_channel::<Option<DynamicMessage>>();
    let mut streams = st.streams.borrow_mut();
    streams.next += 1;
    let id = streams.next;
    streams.open += 1;
    streams
        .writers
        .insert(id, (wtx, m.input(), m.is_client_streaming()));
    let events = streams.tx.clone();
    drop(streams);
    st.record(id::GRPC_STREAMS, Kind::Counter, 1.0);
    st.tokio.spawn(async move {
        let send = |kind: &'static str, payload: Option<String>| {
            let _ = events.send(Event { id, kind, payload });
        };
        let mut call = match Call::open(&conn.conn, &head).await {
            Ok(c) => c,
            Err(s) => {
                let mut e = String::new();
                status_json(&mut e, &s);
                send("error", Some(e));
                send("end", None);
                return;
            }
        };
        let mut sender = call.sender();
        let writer = tokio::spawn(async move {
            while let Some(item) = wrx.recv().await {
                match item {
                    Some(msg) => {
                        if sender.send(&msg, false).await.is_err() {
                            break;
                        }
                    }
                    None => {
                        sender.close();
                        break;
                    }
                }
            }
        });
        let _ = call.headers().await;
        let mut failed = None;
        loop {
            match call.message().await {
                Ok(Some(b)) => {
                    let mut json = String::new();
                    match DynamicMessage::decode(out_desc.clone(), b) {
                        Ok(msg) => to_json(&mut json, &msg),
                        Err(e) => {
                            failed = Some(CallStatus::new(
                                13,
                                format!("unable to decode the reply: {e}"),
                            ));
                            break;
                        }
                    }
                    send("data", Some(json));
                }
                Ok(None) => break,
                Err(s) => {
                    failed = Some(s);
                    break;
                }
            }
        }
        let status = match failed {
            Some(s) => s,
            None => call.finish().await.0,
        };
        writer.abort();
        if status.code != 0 {
            let mut e = String::new();
            status_json(&mut e, &status);
            send("error", Some(e));
        }
        send("end", None);
    });
    Ok(id)
}

/// `stream.write(message)`.
pub(crate) fn stream_write(st: &VuState, id: u32, body: &str) -> Result<(), String> {
    let streams = st.streams.borrow();
    let Some((tx, desc, client_streams)) = streams.writers.get(&id) else {
        return Err("stream is closed".into());
    };
    let msg = request(desc.clone(), body)?;
    let len = msg.encoded_len();
    tx.send(Some(msg))
        .map_err(|_| "stream is closed".to_owned())?;
    if !client_streams {
        let _ = tx.send(None);
    }
    drop(streams);
    st.record(id::GRPC_STREAMS_MSGS_SENT, Kind::Counter, 1.0);
    st.record(id::DATA_SENT, Kind::Counter, (len + 5) as f64);
    Ok(())
}

/// `stream.end()`.
pub(crate) fn stream_end(st: &VuState, id: u32) {
    if let Some((tx, _, _)) = st.streams.borrow().writers.get(&id) {
        let _ = tx.send(None);
    }
}
