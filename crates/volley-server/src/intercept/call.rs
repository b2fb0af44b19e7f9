//! The facts of a call ([`CallInfo`]: method, peer, protocol, deadline) and what an interceptor
//! holds while it runs ([`Call`]: those facts, the request metadata, and what it adds).

use std::{
    any::Any,
    borrow::Cow,
    net::SocketAddr,
    sync::{Arc, OnceLock},
    time::Duration,
};

use http::HeaderMap;
use prost_reflect::MethodDescriptor;
use rustls_pki_types::CertificateDer;
use tokio::time::Instant;

/// The four shapes of gRPC method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    /// One request, one reply.
    Unary,
    /// One request, a stream of replies.
    ServerStreaming,
    /// A stream of requests, one reply.
    ClientStreaming,
    /// Streams both ways.
    BidiStreaming,
}

/// A method as the server knows it: its path, kind and (when its descriptors are registered) its
/// descriptor, options included. Calls to unknown methods have one too, with no kind.
pub struct MethodInfo {
    path: Cow<'static, str>,
    kind: Option<MethodKind>,
    descriptor: Option<MethodDescriptor>,
    /// One cell per interceptor of the method's chain, for state it keeps per method.
    locals: Vec<OnceLock<Box<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for MethodInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodInfo")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

/// The method of a request made outside a server (`Request::new` in a test).
static NO_METHOD: MethodInfo = MethodInfo {
    path: Cow::Borrowed(""),
    kind: None,
    descriptor: None,
    locals: Vec::new(),
};

impl MethodInfo {
    pub(crate) fn registered(path: String, kind: MethodKind) -> MethodInfo {
        MethodInfo {
            path: Cow::Owned(path),
            kind: Some(kind),
            descriptor: None,
            locals: Vec::new(),
        }
    }

    /// A method the server does not have, called through a chain of `interceptors`.
    pub(crate) fn unknown(path: &str, interceptors: usize) -> MethodInfo {
        let mut m = MethodInfo {
            path: Cow::Owned(path.to_owned()),
            kind: None,
            descriptor: None,
            locals: Vec::new(),
        };
        m.set_interceptors(interceptors);
        m
    }

    /// Makes room for per-method state of `n` interceptors.
    pub(crate) fn set_interceptors(&mut self, n: usize) {
        self.locals = (0..n).map(|_| OnceLock::new()).collect();
    }

    /// Interceptor `slot`'s state for this method, made by `init` on first use.
    pub(super) fn local<T: Any + Send + Sync>(
        &self,
        slot: usize,
        init: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.locals
            .get(slot)?
            .get_or_init(|| Box::new(init()))
            .downcast_ref()
    }

    /// Interceptor `slot`'s state for this method, if made.
    pub(super) fn local_if_made<T: Any>(&self, slot: usize) -> Option<&T> {
        self.locals.get(slot)?.get()?.downcast_ref()
    }

    pub(crate) fn set_descriptor(&mut self, d: MethodDescriptor) {
        self.descriptor = Some(d);
    }

    /// The request path: `/package.Service/Method`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The full method name as gRPC's metrics and traces spell it: `package.Service/Method`.
    pub fn full_name(&self) -> &str {
        self.path.strip_prefix('/').unwrap_or(&self.path)
    }

    /// The fully-qualified service: `package.Service`.
    pub fn service(&self) -> &str {
        self.full_name().rsplit_once('/').map_or("", |(s, _)| s)
    }

    /// The method's own name: `Method`.
    pub fn name(&self) -> &str {
        self.full_name().rsplit_once('/').map_or("", |(_, m)| m)
    }

    /// The method's kind; `None` for a method this server does not have.
    pub fn kind(&self) -> Option<MethodKind> {
        self.kind
    }

    /// Whether this server has the method (calls to others end UNIMPLEMENTED once the
    /// interceptors have let them through).
    pub fn is_registered(&self) -> bool {
        self.kind.is_some()
    }

    /// The method's descriptor (its options, `google.api.http` rules, input and output types)
    /// when its service's descriptors are registered.
    pub fn descriptor(&self) -> Option<&MethodDescriptor> {
        self.descriptor.as_ref()
    }
}

/// The other end of a connection.
#[derive(Debug)]
pub struct Peer {
    addr: Option<SocketAddr>,
    tls: bool,
    certificates: Vec<CertificateDer<'static>>,
}

impl Peer {
    pub(crate) fn new(
        addr: Option<SocketAddr>,
        tls: bool,
        certificates: Vec<CertificateDer<'static>>,
    ) -> Peer {
        Peer {
            addr,
            tls,
            certificates,
        }
    }

    /// The client's address; `None` over a Unix socket or an in-memory stream
    /// ([`Server::serve_unix`](crate::Server::serve_unix),
    /// [`Server::serve_incoming`](crate::Server::serve_incoming)).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The client's certificate chain (end entity first) when the server asks for one
    /// (`ServerBuilder::tls` with a client CA); empty otherwise.
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.certificates
    }
}

/// Which protocol a call arrived in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallProtocol {
    /// gRPC over HTTP/2.
    Grpc,
    /// gRPC-Web (binary or text).
    GrpcWeb,
    /// Connect (unary or streaming, including GET).
    Connect,
    /// REST, mapped by `google.api.http` rules.
    Rest,
}

