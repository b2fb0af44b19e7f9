//! The target section: where the calls go (the host, or an `http(s)://` URL), what they call
//! (`--call`, a mix), the schema, TLS, and the connection's settings.

use std::{path::PathBuf, time::Duration};

use serde_json::{Map, Value};
use volley_call::dynamic::Protocol;

use crate::plan::{
    PlanError, SchemaSource,
    args::BenchArgs,
    flags::Flags,
    mix::{self, MixSpec},
};

/// What the target section resolves to.
pub(super) struct TargetPart {
    pub(super) host: Option<String>,
    pub(super) http_mode: bool,
    pub(super) call: String,
    pub(super) mix: Vec<MixSpec>,
    pub(super) schema: SchemaSource,
    /// Import paths as the report lists them (the proto's directory and `.` added).
    pub(super) report_import_paths: Vec<String>,
    pub(super) proto: Option<PathBuf>,
    pub(super) protoset: Option<PathBuf>,
    pub(super) insecure: bool,
    pub(super) skip_tls: bool,
    pub(super) cacert: Option<PathBuf>,
    pub(super) cert: Option<PathBuf>,
    pub(super) key: Option<PathBuf>,
    pub(super) cname: Option<String>,
    pub(super) authority: Option<String>,
    pub(super) connect_timeout: Duration,
    pub(super) keepalive: Option<Duration>,
    pub(super) max_recv: usize,
    pub(super) max_send: usize,
    pub(super) gzip: bool,
    pub(super) protocol: Option<Protocol>,
}

/// Resolves the target section, taking its options from `f`.
pub(super) fn target(
    a: &BenchArgs,
    cfg: &Map<String, Value>,
    f: &mut Flags,
) -> Result<TargetPart, PlanError> {
    let host = f.host.take();
    let http_mode = host
        .as_deref()
        .is_some_and(|h| h.starts_with("http://") || h.starts_with("https://"));
    let (call, mix) = calls_and_mix(a, cfg, f.call.take(), http_mode)?;

    let (proto, protoset) = (f.proto.take(), f.protoset.take());
    let mut import_paths = f.import_paths.take().unwrap_or_default();
    import_paths.retain(|p| !p.is_empty());
    let schema = match (&proto, &protoset) {
        (Some(p), _) => {
            SchemaSource::Proto(p.clone(), import_paths.iter().map(PathBuf::from).collect())
        }
        (None, Some(s)) => SchemaSource::Protoset(s.clone()),
        (None, None) => SchemaSource::Reflection,
    };
    let mut report_import_paths = import_paths.clone();
    if let Some(p) = &proto {
        let dir = p
            .parent()
            .map(|d| clean(&d.display().to_string()))
            .unwrap_or_default();
        report_import_paths.push(if dir.is_empty() { ".".into() } else { dir });
        report_import_paths.push(".".into());
    }

    let insecure = f.insecure.take().unwrap_or(false);
    let skip_tls = f.skip_tls.take().unwrap_or(false);
    let (cacert, cert, key) = (f.cacert.take(), f.cert.take(), f.key.take());
    if insecure && (cacert.is_some() || cert.is_some() || key.is_some()) {
        bail!("--insecure turns TLS off; it conflicts with --cacert, --cert and --key");
    }
    if cert.is_some() != key.is_some() {
        bail!("--cert and --key go together");
    }
    if host.is_some() && !a.stubs.is_empty() {
        bail!("--stubs answer an in-process server: give no host with them");
    }
    Ok(TargetPart {
        host,
        http_mode,
        call,
        mix,
        schema,
        report_import_paths,
        proto,
        protoset,
        insecure,
        skip_tls,
        cacert,
        cert,
        key,
        cname: f.cname.take(),
        authority: f.authority.take(),
        connect_timeout: f.connect_timeout.take().unwrap_or(Duration::from_secs(10)),
        keepalive: f.keepalive.take().filter(|d| !d.is_zero()),
        max_recv: f.max_recv_message_size.take().unwrap_or(i32::MAX as usize),
        max_send: f.max_send_message_size.take().unwrap_or(i32::MAX as usize),
        gzip: f.enable_compression.take().unwrap_or(false),
        protocol: match a.protocol.as_deref() {
            None | Some("grpc") => None,
            Some(p) => Some(Protocol::parse(p).ok_or_else(|| {
                PlanError::new(format!(
                    "--protocol {p:?}: expected grpc, grpc-web or connect"
                ))
            })?),
        },
    })
}

/// Go's `filepath.Clean`: lexical `.`/`..` removal (ghz reports the proto's directory so).
pub(super) fn clean(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            ".." if abs => {}
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (abs, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The run's `call` and, for a mix, its entries: `--call` flags win over a scenario's `mix:`,
/// which may not sit beside a `call` key.
fn calls_and_mix(
    a: &BenchArgs,
    cfg: &Map<String, Value>,
    calls: Option<Vec<String>>,
    http_mode: bool,
) -> Result<(String, Vec<MixSpec>), PlanError> {
    let of_calls = |calls: &[String]| -> Result<(String, Vec<MixSpec>), PlanError> {
        Ok(match mix::from_calls(calls)? {
            None => (calls[0].clone(), Vec::new()),
            Some(m) => (mix::describe(&m), m),
        })
    };
    let (call, mix) = match (a.call.is_empty(), cfg.get("mix").filter(|v| !v.is_null())) {
        (true, Some(v)) => {
            if cfg.get("call").is_some_and(|c| !c.is_null()) {
                bail!("the scenario gives both call and mix: give the mix alone");
            }
            let base = a
                .scenario
                .as_deref()
                .or(a.config.as_deref())
                .and_then(std::path::Path::parent)
                .unwrap_or(std::path::Path::new("."));
            let m = mix::from_config(v, base)?;
            (mix::describe(&m), m)
        }
        _ => match calls {
            Some(c) => of_calls(&c)?,
            None if http_mode => (String::new(), Vec::new()),
            None => bail!("--call is required (package.Service/Method)"),
        },
    };
    if http_mode && !mix.is_empty() {
        bail!(
            "a mix calls gRPC methods on HOST:PORT (its http entries name their URLs): give the host without http://"
        );
    }
    Ok((call, mix))
}
