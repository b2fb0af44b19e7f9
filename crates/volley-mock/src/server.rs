//! `volley mock`: the services of the given protos answered from stubs on the gRPC port, GripMock's
//! admin API on a port of its own, health and reflection, no other services; until the caller's
//! stop signal (the binary's SIGINT and SIGTERM).

use std::{
    future::Future, net::SocketAddr, path::PathBuf, pin::Pin, sync::Arc, thread, time::Duration,
};

use tracing::{info, warn};
use volley_server::{Server, Service, listen::Bound};

use crate::{MockError, health, stubs::Stubs};

/// GripMock's gRPC address.
pub const DEFAULT_GRPC_ADDR: &str = "0.0.0.0:4770";
/// GripMock's admin API address.
pub const DEFAULT_ADMIN_ADDR: &str = "0.0.0.0:4771";

/// What `volley mock` serves, and where.
#[derive(Clone, Debug)]
pub struct Config {
    /// The gRPC port's address (`host:port`).
    pub grpc_addr: String,
    /// The admin API's address (`host:port`).
    pub admin_addr: String,
    /// Stub files and folders.
    pub stubs: Vec<PathBuf>,
    /// Import roots searched before the given files' folders.
    pub imports: Vec<PathBuf>,
    /// `.proto` files, folders and descriptor sets.
    pub sources: Vec<PathBuf>,
    /// Refuse stub keys GripMock ignores, rather than warn and skip them.
    pub strict: bool,
    /// How often the stub folders are looked at for changes (`None`: never).
    pub watch: Option<Duration>,
    /// Server threads (default: one per core).
    pub threads: Option<usize>,
    /// Proxy every call to an upstream and record it, rather than answer from stubs.
    pub record: Option<crate::record::Record>,
    /// The call history's byte budget (GripMock's `HISTORY_LIMIT`, 64 MiB); 0 keeps none.
    pub history: usize,
    /// The bearer token every admin API request must bear (none: GripMock's open admin API).
    pub admin_token: Option<String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            grpc_addr: DEFAULT_GRPC_ADDR.to_owned(),
            admin_addr: DEFAULT_ADMIN_ADDR.to_owned(),
            stubs: Vec::new(),
            imports: Vec::new(),
            sources: Vec::new(),
            strict: false,
            watch: Some(Duration::from_secs(1)),
            threads: None,
            record: None,
            history: 64 << 20,
            admin_token: None,
        }
    }
}

fn bind(addr: &str, what: &str) -> Result<std::net::TcpListener, MockError> {
    let l = std::net::TcpListener::bind(addr).map_err(|reason| MockError::Listen {
        at: format!("{addr} ({what})"),
        reason,
    })?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// Waits for the signal that stops the server and names it (the binary's SIGINT and SIGTERM).
pub type StopSignal = fn() -> Pin<Box<dyn Future<Output = &'static str> + Send>>;

/// Loads the protos and stubs of `cfg` and serves them until `stop` resolves, then drains.
pub fn run(cfg: Config, stop: StopSignal) -> Result<(), MockError> {
    let loaded = volley_proto::load::load_sources(&cfg.sources, &cfg.imports)?;
    if !loaded.lowered.is_empty() {
        let files: Vec<String> = loaded
            .lowered
            .iter()
            .map(|(n, e)| format!("{n} ({e})"))
            .collect();
        warn!(
            "editions: protox 0.10 and prost-reflect 0.16 take no `edition` files, so {} are \
             served as proto2 (fields keep explicit presence; features.* are dropped, so \
             message_encoding = DELIMITED fields are sent length-prefixed)",
            files.join(", ")
        );
    }
    let framework = health::pool();
    let pools = vec![loaded.pool.clone(), framework.clone()];
    let options = crate::stubs::Options {
        strict: cfg.strict,
        history: cfg.history,
        ..crate::stubs::Options::gripmock()
    };
    let stubs = Stubs::load_with(&cfg.stubs, &pools, options)?;
    info!("{} stubs loaded from {}", stubs.len(), shown(&cfg.stubs));
    if let Some(every) = cfg.watch.filter(|_| !cfg.stubs.is_empty()) {
        stubs.watch_every(every);
    }

    let mut builder = Server::builder().health(false);
    let mut names = Vec::new();
    let served: Vec<_> = loaded
        .services
        .iter()
        .filter(|s| {
            let taken =
                s.full_name() == health::SERVICE || s.full_name().starts_with("grpc.reflection.");
            if taken {
                warn!("{}: already served by volley mock; skipping", s.full_name());
            }
            !taken
        })
        .cloned()
        .collect();
    let recorder = match &cfg.record {
        Some(r) => {
            info!(
                "recording: every call goes to {}, each distinct one is written to {}",
                r.upstream,
                r.stubs_out.display()
            );
            Some(crate::record::Recorder::new(r, &served)?)
        }
        None => None,
    };
    for s in &served {
        info!("serving {}", s.full_name());
        names.push(s.full_name().to_owned());
        builder = builder.add_service(match &recorder {
            Some(r) => Service::dynamic(s, r.clone()),
            None => Service::dynamic(s, stubs.clone()),
        });
    }
    let health_desc = health::descriptor(&framework)
        .expect("volley-proto's framework pool holds grpc.health.v1.Health");
    builder = builder.add_service(Service::dynamic(
        &health_desc,
        health::Health::new(stubs.clone(), names),
    ));
    let server = Arc::new(builder.build()?);

    let grpc = bind(&cfg.grpc_addr, "gRPC")?;
    let admin = bind(&cfg.admin_addr, "admin API")?;
    let admin_at = crate::admin::serve(admin, stubs.clone(), cfg.admin_token.as_deref())?;
    let auth = match cfg.admin_token {
        Some(_) => "; every request needs `authorization: Bearer TOKEN`",
        None => "",
    };
    info!("admin API on http://{admin_at}/api (GripMock's), and /add, /find, /clear (v1's){auth}");
    if let Some(line) = crate::admin::exposure_warning(
        admin_at,
        cfg.admin_token.is_some(),
        "--admin-listen 127.0.0.1 or --admin-token",
    ) {
        warn!("{line}");
    }
    let threads = cfg
        .threads
        .unwrap_or_else(|| thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let at = grpc.local_addr()?;
    let open = match at.ip().is_loopback() {
        true => "",
        // GripMock's calls take no auth; said, as every open listener is.
        false => "; no auth, other hosts can reach it",
    };
    info!("listening on {at} (gRPC, gRPC-Web, Connect; {threads} thread(s){open})");
    serve(&server, grpc, threads, stop)
}

fn shown(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "no --stub".to_owned();
    }
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

/// Serves `listener` thread per core until `stop` resolves, then drains.
fn serve(
    server: &Arc<Server>,
    listener: std::net::TcpListener,
    threads: usize,
    stop: StopSignal,
) -> Result<(), MockError> {
    let stopped = async move {
        let which = stop().await;
        info!("received {which}, draining");
    };
    server.serve_on_threads(vec![Bound::Tcp(listener)], threads, "volley-mock", stopped)?;
    info!("stopped");
    Ok(())
}

/// Where `addr` is reached from this host: `0.0.0.0` is `127.0.0.1`, `::` is `::1`.
pub fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from(([127, 0, 0, 1], addr.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    }
}
