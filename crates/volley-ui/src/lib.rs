//! volley-ui: `volley ui`, grpcui's web form for calling gRPC methods. A grpcui command line
//! works with `volley ui` in grpcui's place (or the binary run as `grpcui`): the same flags, the
//! same banner, the same page endpoints (`GET /metadata`, `POST /invoke/` with its CSRF
//! token), so scripts written against grpcui's endpoints work; calls go over gRPC, gRPC-Web or
//! Connect (`-protocol`).
//!
//! Layout, from the command line down:
//! - `args`: grpcui's flags and checks;
//! - `state`: the schema, the methods offered, the target's connection;
//! - `server`: the page's HTTP routes, CSRF and token;
//! - `schema` (`/metadata`) and `invoke` (`/invoke/`), grpcui's JSON shapes; `stream`
//!   (`/stream/`), streams sent and read live, volley's own;
//! - `web/`: the page itself (HTML, JavaScript, CSS; no build step, embedded in the binary).
//!
//! Beside it, [`dashboard`]: the live page of a `volley bench` run (`--dashboard`).

mod args;
pub mod dashboard;
mod invoke;
mod schema;
mod server;
mod state;
mod stream;

use std::{future::Future, sync::Arc, time::Duration};

pub use args::{UiArgs, go_style};
use prost_reflect::DescriptorPool;
use volley_call::dynamic::{DialOpts, Protocol};

/// Why the UI could not start: one line.
pub type UiError = String;

/// The schema: the files given, or the target's reflection.
async fn schema(a: &UiArgs, o: &DialOpts, timeout: Duration) -> Result<DescriptorPool, UiError> {
    let strings = |v: &[std::path::PathBuf]| -> Vec<String> {
        v.iter().map(|p| p.display().to_string()).collect()
    };
    if !a.protoset.is_empty() {
        return volley_call::dynamic::load_protosets(&strings(&a.protoset));
    }
    if !a.proto.is_empty() {
        return volley_call::dynamic::compile_protos(&strings(&a.proto), &strings(&a.import_path));
    }
    let conn = state::connect(o, timeout).await?;
    let md = args::pairs(&a.header, "-H")?
        .into_iter()
        .chain(args::pairs(&a.reflect_header, "-reflect-header")?)
        .filter_map(|(n, v)| {
            Some((
                http::HeaderName::try_from(n.to_ascii_lowercase()).ok()?,
                http::HeaderValue::try_from(v).ok()?,
            ))
        })
        .collect::<Vec<_>>();
    volley_client::reflect::fetch_all(&conn.conn, conn.scheme, &conn.authority, &md)
        .await
        .map_err(|e| format!("Failed to compute set of methods to expose: {e}"))
}

/// Runs `volley ui` until `stop` resolves: loads the schema, binds the page's port, prints
/// grpcui's banner, serves.
pub fn run(a: UiArgs, stop: impl Future<Output = ()> + Send) -> Result<(), UiError> {
    a.check()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(serve(a, stop))
}

async fn serve(a: UiArgs, stop: impl Future<Output = ()> + Send) -> Result<(), UiError> {
    let connect_timeout =
        args::seconds(a.connect_timeout, "-connect-timeout")?.unwrap_or(Duration::from_secs(10));
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    let dial = DialOpts {
        target: a.address.clone(),
        plaintext: a.plaintext,
        insecure: a.insecure,
        cacert: s(&a.cacert),
        cert: s(&a.cert),
        key: s(&a.key),
        authority: s(&a.authority),
        servername: s(&a.servername),
        keepalive: args::seconds(a.keepalive_time, "-keepalive-time")?,
        deadline: tokio::time::Instant::now() + connect_timeout,
    };
    let pool = schema(&a, &dial, connect_timeout).await?;
    let wanted = |svc: &str, m: &str| {
        (a.service.is_empty() && a.method.is_empty())
            || a.service.iter().any(|x| x == svc)
            || a.method
                .iter()
                .any(|x| x.replace('/', ".") == format!("{svc}.{m}"))
    };
    let methods: Vec<_> = pool
        .services()
        .filter(|s| !s.full_name().starts_with("grpc.reflection."))
        .flat_map(|s| s.methods().collect::<Vec<_>>())
        .filter(|m| wanted(m.parent_service().full_name(), m.name()))
        .collect();
    if methods.is_empty() {
        return Err("No services or methods to expose (see -service and -method)".into());
    }
    let rpc_headers = args::pairs(&a.header, "-H")?
        .into_iter()
        .chain(args::pairs(&a.rpc_header, "-rpc-header")?)
        .collect();
    let protocol = Protocol::parse(&a.protocol).unwrap_or(Protocol::Grpc);
    let ui = Arc::new(state::Ui {
        pool,
        methods,
        dial,
        connect_timeout,
        protocol,
        rpc_headers,
        default_headers: args::pairs(&a.default_header, "-default-header")?,
        max_time: args::seconds(a.max_time, "-max-time")?,
        max_recv: a.max_msg_sz.unwrap_or(4 << 20),
        emit_defaults: a.emit_defaults,
        target: a.address.clone(),
        conn: tokio::sync::Mutex::new(None),
    });
    let listener = tokio::net::TcpListener::bind((a.bind.as_str(), a.port))
        .await
        .map_err(|e| format!("Failed to listen on port {}: {e}", a.port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let url = format!("http://{}:{port}/", a.bind);
    let token: Option<Arc<str>> = a
        .ui_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(Arc::from);
    println!("gRPC Web UI available at {url}");
    if let Some(t) = &token {
        println!("with its token: {url}?token={t}");
    } else if !listener.local_addr().is_ok_and(|l| l.ip().is_loopback()) {
        tracing::warn!(
            "the page on {url} needs no token and other hosts can reach it: anyone who can \
             connect may call {} as this host; --ui-token or -bind 127.0.0.1 closes it",
            a.address
        );
    }
    if a.open_browser {
        let _ = std::process::Command::new("xdg-open").arg(&url).spawn();
    }
    let streams = Arc::new(stream::Streams::default());
    volley_server::side::SideServer::new("volley-ui")
        .max_body(16 << 20)
        .serve(
            listener,
            move |req| server::respond(ui.clone(), streams.clone(), token.clone(), req),
            stop,
        )
        .await;
    Ok(())
}
