//! What a run calls: a gRPC method (endpoint, request head, call kind, payload) or a plain HTTP
//! request, as one enum so that no target is half of each.

pub mod build;
pub mod payload;

use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use volley_client::{CallHead, Endpoint};

use payload::Payload;

/// What to call.
pub enum Target {
    /// A gRPC method.
    Grpc(GrpcTarget),
    /// A plain HTTP request (`volley bench http://...`).
    Http(HttpTarget),
}

/// A gRPC method to call.
pub struct GrpcTarget {
    /// Where.
    pub endpoint: Endpoint,
    /// The request head (path, metadata, deadline header).
    pub head: CallHead,
    /// The call kind of the method.
    pub kind: CallKind,
    /// Request data.
    pub payload: Payload,
    /// Prefix of `{{.WorkerID}}` (`name:` when the run has a name).
    pub worker_prefix: String,
}

/// The request of an HTTP run.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    /// Where.
    pub endpoint: Endpoint,
    /// GET, POST, ...
    pub method: Method,
    /// The full URL.
    pub uri: Uri,
    /// Extra headers (`-H`).
    pub headers: HeaderMap,
    /// The body (`-d`).
    pub body: Bytes,
    /// Speak HTTP/2 (prior knowledge on http://, ALPN on https://).
    pub http2: bool,
}

impl Target {
    /// Where the calls go.
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Target::Grpc(g) => &g.endpoint,
            Target::Http(h) => &h.endpoint,
        }
    }

    /// Plain HTTP/1.1: one request in flight per connection, so connections are workers.
    pub fn is_http1(&self) -> bool {
        matches!(self, Target::Http(h) if !h.http2)
    }

    /// Prefix of `{{.WorkerID}}`.
    pub fn worker_prefix(&self) -> &str {
        match self {
            Target::Grpc(g) => &g.worker_prefix,
            Target::Http(_) => "",
        }
    }
}

/// The four call kinds of a gRPC method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// One request, one reply.
    Unary,
    /// One request, a stream of replies.
    ServerStreaming,
    /// A stream of requests, one reply.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

impl CallKind {
    /// The kind of a method.
    pub fn of(client_streaming: bool, server_streaming: bool) -> CallKind {
        match (client_streaming, server_streaming) {
            (false, false) => CallKind::Unary,
            (false, true) => CallKind::ServerStreaming,
            (true, false) => CallKind::ClientStreaming,
            (true, true) => CallKind::Bidi,
        }
    }
}
