//! `Server`: the builder, the accept loop, one task per connection (h2c, TLS, or both sniffed on one
//! port), and the graceful drain.

use std::{
    collections::HashMap,
    convert::Infallible,
    future::Future,
    io,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use futures_util::FutureExt;
use hyper::{body::Incoming, service::service_fn};

use crate::{drain::RequestBody, http2::H2Connection};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use prost_reflect::DescriptorPool;
use tokio::{
    net::{TcpListener, TcpStream},
    sync::watch,
};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use crate::{
    Service,
    call::{HttpResponse, Protocol, plain, protocol, serve_grpc},
    codec::{DEFAULT_MAX_RECV, DEFAULT_MAX_SEND},
    health::HealthReporter,
    pb::health::health_check_response::ServingStatus,
    router::Router,
    service::BoxFuture,
};

/// Default `SETTINGS_MAX_CONCURRENT_STREAMS`: bounded, unlike grpc-go's 2^32-1, but above the
/// seeds' highest concurrency on one connection (500).
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 1024;
/// Default time in-flight calls get to finish once a drain starts.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);
/// Default HTTP/2 stream window (grpc-go starts at 64 KiB and grows it; a larger start saves the ramp).
pub const DEFAULT_STREAM_WINDOW: u32 = 1024 * 1024;
/// Default HTTP/2 connection window. Large on purpose: h2 (0.4.16+) sends GOAWAY
/// ENHANCE_YOUR_CALM when unread small DATA frames exhaust a budget of half this window (its
/// default, kept for connections served by h2 directly and by hyper alike). A client streaming
/// tiny messages (seed 004's 38-byte orders) faster than a handler reads them can fill a 1 MiB
/// stream window with ~27k frames costing ~6 MiB of budget; 16 MiB (grpc-go's largest BDP
/// window) gives 8 MiB.
pub const DEFAULT_CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;
/// Default time a new connection has to identify itself (TLS handshake done; for plaintext, the
/// whole HTTP/2 preface or a byte that rules it out) before it is closed.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2's client connection preface.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Errors from building or running a server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A registered descriptor set did not decode or link.
    #[error("invalid file descriptor set: {0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
    /// A REST rule could not be used.
    #[error("{0}")]
    Rule(#[from] crate::rest::RuleError),
    /// A REST rule names a method the schema does not have.
    #[error("http_rule for unknown method {0}")]
    UnknownMethod(String),
    /// The listener failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Per-call limits and switches, read on every call.
pub(crate) struct Limits {
    pub(crate) max_recv: usize,
    pub(crate) max_send: usize,
    pub(crate) send_compression: bool,
}

/// What every call of a server shares.
pub(crate) struct Shared {
    pub(crate) router: Router,
    pub(crate) limits: Limits,
    /// Method descriptors by path, for JSON transcoding (from the registered descriptor sets).
    pub(crate) descriptors: HashMap<String, prost_reflect::MethodDescriptor>,
    /// REST routes (`google.api.http`).
    pub(crate) rest: Vec<crate::rest::Route>,
}

/// Configures a [`Server`].
#[must_use]
pub struct ServerBuilder {
    services: Vec<Service>,
    descriptor_sets: Vec<Bytes>,
    limits: Limits,
    max_concurrent_streams: u32,
    keepalive: Option<Duration>,
    grace: Duration,
    handshake: Duration,
    max_connection_age: Option<Duration>,
    tls: Option<Arc<rustls::ServerConfig>>,
    also_plaintext: bool,
    health: bool,
    reflection: bool,
    http_rules: Vec<(String, crate::pb::google_api::HttpRule)>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            services: Vec::new(),
            descriptor_sets: Vec::new(),
            limits: Limits {
                max_recv: DEFAULT_MAX_RECV,
                max_send: DEFAULT_MAX_SEND,
                send_compression: false,
            },
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            keepalive: None,
            grace: DEFAULT_GRACE_PERIOD,
            handshake: DEFAULT_HANDSHAKE_TIMEOUT,
            max_connection_age: None,
            tls: None,
            also_plaintext: false,
            health: true,
            reflection: true,
            http_rules: Vec::new(),
        }
    }
}

