//! `volley serve`: the built-in services on one port, thread per core
//! (`Server::serve_on_threads`), drained together on SIGINT/SIGTERM.

use std::{net::TcpListener as StdListener, sync::Arc, thread};

use anyhow::{Context, Result};
use tokio::sync::watch;
use tracing::{info, warn};
use volley_server::{Server, auth::BearerToken, cors::Cors, metrics::Metrics, tls};
use volley_services::Options;
use volley_telemetry::{ExportOptions, Exporter, OtlpProtocol, ServerTracing};

use volley_server::listen::{Bound, SocketFiles};

use crate::cli::{ServeArgs, ServerFlags};

/// Runs the server until a signal, then drains and returns.
pub fn run(mut args: ServeArgs) -> Result<()> {
    args.proto.append(&mut args.protos);
    let listening = Listening::bind(&args.server)?;

    let mut builder = if args.no_builtin {
        if args.proto.is_empty() && args.protoset.is_empty() {
            anyhow::bail!("--no-builtin leaves nothing to serve: give --proto or --protoset");
        }
        Server::builder()
    } else {
        builtin(Options {
            delay: args.delay,
            work: args.work,
        })
    };
    let defaults = volley_mock::Defaults {
        stream_messages: args.stream_messages,
        delay: args.delay,
    };
    let pools = volley_mock::pools(&args.proto, &args.import_paths, &args.protoset)?;
    let services = if pools.is_empty() {
        if !args.stubs.is_empty() || args.admin_addr.is_some() {
            anyhow::bail!("stubs answer the services of a .proto: give --proto or --protoset");
        }
        Vec::new()
    } else {
        let stubs = volley_mock::Stubs::load(&args.stubs, &pools, defaults)?;
        if !args.stubs.is_empty() {
            info!(
                "{} stubs loaded; their files are reread when they change",
                stubs.len()
            );
            stubs.watch();
        }
        if let Some(addr) = args.admin_addr {
            let token = args.server.require_token.as_deref();
            let bound = volley_mock::admin::start(addr, stubs.clone(), token)?;
            info!("stubs admin API on http://{bound}/ (GET /, POST /add, POST /find, GET /clear)");
            if let Some(line) = volley_mock::admin::exposure_warning(
                bound,
                token.is_some(),
                "--require-token or a loopback --admin-addr",
            ) {
                warn!("{line}");
            }
        }
        builder = volley_mock::admin::mount(builder, &stubs);
        volley_mock::services(&pools, &args.proto, &args.protoset, &stubs)?
    };
    for s in services {
        info!("serving {} from its descriptor", s.name());
        builder = builder.add_service(s);
    }
    // The REST rules' OpenAPI document at GET /openapi.json.
    builder = builder.openapi("volley serve");
    let exposes = if pools.is_empty() {
        ""
    } else {
        " and change the stubs (the admin API)"
    };
    serve(builder, &args.server, listening, exposes, "volley-serve")
}

/// The ports a server listens on, bound before anything slower is loaded (a taken port fails
/// at once); their Unix sockets' files are removed when this is dropped.
pub struct Listening {
    listeners: Vec<Bound>,
    socket_files: SocketFiles,
}

impl Listening {
    /// Binds `--addr` and `--http-addr` (and raises the open-file limit first).
    pub fn bind(flags: &ServerFlags) -> Result<Listening> {
        if let Some(n) = volley_server::fds::raise_open_files() {
            tracing::debug!("open-file limit {n}");
        }
        let mut socket_files = SocketFiles::default();
        let mut listeners = Vec::new();
        for addr in std::iter::once(&flags.addr).chain(flags.http_addr.as_ref()) {
            listeners.push(Bound::bind(addr, &mut socket_files)?);
        }
        Ok(Listening {
            listeners,
            socket_files,
        })
    }
}

