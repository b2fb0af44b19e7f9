//! A volley server's own flags (listening, TLS, limits, auth, metrics, traces, CORS) and its run
//! under them until a signal: what `volley serve` and `volley gateway` share, whatever they
//! serve.

use std::{
    path::PathBuf,
    sync::{Arc, mpsc},
    thread,
    time::Duration,
};

use anyhow::Result;
use clap::Args;
use tracing::{info, warn};
use volley_bench::plan::units::{parse_duration, parse_size};
use volley_server::{
    Server,
    auth::BearerToken,
    cors::Cors,
    listen::{Bound, SocketFiles},
    metrics::Metrics,
    tls,
};
use volley_telemetry::{ExportOptions, Exporter, OtlpProtocol, ServerTracing};

/// How a volley server listens and guards its port: `volley serve`'s flags that are not about
/// what it serves, so `volley gateway` takes them too.
#[derive(Debug, Args)]
pub struct ServerFlags {
    /// Address to listen on: host:port (port 0 picks a free port; the log line says which), or
    /// unix:/path for a Unix socket (its file is removed at exit; a stale one is replaced).
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub addr: volley_server::listen::ListenAddr,

    /// Also listen here, with every protocol as on --addr (seed 001's setup: HTTP on 9501 beside
    /// gRPC on 9503).
    #[arg(long, value_name = "ADDR")]
    pub http_addr: Option<volley_server::listen::ListenAddr>,

    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key", value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key for --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,

    /// With --tls-cert or --tls-self-signed, require client certificates signed by this PEM CA
    /// (mutual TLS).
    #[arg(long, value_name = "PEM")]
    pub tls_client_ca: Option<PathBuf>,

    /// How often to look at --tls-cert, --tls-key and --tls-client-ca for a change (a renewed
    /// certificate is served from the next handshake, open connections carry on; 0: only on
    /// SIGHUP, which always rereads them).
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub tls_reload_interval: Duration,

    /// Serve TLS with a freshly generated local CA and certificate (localhost, 127.0.0.1, ::1);
    /// the log says where the CA was written.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: bool,

    /// Where --tls-self-signed writes ca.pem, server.pem and server.key (default: a new temp dir).
    #[arg(long, requires = "tls_self_signed", value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,

    /// With TLS, also accept plaintext h2c on the same port.
    #[arg(long)]
    pub also_plaintext: bool,

    /// Compress replies with gzip when the client accepts it.
    #[arg(long)]
    pub compress: bool,

    /// SETTINGS_MAX_CONCURRENT_STREAMS per connection.
    #[arg(long, default_value_t = volley_server::server_defaults::MAX_CONCURRENT_STREAMS)]
    pub max_concurrent_streams: u32,

    /// Largest request message accepted (e.g. 4MiB); larger ones get RESOURCE_EXHAUSTED.
    #[arg(long, value_parser = parse_size, default_value = "4MiB")]
    pub max_recv_message_size: usize,

    /// Time a new connection has to send its protocol preface (plaintext) or finish its TLS
    /// handshake; silent peers are closed after it.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub handshake_timeout: Duration,

    /// Time in-flight calls get to finish after SIGINT/SIGTERM.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub grace_period: Duration,

    /// HTTP/2 keepalive PING interval (0: off).
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub keepalive: Duration,

    /// Threads serving connections, each with its own single-threaded runtime (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,

    /// Record gRPC's A66 metrics for every call and serve them at GET /metrics on this port
    /// (OpenMetrics text, for Prometheus or `volley bench --server-metrics`).
    #[arg(long)]
    pub metrics: bool,

    /// Keep at most this many connections open: one more is accepted, sent GOAWAY ("too many
    /// connections") and closed, while the open ones are unaffected.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,

    /// Send GOAWAY to a connection that has had no call open for this long (e.g. 5m), as
    /// grpc-go's MaxConnectionIdle (0: never).
    #[arg(long, value_parser = parse_duration, default_value = "0", value_name = "DURATION")]
    pub max_connection_idle: Duration,

    /// Police client PINGs on connections with no call open: pings closer together than this
    /// are strikes, and the third gets GOAWAY ENHANCE_YOUR_CALM, as grpc-go's keepalive
    /// enforcement (MinTime) does (0: off).
    #[arg(long, value_parser = parse_duration, default_value = "5m", value_name = "DURATION")]
    pub ping_min_interval: Duration,

    /// Refuse calls beyond this many in flight at once, server-wide, with RESOURCE_EXHAUSTED
    /// before their body is read (load shedding: the accepted calls keep their latency under
    /// overload); health checks and reflection are never refused.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: Option<u64>,