impl ServerBuilder {
    /// Registers a service.
    pub fn add_service(mut self, service: Service) -> Self {
        self.services.push(service);
        self
    }

    /// Adds an encoded `FileDescriptorSet` describing registered services, for reflection.
    pub fn file_descriptor_set(mut self, fds: impl Into<Bytes>) -> Self {
        self.descriptor_sets.push(fds.into());
        self
    }

    /// Largest request message accepted (default 4 MiB); larger ones get RESOURCE_EXHAUSTED.
    pub fn max_recv_message_size(mut self, bytes: usize) -> Self {
        self.limits.max_recv = bytes;
        self
    }

    /// Largest reply message sent; larger ones end the call with RESOURCE_EXHAUSTED.
    pub fn max_send_message_size(mut self, bytes: usize) -> Self {
        self.limits.max_send = bytes;
        self
    }

    /// Compress replies with gzip when the client accepts it.
    pub fn send_compressed(mut self, on: bool) -> Self {
        self.limits.send_compression = on;
        self
    }

    /// `SETTINGS_MAX_CONCURRENT_STREAMS` advertised to clients.
    pub fn max_concurrent_streams(mut self, n: u32) -> Self {
        self.max_concurrent_streams = n;
        self
    }

    /// Send HTTP/2 PINGs this often and drop a connection that does not answer within as long.
    pub fn keepalive(mut self, interval: Option<Duration>) -> Self {
        self.keepalive = interval;
        self
    }

    /// Drains each connection (GOAWAY, then close once its calls end or the grace period passes)
    /// when it reaches this age, like grpc-go's `MaxConnectionAge`: clients reconnect, so load
    /// spreads over servers behind a balancer. Off by default.
    pub fn max_connection_age(mut self, age: Option<Duration>) -> Self {
        self.max_connection_age = age;
        self
    }

    /// Time a new connection has to identify itself: a plaintext peer must send the whole HTTP/2
    /// preface (or the start of an HTTP/1.1 request, which then has hyper's 30 s header timeout)
    /// and a TLS peer must finish its handshake. Silent or stalled peers are closed after it, so
    /// they cannot pile up. Default 10 s.
    pub fn handshake_timeout(mut self, limit: Duration) -> Self {
        self.handshake = limit;
        self
    }

    /// How long a drain (shutdown, or a connection past its maximum age) waits for in-flight
    /// calls before closing connections.
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Serve TLS with this config (its ALPN list should offer `h2`).
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// With TLS set, also accept plaintext h2c on the same port (told apart by the first byte).
    pub fn also_plaintext(mut self, on: bool) -> Self {
        self.also_plaintext = on;
        self
    }

    /// Adds a REST route for a method (`package.Service.Method`), as a `google.api.http` rule in
    /// the method's options would; rules in the registered descriptors are read by themselves.
    pub fn http_rule(mut self, method: &str, rule: crate::pb::google_api::HttpRule) -> Self {
        self.http_rules.push((method.to_owned(), rule));
        self
    }

    /// Serve `grpc.health.v1.Health` (default on).
    pub fn health(mut self, on: bool) -> Self {
        self.health = on;
        self
    }

    /// Serve server reflection v1 and v1alpha (default on).
    pub fn reflection(mut self, on: bool) -> Self {
        self.reflection = on;
        self
    }

