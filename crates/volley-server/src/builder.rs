//! [`ServerBuilder`]: services, descriptors and settings turned into a [`Server`] (the method
//! table, REST routes, health and reflection are put together here, once).

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use prost_reflect::DescriptorPool;
use volley_wire::codec::{DEFAULT_MAX_RECV, DEFAULT_MAX_SEND};

#[cfg(feature = "web")]
use crate::route::rest::Route;
use crate::{
    ServeError, Server, Service,
    conn::{ConnContext, ConnSettings},
    intercept::{Chain, Interceptor, Registered},
    route::{Endpoint, Limits, Router, Shared},
};
#[cfg(feature = "health")]
use crate::{health::HealthReporter, pb::health::health_check_response::ServingStatus};

/// Default `SETTINGS_MAX_CONCURRENT_STREAMS`: bounded, unlike grpc-go's 2^32-1, but above the
/// seeds' highest concurrency on one connection (500).
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 1024;
/// Default time in-flight calls get to finish once a drain starts.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);
/// Default minimum interval between a client's pings on a connection with no call open.
pub(crate) const DEFAULT_PING_MIN_INTERVAL: Duration = Duration::from_secs(300);
/// Default time a new connection has to identify itself (TLS handshake done; for plaintext, the
/// whole HTTP/2 preface or a byte that rules it out) before it is closed.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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
    max_connections: Option<usize>,
    max_connection_idle: Option<Duration>,
    ping_min_interval: Option<Duration>,
    #[cfg(feature = "tls")]
    tls: Option<Arc<rustls::ServerConfig>>,
    #[cfg(feature = "tls")]
    also_plaintext: bool,
    #[cfg(feature = "health")]
    health: bool,
    /// `GET /openapi.json`'s title, when it is served.
    #[cfg(feature = "web")]
    openapi: Option<String>,
    #[cfg(feature = "reflection")]
    reflection: bool,
    #[cfg(feature = "web")]
    http_rules: Vec<(String, crate::pb::google_api::HttpRule)>,
    interceptors: Vec<Registered>,
    endpoints: Vec<Endpoint>,
    #[cfg(feature = "web")]
    cors: Option<crate::cors::Cors>,
    in_flight: Option<crate::limit::InFlightLimit>,
    conn_counts: crate::conn::ConnCounts,
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
            max_connections: None,
            max_connection_idle: None,
            ping_min_interval: Some(DEFAULT_PING_MIN_INTERVAL),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            also_plaintext: false,
            #[cfg(feature = "health")]
            health: true,
            #[cfg(feature = "web")]
            openapi: None,
            #[cfg(feature = "reflection")]
            reflection: true,
            #[cfg(feature = "web")]
            http_rules: Vec::new(),
            interceptors: Vec::new(),
            endpoints: Vec::new(),
            #[cfg(feature = "web")]
            cors: None,
            in_flight: None,
            conn_counts: crate::conn::ConnCounts::default(),
        }
    }
}

impl ServerBuilder {
    /// Registers a service: a [`Service`] built by hand, or a generated `<Name>Server` (its
    /// descriptors come with it).
    pub fn add_service(mut self, service: impl Into<Service>) -> Self {
        let mut service = service.into();
        for fds in std::mem::take(&mut service.descriptors) {
            self = self.file_descriptor_set(fds);
        }
        self.services.push(service);
        self
    }

