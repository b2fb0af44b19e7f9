//! A VU's `grpc.Client`s: schemas (`load`, `loadProtoset`, reflection at `connect`), the
//! connection (`connect` with k6's params: plaintext or TLS from PEM texts, timeout,
//! authority, message sizes, volley's `protocol`), `close`.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use prost_reflect::{DescriptorPool, MethodDescriptor};
use serde_json::Value;
use volley_call::dynamic::{DialOpts, Metadata, Protocol, dial};

use super::host::{Client, Conn, Host};

/// The largest reply k6 takes unless `maxReceiveSize` says otherwise (grpc-go's default).
const MAX_RECEIVE: usize = 4 * 1024 * 1024;

/// `new grpc.Client()`: its handle.
pub(crate) fn new_client(st: &impl Host) -> u32 {
    let mut clients = st.clients().borrow_mut();
    clients.push(Client::default());
    (clients.len() - 1) as u32
}

pub(super) fn with_client<T>(
    st: &impl Host,
    id: u32,
    f: impl FnOnce(&mut Client) -> Result<T, String>,
) -> Result<T, String> {
    let mut clients = st.clients().borrow_mut();
    let c = clients.get_mut(id as usize).ok_or("not a grpc.Client")?;
    f(c)
}

/// `client.load(importPaths, ...files)`: init context only, as in k6.
pub(crate) fn load(
    st: &impl Host,
    client: u32,
    paths: &str,
    files: &str,
) -> Result<String, String> {
    if !st.in_init() {
        return Err("load must be called in the init context".into());
    }
    let paths: Vec<String> =
        serde_json::from_str(paths).map_err(|e| format!("load: import paths: {e}"))?;
    let files: Vec<String> =
        serde_json::from_str(files).map_err(|e| format!("load: files: {e}"))?;
    if files.is_empty() {
        return Err("load: no .proto file given".into());
    }
    let dir = &st.shared().dir;
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
    let pool = st.shared().schema(&key, || {
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
pub(crate) fn load_protoset(st: &impl Host, client: u32, path: &str) -> Result<String, String> {
    if !st.in_init() {
        return Err("load must be called in the init context".into());
    }
    let path = st
        .shared()
        .dir
        .join(path.strip_prefix("file://").unwrap_or(path));
    let key = format!("protoset\0{}", path.display());
    let pool = st.shared().schema(&key, || {
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
pub(crate) fn connect(
    st: &impl Host,
    client: u32,
    addr: &str,
    params: &str,
) -> Result<bool, String> {
    if st.in_init() {
        return Err("connecting to a gRPC server in the init context is not supported".into());
    }
    let params: Value = serde_json::from_str(params)
        .map_err(|e| format!("invalid grpc.connect() parameters: {e}"))?;
    let mut o = DialOpts {
        target: addr.to_owned(),
        plaintext: false,
        insecure: st
            .shared()
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
    // volley's own: connections per address, and every address of a name (`lb: 'round_robin'`).
    let mut connections = 1usize;
    let mut round_robin = false;
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
                    let d = crate::duration::value_duration(v)
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
                "connections" => {
                    connections = size(v)
                        .ok()
                        .filter(|n| *n <= MAX_CONNECTIONS)
                        .ok_or_else(|| {
                            bad(format!(
                                "invalid connections value {v}: a whole number from 1 to {MAX_CONNECTIONS}"
                            ))
                        })?
                }
                "lb" => {
                    round_robin = match v.as_str() {
                        Some("round_robin") => true,
                        Some("pick_first") => false,
                        _ => {
                            return Err(bad(format!(
                                "invalid lb value {v}: volley takes round_robin or pick_first"
                            )));
                        }
                    }
                }
                other => return Err(bad(format!("unknown connect param: {other:?}"))),
            }
        }
    }
    let targets = if round_robin {
        addresses(st, addr)?
    } else {
        vec![addr.to_owned()]
    };
    let mut pool = Vec::with_capacity(targets.len() * connections);
    let mut first = None;
    for target in &targets {
        for _ in 0..connections {
            let mut o = o.clone();
            if target != addr && o.authority.is_empty() {
                // An address of the name: the name stays the authority and the TLS server name.
                o.authority = addr.to_owned();
            }
            o.target = target.clone();
            let mut warnings = Vec::new();
            let dialed = st
                .block(dial(&o, &mut warnings))
                .ok_or("interrupted")?
                .map_err(|e| match e {
                    volley_call::dynamic::DialError::Usage(s)
                    | volley_call::dynamic::DialError::TlsConfig(s) => s,
                    volley_call::dynamic::DialError::Dial(s, hint) => match hint {
                        Some(h) => format!("failed to connect to {target}: {s} ({h})"),
                        None => format!("failed to connect to {target}: {s}"),
                    },
                })?;
            pool.push(dialed.conn.clone());
            first.get_or_insert(dialed);
        }
    }
    let dialed = first.ok_or_else(|| format!("failed to connect to {addr}: no address"))?;
    let conn = Conn {
        pool: pool.into(),
        next: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
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

/// The most connections one client opens to an address (`connections`).
const MAX_CONNECTIONS: usize = 64;

/// Every address `addr`'s name resolves to, as `ip:port` (`lb: 'round_robin'`).
fn addresses(st: &impl Host, addr: &str) -> Result<Vec<String>, String> {
    let found = st
        .block(tokio::net::lookup_host(addr.to_owned()))
        .ok_or("interrupted")?
        .map_err(|e| format!("failed to connect to {addr}: cannot resolve it: {e}"))?;
    let mut list: Vec<String> = found.map(|a| a.to_string()).collect();
    list.sort_unstable();
    list.dedup();
    if list.is_empty() {
        return Err(format!("failed to connect to {addr}: no address"));
    }
    Ok(list)
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
fn tls(st: &impl Host, v: &Value, o: &mut DialOpts) -> Result<(), String> {
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
pub(super) fn metadata(v: &Value) -> Result<Metadata, String> {
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

/// `client.close()`.
pub(crate) fn close(st: &impl Host, client: u32) {
    let _ = with_client(st, client, |c| {
        c.conn = None;
        Ok(())
    });
}