    /// Builds the server; fails only when a descriptor set is invalid.
    pub fn build(self) -> Result<Server, ServeError> {
        let mut router = Router::default();
        let reporter = HealthReporter::default();
        let mut names: Vec<String> = self.services.iter().map(|s| s.name.clone()).collect();
        for s in self.services {
            router.add(s);
        }
        if self.health {
            reporter.set("", ServingStatus::Serving);
            for n in &names {
                reporter.set(n, ServingStatus::Serving);
            }
            router.add(reporter.service());
            names.push(crate::health::SERVICE_NAME.to_owned());
        }
        let mut pool = DescriptorPool::new();
        pool.decode_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)?;
        for fds in &self.descriptor_sets {
            pool.decode_file_descriptor_set(fds.clone())?;
        }
        let mut rest = Vec::new();
        for m in pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
        {
            rest.extend(crate::rest::Route::from_options(&m)?);
        }
        for (name, rule) in &self.http_rules {
            let (svc, method) = name.rsplit_once('.').unwrap_or((name, ""));
            let m = pool
                .get_service_by_name(svc)
                .and_then(|s| s.methods().find(|m| m.name() == method))
                .ok_or_else(|| ServeError::UnknownMethod(name.clone()))?;
            rest.extend(crate::rest::Route::from_rule(&m, rule)?);
        }
        let descriptors = pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
            .map(|m| {
                (
                    format!("/{}/{}", m.parent_service().full_name(), m.name()),
                    m,
                )
            })
            .collect();
        if self.reflection {
            names.extend(crate::reflection::SERVICE_NAMES.map(String::from));
            for s in crate::reflection::services(pool, names) {
                router.add(s);
            }
        }
        let mut conn = auto::Builder::new(TokioExecutor::new());
        conn.http1().timer(TokioTimer::new());
        conn.http2()
            .timer(TokioTimer::new())
            .auto_date_header(false)
            .max_concurrent_streams(self.max_concurrent_streams)
            .initial_stream_window_size(DEFAULT_STREAM_WINDOW)
            .initial_connection_window_size(DEFAULT_CONNECTION_WINDOW)
            .keep_alive_interval(self.keepalive)
            .keep_alive_timeout(self.keepalive.unwrap_or(Duration::from_secs(20)));
        Ok(Server {
            conn: Arc::new(ConnContext {
                shared: Arc::new(Shared {
                    router,
                    limits: self.limits,
                    descriptors,
                    rest,
                }),
                builder: conn,
                h2: crate::http2::builder(self.max_concurrent_streams),
                keepalive: self.keepalive,
                tls: self.tls.map(TlsAcceptor::from),
                also_plaintext: self.also_plaintext,
                max_age: self.max_connection_age,
                grace: self.grace,
                handshake: self.handshake,
                accepted: AtomicU64::new(0),
                open: AtomicUsize::new(0),
            }),
            grace: self.grace,
            health: reporter,
        })
    }
}

/// A built server, ready to [`serve`](Server::serve) listeners.
pub struct Server {
    conn: Arc<ConnContext>,
    grace: Duration,
    health: HealthReporter,
}

/// What each connection task needs.
struct ConnContext {
    shared: Arc<Shared>,
    builder: auto::Builder<TokioExecutor>,
    /// HTTP/2 settings for connections served on h2 directly (`http2.rs`).
    h2: h2::server::Builder,
    keepalive: Option<Duration>,
    tls: Option<TlsAcceptor>,
    also_plaintext: bool,
    max_age: Option<Duration>,
    grace: Duration,
    handshake: Duration,
    accepted: AtomicU64,
    open: AtomicUsize,
}

/// Connection counts, as the server sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionCounts {
    /// Connections accepted since the server was built.
    pub accepted: u64,
    /// Connections open now.
    pub open: usize,
}

/// Counts a connection as open for as long as it lives.
struct OpenGuard<'a>(&'a AtomicUsize);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Server {
    /// Starts configuring a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The health reporter; set statuses while serving.
    pub fn health(&self) -> &HealthReporter {
        &self.health
    }