    /// Adds an encoded `FileDescriptorSet` describing registered services, for reflection.
    pub fn file_descriptor_set(mut self, fds: impl Into<Bytes>) -> Self {
        let fds = fds.into();
        if !self.descriptor_sets.contains(&fds) {
            self.descriptor_sets.push(fds);
        }
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

    /// At most `max` connections open at once: one more is accepted, sent GOAWAY
    /// (ENHANCE_YOUR_CALM, "too many connections"; over TLS, closed) and closed, while the open
    /// ones are unaffected. Refusals are counted in [`Server::connections`]. Off by default.
    pub fn max_connections(mut self, max: Option<usize>) -> Self {
        self.max_connections = max;
        self
    }

    /// Sends GOAWAY to an HTTP/2 connection that has had no call open for this long (counted
    /// from its last call's end, or its start), like grpc-go's `MaxConnectionIdle`: clients
    /// that hold connections they do not use give them back. Off by default.
    pub fn max_connection_idle(mut self, idle: Option<Duration>) -> Self {
        self.max_connection_idle = idle;
        self
    }

    /// Polices the client's PINGs on HTTP/2 connections with no call open, as grpc-go's
    /// keepalive enforcement does: pings closer together than `min_interval` are strikes, and
    /// the third strike gets GOAWAY ENHANCE_YOUR_CALM (a new call clears them; pings while a
    /// call is open are not policed). Default 5 minutes, grpc-go's `MinTime`; `None` turns it
    /// off (for clients whose keepalive pings idle connections often, or set a shorter one).
    pub fn ping_min_interval(mut self, min_interval: Option<Duration>) -> Self {
        self.ping_min_interval = min_interval;
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

    /// Serve TLS with this config (its ALPN list should offer `h2`). Needs the `tls` feature.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// With TLS set, also accept plaintext h2c on the same port (told apart by the first byte).
    /// Needs the `tls` feature.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn also_plaintext(mut self, on: bool) -> Self {
        self.also_plaintext = on;
        self
    }

    /// Adds a REST route for a method (`package.Service.Method`), as a `google.api.http` rule in
    /// the method's options would; rules in the registered descriptors are read by themselves.
    /// Needs the `web` feature.
    #[cfg(feature = "web")]
    #[cfg_attr(docsrs, doc(cfg(feature = "web")))]
    pub fn http_rule(mut self, method: &str, rule: crate::pb::google_api::HttpRule) -> Self {
        self.http_rules.push((method.to_owned(), rule));
        self
    }

    /// Adds an interceptor that sees every call, of every service and protocol (calls to
    /// unknown methods too), before the services' own
    /// ([`ServiceBuilder::intercept`](crate::ServiceBuilder::intercept)). Several run in the
    /// order they were added. See [`intercept`](crate::intercept).
    pub fn intercept(mut self, interceptor: impl Interceptor) -> Self {
        self.interceptors.push(Registered::new(interceptor));
        self
    }

    /// Records gRPC's A66 metrics for every call and serves them at `GET /metrics` on the
    /// calls' port (see [`metrics`](crate::metrics)), with the server's connection counts.
    /// Needs the `metrics` feature.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.conn_counts = metrics.connections().clone();
        let page = metrics.clone();
        self.intercept(metrics)
            .page("/metrics", move || page.page())
    }

    /// Refuses calls beyond `max` in flight at once, server-wide, with RESOURCE_EXHAUSTED
    /// before their body is read (see [`limit`](crate::limit)). It runs after the other
    /// server-wide interceptors, whatever the order they were added in.
    pub fn max_in_flight(self, max: usize) -> Self {
        self.in_flight_limit(crate::limit::InFlightLimit::new(max))
    }

    /// [`max_in_flight`](Self::max_in_flight) with a limit whose counts the caller reads.
    pub fn in_flight_limit(mut self, limit: crate::limit::InFlightLimit) -> Self {
        self.in_flight = Some(limit);
        self
    }

    /// Lets web pages on other origins call the server (gRPC-Web, Connect): see
    /// [`cors`](crate::cors). Needs the `web` feature.
    #[cfg(feature = "web")]
    #[cfg_attr(docsrs, doc(cfg(feature = "web")))]
    pub fn cors(mut self, cors: crate::cors::Cors) -> Self {
        self.cors = Some(cors);
        self
    }

    /// Answers `GET path` on the calls' port with what `render` returns (a content type and a
    /// body), rendered per request: how `metrics::Metrics` serves `/metrics`.
    pub fn page(
        self,
        path: impl Into<String>,
        render: impl Fn() -> (http::HeaderValue, Bytes) + Send + Sync + 'static,
    ) -> Self {
        self.endpoint(http::Method::GET, path, move |_| {
            let (content_type, body) = render();
            let mut resp = http::Response::new(body);
            resp.headers_mut()
                .insert(http::header::CONTENT_TYPE, content_type);
            std::future::ready(resp)
        })
    }