/// Serves `builder`'s services on `listening` under the server flags (limits, metrics, traces,
/// CORS, token, TLS with reloads) until a signal, then drains. `exposes` finishes the warning
/// for a port others reach without auth (what else they could do besides calling); `name`
/// names the threads and the traces' service.
pub fn serve(
    mut builder: volley_server::ServerBuilder,
    args: &ServerFlags,
    listening: Listening,
    exposes: &str,
    name: &str,
) -> Result<()> {
    let Listening {
        listeners,
        socket_files,
    } = listening;
    builder = builder
        .send_compressed(args.compress)
        .max_concurrent_streams(args.max_concurrent_streams)
        .max_recv_message_size(args.max_recv_message_size)
        .grace_period(args.grace_period)
        .handshake_timeout(args.handshake_timeout)
        .keepalive((!args.keepalive.is_zero()).then_some(args.keepalive))
        .also_plaintext(args.also_plaintext);
    // Metrics and traces first: they see the calls the token check refuses, too.
    if args.metrics {
        builder = builder.metrics(Metrics::new());
    }
    let _exporter = match &args.otlp_endpoint {
        Some(url) => {
            // The flags over the environment (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL and
            // _CERTIFICATE, read by from_env).
            let mut opts = ExportOptions::from_env(url, name)?;
            if let Some(p) = &args.otlp_protocol {
                opts.protocol = OtlpProtocol::parse(p)?;
            }
            if let Some(ca) = &args.otlp_cacert {
                opts.cacert = Some(ca.clone());
            }
            let e = Exporter::start_with(opts)?;
            info!("exporting a span per call to {}", e.url());
            builder = builder.intercept(ServerTracing);
            Some(e)
        }
        None => None,
    };
    if !args.cors_origin.is_empty() {
        let mut cors = Cors::new()
            .allow_headers(&args.cors_header)
            .expose_headers(&args.cors_header);
        for origin in &args.cors_origin {
            cors = cors.allow_origin(origin);
        }
        builder = builder.cors(cors);
    }
    if let Some(token) = &args.require_token {
        let mut check = BearerToken::new(token);
        for path in &args.open_endpoint {
            check = check.open_endpoint(path);
        }
        builder = builder.intercept(check);
    }
    builder = builder.max_connections(
        args.max_connections
            .map(|m| usize::try_from(m).unwrap_or(usize::MAX)),
    );
    builder = builder.max_connection_idle(Some(args.max_connection_idle).filter(|d| !d.is_zero()));
    builder = builder.ping_min_interval(Some(args.ping_min_interval).filter(|d| !d.is_zero()));
    if let Some(max) = args.max_in_flight {
        builder = builder.max_in_flight(usize::try_from(max).unwrap_or(usize::MAX));
    }
    let mut mode = "h2c";
    let mut reloading = None;
    // The certificate and key: the user's, or a local CA's made now. Either way a client CA
    // (--tls-client-ca) asks every handshake for a client certificate it signed.
    let files = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
        _ if args.tls_self_signed => {
            let dir = args.tls_dir.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("volley-tls-{}", std::process::id()))
            });
            let files = tls::generate_self_signed(&dir)?;
            info!("wrote CA certificate to {}", files.ca.display());
            Some((files.cert, files.key))
        }
        _ => None,
    };
    if let Some((cert, key)) = files {
        let (r, config, loaded) = tls::Reloading::load(tls::TlsFiles {
            cert: cert.clone(),
            key,
            client_ca: args.tls_client_ca.clone(),
        })?;
        info!("serving the TLS certificate {} ({loaded})", cert.display());
        builder = builder.tls(config);
        mode = if args.tls_client_ca.is_some() {
            "mutual TLS"
        } else {
            "TLS"
        };
        reloading = Some(r);
    } else if args.tls_client_ca.is_some() {
        anyhow::bail!(
            "--tls-client-ca needs TLS: add --tls-cert and --tls-key, or --tls-self-signed"
        );
    }
    if mode != "h2c" && args.also_plaintext {
        mode = if mode == "TLS" {
            "TLS and h2c"
        } else {
            "mutual TLS and h2c"
        };
    }
    // Renewed certificates: the files are looked at every interval, and reread on SIGHUP.
    let _watcher = match &reloading {
        Some(r) if !args.tls_reload_interval.is_zero() => Some(r.watch(args.tls_reload_interval)?),
        _ => None,
    };
    let server = Arc::new(builder.build()?);
    let threads = args
        .threads
        .unwrap_or_else(|| thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);

    for (i, l) in listeners.iter().enumerate() {
        let what = match (i, args.metrics) {
            (0, false) => "gRPC, gRPC-Web, Connect",
            (0, true) => "gRPC, gRPC-Web, Connect, GET /metrics",
            (_, false) => "HTTP (--http-addr): gRPC, gRPC-Web, Connect, GET /",
            (_, true) => "HTTP (--http-addr): gRPC, gRPC-Web, Connect, GET /, GET /metrics",
        };
        // Who can call, said once and before the address (which tells a watcher the server is
        // up): a port other hosts reach with neither a token nor client certificates (h2c
        // beside mutual TLS lets them in without one).
        let authenticated =
            args.require_token.is_some() || (args.tls_client_ca.is_some() && !args.also_plaintext);
        if l.reachable_from_other_hosts() && !authenticated {
            warn!(
                "{} needs no token and other hosts can reach it: anyone who can connect may \
                 call every method{}; --require-token, --tls-client-ca or a loopback --addr \
                 closes it",
                l.local()?,
                exposes
            );
        }
        info!(
            "listening on {} ({what}; {mode}, {threads} thread(s))",
            l.local()?
        );
    }
    if let Some(r) = reloading {
        crate::signal::on_each_hangup(move || r.log(&r.reload(), "SIGHUP"));
    }
    let signals = async {
        let which = crate::signal::next().await;
        info!("received {which}, draining");
    };
    server.serve_on_threads(listeners, threads, name, signals)?;
    drop(socket_files);
    info!("stopped");
    Ok(())
}

/// A server builder with every built-in service; each brings its descriptors (reflection,
/// Connect/JSON and REST need no separate registration).
pub fn builtin(opts: Options) -> volley_server::ServerBuilder {
    let mut builder = Server::builder();
    for s in volley_services::all(opts) {
        builder = builder.add_service(s);
    }
    for (method, rule) in volley_services::rest::http_rules() {
        builder = builder.http_rule(method, rule);
    }
    builder
}

/// Keeps an in-process server alive; dropping it stops the server.
pub struct Embedded {
    stop: Option<watch::Sender<bool>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the built-in services, and `extra` ones (a `--proto`'s), on a free loopback port, on a
/// thread of their own.
pub fn start_embedded(
    extra: Vec<volley_server::Service>,
) -> Result<(std::net::SocketAddr, Embedded)> {
    let listener = StdListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let mut builder = builtin(Options::default());
    for s in extra {
        builder = builder.add_service(s);
    }
    let server = Arc::new(
        builder
            .grace_period(std::time::Duration::from_secs(1))
            .build()?,
    );
    let (tx, mut rx) = watch::channel(false);
    let thread = thread::Builder::new()
        .name("volley-embedded".into())
        .spawn(move || {
            let stopped = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            let _ =
                server.serve_on_threads(vec![Bound::Tcp(listener)], 1, "volley-embedded", stopped);
        })?;
    Ok((
        addr,
        Embedded {
            stop: Some(tx),
            thread: Some(thread),
        },
    ))
}