    /// True when the server speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.conn.tls.is_some()
    }

    /// How many connections it has accepted, and how many are open.
    pub fn connections(&self) -> ConnectionCounts {
        ConnectionCounts {
            accepted: self.conn.accepted.load(Ordering::Relaxed),
            open: self.conn.open.load(Ordering::Relaxed),
        }
    }

    /// Accepts connections on `listener` until `shutdown` completes, then drains: stops accepting,
    /// marks health NOT_SERVING, sends GOAWAY, and waits up to the grace period for in-flight calls.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        // Every connection task holds a receiver: true means drain; all dropped means drained.
        let (drain, _) = watch::channel(false);
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                biased;
                () = &mut shutdown => break,
                r = listener.accept() => r,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let ctx = self.conn.clone();
                    tokio::spawn(ctx.serve_connection(stream, peer, drain.subscribe()));
                }
                Err(e) if is_per_connection(&e) => debug!("accept: {e}"),
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    warn!("accept failed: {e}; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(listener);
        self.health.shutdown();
        let _ = drain.send(true);
        let open = drain.receiver_count();
        debug!(
            "draining {open} connection(s), grace period {:?}",
            self.grace
        );
        tokio::select! {
            () = drain.closed() => debug!("drained"),
            () = tokio::time::sleep(self.grace) => warn!("grace period over; closing the remaining connections"),
        }
        Ok(())
    }
}

fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

/// The first byte of a TLS ClientHello record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

impl ConnContext {
    async fn serve_connection(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        drain: watch::Receiver<bool>,
    ) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
        let _open = OpenGuard(&self.open);
        let Some(acceptor) = &self.tls else {
            if let Some(h2) = self.identified(&stream, peer).await {
                self.serve_io(stream, peer, drain, h2).await;
            }
            return;
        };
        if self.also_plaintext {
            let mut first = [0u8; 1];
            match tokio::time::timeout(self.handshake, stream.peek(&mut first)).await {
                Ok(Ok(1)) if first[0] != TLS_HANDSHAKE_RECORD => {
                    if let Some(h2) = self.identified(&stream, peer).await {
                        self.serve_io(stream, peer, drain, h2).await;
                    }
                    return;
                }
                Ok(Ok(1)) => {}
                _ => return,
            }
        }
        match tokio::time::timeout(self.handshake, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                self.serve_io(tls, peer, drain, h2).await;
            }
            Ok(Err(e)) => debug!("TLS handshake with {peer} failed: {e}"),
            Err(_) => debug!("TLS handshake with {peer} timed out"),
        }
    }

    /// Waits (up to the handshake timeout) until a plaintext peer has sent the whole HTTP/2
    /// preface (`Some(true)`) or a byte that rules it out (`Some(false)`); `None` (close) for a
    /// peer that stays silent, stalls inside the preface or hangs up.
    async fn identified(&self, stream: &TcpStream, peer: SocketAddr) -> Option<bool> {
        let wait = async {
            let mut buf = [0u8; H2_PREFACE.len()];
            loop {
                match stream.peek(&mut buf).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) if buf[..n] != H2_PREFACE[..n] => return Some(false),
                    Ok(n) if n == buf.len() => return Some(true),
                    // Part of the preface: peek returns at once while those bytes wait, so
                    // look again a little later (a rare path; real clients send it whole).
                    Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        };
        match tokio::time::timeout(self.handshake, wait).await {
            Ok(ok) => ok,
            Err(_) => {
                debug!(
                    "{peer} sent no protocol preface in {:?}; closing",
                    self.handshake
                );
                None
            }
        }
    }

    /// Serves one connection until it ends: HTTP/2 (`h2`: the preface was seen, or ALPN chose
    /// it) on h2 directly, anything else through hyper.
    async fn serve_io<I>(&self, io: I, peer: SocketAddr, drain: watch::Receiver<bool>, h2: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        if h2 {
            let conn = H2Connection::new(io, &self.h2, shared, self.keepalive);
            return self
                .drive(conn, H2Connection::graceful_shutdown, peer, drain)
                .await;
        }
        let svc = service_fn(move |req: http::Request<Incoming>| {
            let http1 = req.version() < http::Version::HTTP_2;
            route(shared.clone(), req.map(|b| RequestBody::new(b, http1))).map(Ok::<_, Infallible>)
        });
        let conn = self.builder.serve_connection(TokioIo::new(io), svc);
        self.drive(conn, auto::Connection::graceful_shutdown, peer, drain)
            .await;
    }

    /// Runs a connection until it ends; a server drain or the connection's maximum age starts
    /// its graceful shutdown (GOAWAY), and the grace period bounds an aged one.
    async fn drive<C, E>(
        &self,
        conn: C,
        graceful_shutdown: impl Fn(std::pin::Pin<&mut C>),
        peer: SocketAddr,
        mut drain: watch::Receiver<bool>,
    ) where
        C: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut conn = std::pin::pin!(conn);
        let far = Duration::from_secs(86_400 * 365);
        let aged = tokio::time::sleep(self.max_age.unwrap_or(far));
        let mut aged = std::pin::pin!(aged);
        let mut draining = false;
        let result = loop {
            tokio::select! {
                r = conn.as_mut() => break r,
                () = async { drop(drain.wait_for(|d| *d).await) }, if !draining => {
                    draining = true;
                    graceful_shutdown(conn.as_mut());
                }
                () = &mut aged, if !draining => {
                    debug!("connection from {peer} reached its maximum age; draining");
                    graceful_shutdown(conn.as_mut());
                    match tokio::time::timeout(self.grace, conn.as_mut()).await {
                        Ok(r) => break r,
                        Err(_) => {
                            debug!("connection from {peer}: grace period over, closing");
                            return;
                        }
                    }
                }
            }
        };
        if let Err(e) = result {
            debug!("connection from {peer} ended: {e}");
        }
    }
}