    /// Answers `method path` on the calls' port with what `handle` makes of the request, its
    /// whole body read first (refused past
    /// [`max_recv_message_size`](Self::max_recv_message_size)): an admin API beside the calls,
    /// as `volley serve --stubs` serves its stubs'. The path is matched exactly, before any
    /// protocol but gRPC's (`application/grpc` requests are always calls); the same path with
    /// another method is answered 405. Endpoints are not calls: the server's interceptors see
    /// them through [`Interceptor::on_endpoint`](crate::intercept::Interceptor::on_endpoint)
    /// alone, before the body is read, so an access check
    /// ([`BearerToken`](crate::auth::BearerToken)) covers them as it covers the calls.
    pub fn endpoint<F, Fut>(
        mut self,
        method: http::Method,
        path: impl Into<String>,
        handle: F,
    ) -> Self
    where
        F: Fn(http::Request<Bytes>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = http::Response<Bytes>> + Send + 'static,
    {
        self.endpoints.push(Endpoint {
            method,
            path: path.into(),
            handle: Arc::new(move |req| Box::pin(handle(req))),
        });
        self
    }

    /// Serve the REST rules as an OpenAPI 3 document at `GET /openapi.json` and
    /// `GET /openapi.yaml` (see [`openapi`]),
    /// titled `title`; an endpoint like any other, so a token check covers it. Needs the `web`
    /// feature.
    ///
    /// [`openapi`]: crate::openapi
    #[cfg(feature = "web")]
    #[cfg_attr(docsrs, doc(cfg(feature = "web")))]
    pub fn openapi(mut self, title: impl Into<String>) -> Self {
        self.openapi = Some(title.into());
        self
    }

    /// Serve `grpc.health.v1.Health` (default on). Needs the `health` feature.
    #[cfg(feature = "health")]
    #[cfg_attr(docsrs, doc(cfg(feature = "health")))]
    pub fn health(mut self, on: bool) -> Self {
        self.health = on;
        self
    }

    /// Serve server reflection v1 and v1alpha (default on). Needs the `reflection` feature.
    #[cfg(feature = "reflection")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reflection")))]
    pub fn reflection(mut self, on: bool) -> Self {
        self.reflection = on;
        self
    }

    /// Builds the server and serves it on `addr` for as long as the process runs, as tonic's
    /// `Server::builder().add_service(..).serve(addr)` does (the listener bound with
    /// `SO_REUSEADDR` and a backlog of 4096). To stop it, see
    /// [`serve_with_shutdown`](Self::serve_with_shutdown); to bind yourself, [`Server::serve`].
    pub async fn serve(self, addr: std::net::SocketAddr) -> Result<(), ServeError> {
        self.serve_with_shutdown(addr, std::future::pending()).await
    }

    /// As [`serve`](Self::serve), until `signal` resolves; then calls in flight finish (within
    /// the grace period) and it returns.
    pub async fn serve_with_shutdown(
        self,
        addr: std::net::SocketAddr,
        signal: impl std::future::Future<Output = ()>,
    ) -> Result<(), ServeError> {
        let server = self.build()?;
        let listener = crate::listen::tcp_listener(addr)?;
        listener.set_nonblocking(true)?;
        server
            .serve(tokio::net::TcpListener::from_std(listener)?, signal)
            .await
    }

    /// Builds the server; fails only when a descriptor set is invalid.
    pub fn build(mut self) -> Result<Server, ServeError> {
        if let Some(limit) = self.in_flight.take() {
            self.interceptors.push(Registered::new(limit));
        }
        let mut router = Router::default();
        #[cfg(feature = "health")]
        let reporter = HealthReporter::default();
        #[cfg_attr(not(feature = "reflection"), allow(unused_mut, unused_variables))]
        let mut names: Vec<String> = self.services.iter().map(|s| s.name.clone()).collect();
        for s in self.services {
            router.add(s);
        }
        #[cfg(feature = "health")]
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
        #[cfg(feature = "web")]
        let mut rest = Vec::new();
        #[cfg(feature = "web")]
        for m in pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
        {
            rest.extend(Route::from_options(&m)?);
        }
        #[cfg(feature = "web")]
        for (name, rule) in &self.http_rules {
            let (svc, method) = name.rsplit_once('.').unwrap_or((name, ""));
            let m = pool
                .get_service_by_name(svc)
                .and_then(|s| s.methods().find(|m| m.name() == method))
                .ok_or_else(|| ServeError::UnknownMethod(name.clone()))?;
            rest.extend(Route::from_rule(&m, rule)?);
        }
        #[cfg(feature = "web")]
        if let Some(title) = self.openapi.take() {
            self.endpoints
                .extend(crate::openapi::endpoints(&rest, &title));
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
        #[cfg(feature = "reflection")]
        if self.reflection {
            names.extend(crate::reflection::SERVICE_NAMES.map(String::from));
            for s in crate::reflection::services(pool, names) {
                router.add(s);
            }
        }
        router.finish(&descriptors, &self.interceptors);
        let chain = Chain::of(&self.interceptors, &[]);
        let intercepted = chain.is_some() || router.any_chain();
        if intercepted {
            crate::intercept::calibrate_clock();
        }
        let shared = Arc::new(Shared {
            router,
            limits: self.limits,
            descriptors,
            #[cfg(feature = "web")]
            rest,
            chain,
            intercepted,
            endpoints: self.endpoints,
            #[cfg(feature = "web")]
            cors: self.cors,
        });
        let conn = ConnContext::new(
            shared,
            ConnSettings {
                max_concurrent_streams: self.max_concurrent_streams,
                keepalive: self.keepalive,
                #[cfg(feature = "tls")]
                tls: self.tls,
                #[cfg(feature = "tls")]
                also_plaintext: self.also_plaintext,
                max_age: self.max_connection_age,
                grace: self.grace,
                handshake: self.handshake,
                max_connections: self.max_connections,
                max_idle: self.max_connection_idle,
                ping_min_interval: self.ping_min_interval,
                counts: self.conn_counts,
            },
        );
        Ok(Server::new(
            conn,
            self.grace,
            #[cfg(feature = "health")]
            reporter,
        ))
    }
}

impl Server {
    /// Starts configuring a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }
}