    /// Refuse calls without `authorization: Bearer TOKEN` (UNAUTHENTICATED, before their body is
    /// read), and every page beside them too (the stubs' admin API, here and on --admin-addr,
    /// GET /metrics, GET /: 401); health checks and reflection stay open.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "VOLLEY_REQUIRE_TOKEN",
        hide_env_values = true
    )]
    pub require_token: Option<String>,

    /// Serve this page without --require-token's token (its exact path, e.g. /metrics for a
    /// scraper that sends none; repeatable).
    #[arg(long, value_name = "PATH", requires = "require_token")]
    pub open_endpoint: Vec<String>,

    /// Trace every call (a span each, continuing the caller's W3C `traceparent`) and export the
    /// spans over OTLP to this collector: its base URL, e.g. http://127.0.0.1:4318 (OTLP/HTTP)
    /// or http://127.0.0.1:4317 with --otlp-protocol grpc; https:// for TLS.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// OTLP's transport: http/protobuf (POST /v1/traces) or grpc (TraceService/Export, through
    /// volley's own client) [default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
    /// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf].
    #[arg(long, value_name = "PROTOCOL", value_parser = ["http/protobuf", "grpc"], requires = "otlp_endpoint")]
    pub otlp_protocol: Option<String>,

    /// A PEM CA that signs an https:// collector's certificate [default:
    /// OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE or OTEL_EXPORTER_OTLP_CERTIFICATE, else the
    /// system's roots].
    #[arg(long, value_name = "FILE", requires = "otlp_endpoint")]
    pub otlp_cacert: Option<std::path::PathBuf>,

    /// Let web pages on this origin call the server over gRPC-Web and Connect (CORS), e.g.
    /// http://localhost:5173; repeatable; `*` for any origin.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,

    /// With --cors-origin: a metadata key pages may send and read besides the protocols' own
    /// (repeatable).
    #[arg(long, value_name = "NAME", requires = "cors_origin")]
    pub cors_header: Vec<String>,
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
/// names the threads and the traces' service. With `next`, each builder that arrives replaces
/// the services served (`volley gateway`'s reloaded descriptors): the new server starts on the
/// same sockets, then the old one drains, so no connection is refused in between.
pub fn serve(
    builder: volley_server::ServerBuilder,
    args: &ServerFlags,
    listening: Listening,
    exposes: &str,
    name: &str,
    next: Option<mpsc::Receiver<volley_server::ServerBuilder>>,
) -> Result<()> {
    let Listening {
        listeners,
        socket_files,
    } = listening;
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
            Some(e)
        }
        None => None,
    };
    let mut mode = "h2c";
    let mut reloading = None;
    let mut tls_config = None;
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
        tls_config = Some(config);
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
    // One instance across reloads: the counters go on.
    let metrics = args.metrics.then(Metrics::new);
    let traced = _exporter.is_some();
    let configure = move |mut builder: volley_server::ServerBuilder| {
        builder = builder
            .send_compressed(args.compress)
            .max_concurrent_streams(args.max_concurrent_streams)
            .max_recv_message_size(args.max_recv_message_size)
            .grace_period(args.grace_period)
            .handshake_timeout(args.handshake_timeout)
            .keepalive((!args.keepalive.is_zero()).then_some(args.keepalive))
            .also_plaintext(args.also_plaintext);
        // Metrics and traces first: they see the calls the token check refuses, too.
        if let Some(m) = &metrics {
            builder = builder.metrics(m.clone());
        }
        if traced {
            builder = builder.intercept(ServerTracing);
        }
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
        builder =
            builder.max_connection_idle(Some(args.max_connection_idle).filter(|d| !d.is_zero()));
        builder = builder.ping_min_interval(Some(args.ping_min_interval).filter(|d| !d.is_zero()));
        if let Some(max) = args.max_in_flight {
            builder = builder.max_in_flight(usize::try_from(max).unwrap_or(usize::MAX));
        }
        if let Some(c) = &tls_config {
            builder = builder.tls(c.clone());
        }
        builder
    };
    let server = Arc::new(configure(builder).build()?);
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
    match next {
        None => {
            let signals = async {
                let which = crate::signal::next().await;
                info!("received {which}, draining");
            };
            server.serve_on_threads(listeners, threads, name, signals)?;
        }
        Some(next) => generations(server, &listeners, threads, name, next, configure)?,
    }
    drop(socket_files);
    info!("stopped");
    Ok(())
}

/// A server running on its own thread until told to stop.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: thread::JoinHandle<Result<(), volley_server::ServeError>>,
}

impl Running {
    fn start(
        server: Arc<Server>,
        listeners: &[Bound],
        threads: usize,
        name: &str,
    ) -> Result<Running> {
        let mine = listeners
            .iter()
            .map(Bound::try_clone)
            .collect::<std::io::Result<Vec<_>>>()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let name = name.to_owned();
        let thread = thread::Builder::new()
            .name(format!("{name}-main"))
            .spawn(move || {
                server.serve_on_threads(mine, threads, &name, async {
                    let _ = stopped.await;
                })
            })?;
        Ok(Running { stop, thread })
    }

    /// Stops it and waits for its calls to drain.
    fn drain(self) -> Result<()> {
        let _ = self.stop.send(());
        match self.thread.join() {
            Ok(r) => Ok(r?),
            Err(_) => anyhow::bail!("a server thread panicked"),
        }
    }
}

/// Serves `first`, then each server built from a builder `next` sends, until a signal.
fn generations(
    first: Arc<Server>,
    listeners: &[Bound],
    threads: usize,
    name: &str,
    next: mpsc::Receiver<volley_server::ServerBuilder>,
    configure: impl Fn(volley_server::ServerBuilder) -> volley_server::ServerBuilder,
) -> Result<()> {
    // Signals and new builders, in one queue.
    let (tx, events) = mpsc::channel::<Option<volley_server::ServerBuilder>>();
    let on_signal = tx.clone();
    crate::signal::on_first(move |which| {
        info!("received {which}, draining");
        let _ = on_signal.send(None);
    });
    thread::spawn(move || {
        for b in next {
            if tx.send(Some(b)).is_err() {
                return;
            }
        }
    });
    let mut current = Running::start(first, listeners, threads, name)?;
    loop {
        match events.recv() {
            Ok(Some(builder)) => match configure(builder).build() {
                Ok(server) => {
                    let fresh = Running::start(Arc::new(server), listeners, threads, name)?;
                    std::mem::replace(&mut current, fresh).drain()?;
                    info!("now serving the new descriptors; the old server has drained");
                }
                Err(e) => warn!("the new descriptors cannot be served ({e}); the old ones stay"),
            },
            Ok(None) | Err(_) => return current.drain(),
        }
    }
}