/// Picks the protocol for a request: gRPC, gRPC-Web, Connect, or the plain `GET /` answer.
///
/// Not an `async fn`: the choice is made before any await, and the answer is one boxed future
/// sized to its own protocol. hyper moves the per-call future by value into its stream task and
/// tokio again into the task cell; a pointer moves for free where a ~3 KiB union of every
/// protocol's future cost several memcpys per call (BENCHMARKS.md, "Profiles").
pub(crate) fn route(
    shared: Arc<Shared>,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    let proto = protocol(req.headers());
    let grpc = matches!(
        proto,
        Protocol::Framed {
            env: crate::call::Envelope::Grpc,
            ..
        }
    );
    if !grpc && !shared.rest.is_empty() {
        if let Some((route, vars)) = crate::rest::find(&shared.rest, req.method(), req.uri().path())
        {
            return Box::pin(crate::rest::serve(shared, req, route, vars));
        }
    }
    match proto {
        Protocol::Framed { env, json } => Box::pin(serve_grpc(&shared, req, env, json)),
        Protocol::ConnectUnary { json } if req.method() == http::Method::POST => {
            Box::pin(crate::connect::serve_unary(shared, req, json))
        }
        Protocol::ConnectUnary { .. } if req.method() != http::Method::GET => refuse(
            req,
            http::StatusCode::METHOD_NOT_ALLOWED,
            "volley: Connect unary calls are POST (or GET for side-effect-free methods)\n",
        ),
        Protocol::UnknownCodec => refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "volley: unsupported codec; this server speaks proto and json\n",
        ),
        _ if req.method() == http::Method::GET && req.uri().path() == "/" => {
            refuse(req, http::StatusCode::OK, HELLO)
        }
        _ if req.method() == http::Method::GET && shared.router.get(req.uri().path()).is_some() => {
            Box::pin(crate::connect::serve_get(shared, req))
        }
        Protocol::Other if req.method() == http::Method::GET => refuse(
            req,
            http::StatusCode::NOT_FOUND,
            "volley: no route for this path\n",
        ),
        _ => refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "volley: unsupported content-type; this port speaks gRPC, gRPC-Web and Connect\n",
        ),
    }
}

/// A plain-text answer once the request's body (if any) has been read: see `drain::discard`.
fn refuse(
    req: http::Request<RequestBody>,
    code: http::StatusCode,
    text: &'static str,
) -> BoxFuture<HttpResponse> {
    let mut body = req.into_body();
    Box::pin(async move {
        crate::drain::discard(&mut body).await;
        plain(code, text)
    })
}

/// The body of `GET /`, a short text like the seed's Hyperf hello endpoint (for wrk).
pub const HELLO: &str = "Hello from volley.\n";