/// What the server knows of a call: its method, its peer, its protocol and its deadline. The
/// same facts reach interceptors ([`Call::info`]) and handlers
/// ([`Request::call`](crate::Request::call)).
#[derive(Clone, Debug)]
pub struct CallInfo {
    method: Option<Arc<MethodInfo>>,
    peer: Option<Arc<Peer>>,
    protocol: CallProtocol,
    deadline: Option<Instant>,
}

impl Default for CallInfo {
    /// The facts of a request made outside a server: no method, no peer.
    fn default() -> Self {
        CallInfo {
            method: None,
            peer: None,
            protocol: CallProtocol::Grpc,
            deadline: None,
        }
    }
}

impl CallInfo {
    pub(crate) fn new(
        method: Arc<MethodInfo>,
        peer: &Arc<Peer>,
        protocol: CallProtocol,
        deadline: Option<Instant>,
    ) -> CallInfo {
        CallInfo::with_peer(method, peer.clone(), protocol, deadline)
    }

    /// [`CallInfo::new`] with a peer handed over rather than cloned.
    pub(crate) fn with_peer(
        method: Arc<MethodInfo>,
        peer: Arc<Peer>,
        protocol: CallProtocol,
        deadline: Option<Instant>,
    ) -> CallInfo {
        CallInfo {
            method: Some(method),
            peer: Some(peer),
            protocol,
            deadline,
        }
    }

    /// The peer, shared with the connection.
    pub(crate) fn peer_shared(&self) -> Option<&Arc<Peer>> {
        self.peer.as_ref()
    }

    #[cfg(feature = "metrics")]
    /// The method, shared with the method table (for labels kept past the call).
    pub(crate) fn method_shared(&self) -> Option<&Arc<MethodInfo>> {
        self.method.as_ref()
    }

    /// The method called.
    pub fn method(&self) -> &MethodInfo {
        self.method.as_deref().unwrap_or(&NO_METHOD)
    }

    /// The client's connection; `None` for a request made outside a server.
    pub fn peer(&self) -> Option<&Peer> {
        self.peer.as_deref()
    }

    /// The client's address (none over a Unix socket).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer().and_then(Peer::addr)
    }

    /// The protocol the call arrived in.
    pub fn protocol(&self) -> CallProtocol {
        self.protocol
    }

    /// When the call's deadline (`grpc-timeout`, `connect-timeout-ms`) expires, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left before the deadline, if any.
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// A call as its interceptors see it, before its body is read.
pub struct Call {
    info: CallInfo,
    metadata: HeaderMap,
    extensions: http::Extensions,
    response_headers: HeaderMap,
    response_trailers: HeaderMap,
    kept: Kept,
    slot: usize,
    pub(super) ran: usize,
}

/// State interceptors keep for their `on_end`, by interceptor position.
pub(crate) type Kept = Vec<(usize, Box<dyn Any + Send + Sync>)>;

impl Call {
    pub(crate) fn new(info: CallInfo, metadata: HeaderMap, extensions: http::Extensions) -> Call {
        Call {
            info,
            metadata,
            extensions,
            response_headers: HeaderMap::new(),
            response_trailers: HeaderMap::new(),
            kept: Vec::new(),
            slot: 0,
            ran: 0,
        }
    }

    /// Called as interceptor `i` starts.
    pub(super) fn enter(&mut self, i: usize) {
        self.slot = i;
        self.ran = i + 1;
    }

    /// Takes the request metadata and extensions back, for the handler.
    pub(crate) fn take_request(&mut self) -> (HeaderMap, http::Extensions) {
        (
            std::mem::take(&mut self.metadata),
            std::mem::take(&mut self.extensions),
        )
    }

    /// Takes the response headers and trailers the interceptors added.
    pub(crate) fn take_response(&mut self) -> (HeaderMap, HeaderMap) {
        (
            std::mem::take(&mut self.response_headers),
            std::mem::take(&mut self.response_trailers),
        )
    }

    /// What the interceptors kept for their `on_end`.
    pub(super) fn kept(&self) -> &Kept {
        &self.kept
    }

    /// The call's facts: method, peer, protocol, deadline.
    pub fn info(&self) -> &CallInfo {
        &self.info
    }

    /// The method called (a shortcut for `info().method()`).
    pub fn method(&self) -> &MethodInfo {
        self.info.method()
    }

    /// The request headers: gRPC metadata plus the HTTP ones (`content-type`, `user-agent`).
    pub fn metadata(&self) -> &HeaderMap {
        &self.metadata
    }

    /// Mutable request headers: what the handler (and the next interceptors) will see.
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        &mut self.metadata
    }

    /// Values for the handler, which reads them from
    /// [`Request::extensions`](crate::Request::extensions) (an authenticated identity, a
    /// tracing context).
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }

    /// Headers added to the response (to trailers-only responses too).
    pub fn response_headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.response_headers
    }

    /// Trailers added to the response beside `grpc-status` (in headers for a trailers-only
    /// response; as `trailer-` headers for a Connect unary call; not sent for REST calls).
    pub fn response_trailers_mut(&mut self) -> &mut HeaderMap {
        &mut self.response_trailers
    }

    /// This interceptor's state for the call's method, made by `init` the first time the
    /// method is called (instruments resolved once per method rather than per call). `None` if
    /// a value of another type is there.
    pub fn method_local<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.info.method().local(self.slot, init)
    }

    /// Keeps a value for this interceptor's [`on_end`](super::Interceptor::on_end), which reads
    /// it with [`CallEnd::kept`](super::CallEnd::kept) (a span, a start time of its own).
    pub fn keep<T: Any + Send + Sync>(&mut self, value: T) {
        self.kept.push((self.slot, Box::new(value)));
    }
}
