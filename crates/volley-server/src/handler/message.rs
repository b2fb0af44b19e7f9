//! What a handler receives (`Request`) and returns (`Response`): a message plus its metadata.

use std::time::Duration;

use http::HeaderMap;
use tokio::time::Instant;

use crate::intercept::CallInfo;

/// A call's input: the request message (or stream), its metadata, and the call's facts (method,
/// peer, protocol, deadline: [`Request::call`]).
#[derive(Debug)]
pub struct Request<T> {
    metadata: HeaderMap,
    info: CallInfo,
    extensions: http::Extensions,
    compressed: bool,
    message: T,
}

impl<T> Request<T> {
    /// A request with no metadata and no deadline (for calling handlers directly in tests).
    pub fn new(message: T) -> Request<T> {
        Request {
            metadata: HeaderMap::new(),
            info: CallInfo::default(),
            extensions: http::Extensions::new(),
            compressed: false,
            message,
        }
    }

    pub(crate) fn from_parts(info: CallInfo, metadata: HeaderMap, message: T) -> Self {
        Request {
            metadata,
            info,
            extensions: http::Extensions::new(),
            compressed: false,
            message,
        }
    }

    pub(crate) fn with_compressed(mut self, compressed: bool) -> Self {
        self.compressed = compressed;
        self
    }

    /// Whether the request message arrived compressed (unary and server-streaming calls; for a
    /// request stream see [`crate::Streaming::last_compressed`]).
    pub fn message_compressed(&self) -> bool {
        self.compressed
    }

    pub(crate) fn with_extensions(mut self, extensions: http::Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Values the transport attached to the call, such as [`crate::ConnectGetQuery`] for a
    /// Connect GET request. Empty (and allocation-free) for ordinary calls.
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }

    /// Mutable extensions.
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }

    /// The request headers (gRPC metadata, plus the HTTP/2 ones such as `content-type`).
    pub fn metadata(&self) -> &HeaderMap {
        &self.metadata
    }

    /// The call's facts: the method called (and its descriptor), the peer's address and TLS
    /// certificates, the protocol, the deadline.
    pub fn call(&self) -> &CallInfo {
        &self.info
    }

    /// The peer's address (`None` over a Unix socket), as tonic's `Request::remote_addr`.
    pub fn remote_addr(&self) -> Option<std::net::SocketAddr> {
        self.info.peer_addr()
    }

    /// The instant the call's deadline (`grpc-timeout`) expires, if the client set one.
    pub fn deadline(&self) -> Option<Instant> {
        self.info.deadline()
    }

    /// Time left before the deadline, if any.
    pub fn time_left(&self) -> Option<Duration> {
        self.info.time_left()
    }

    /// The message (or inbound stream).
    pub fn get_ref(&self) -> &T {
        &self.message
    }

    /// Mutable message (or inbound stream).
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.message
    }

    /// Takes the message, dropping the metadata.
    pub fn into_inner(self) -> T {
        self.message
    }

    /// Splits into metadata and message.
    pub fn into_parts(self) -> (HeaderMap, T) {
        (self.metadata, self.message)
    }

    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Request<U> {
        Request {
            metadata: self.metadata,
            info: self.info,
            extensions: self.extensions,
            compressed: self.compressed,
            message: f(self.message),
        }
    }

    pub(crate) fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Request<U>, E> {
        Ok(Request {
            metadata: self.metadata,
            info: self.info,
            extensions: self.extensions,
            compressed: self.compressed,
            message: f(self.message)?,
        })
    }
}

/// A call's output: the reply message (or stream), initial metadata and trailing metadata.
#[derive(Debug)]
pub struct Response<T> {
    metadata: HeaderMap,
    trailers: HeaderMap,
    compress: Option<bool>,
    message: T,
}

impl<T> Response<T> {
    /// A response with no extra metadata. `HeaderMap::new` does not allocate.
    pub fn new(message: T) -> Response<T> {
        Response {
            metadata: HeaderMap::new(),
            trailers: HeaderMap::new(),
            compress: None,
            message,
        }
    }

    /// Compress this call's replies (gzip, when the client accepts it) or not, whatever the
    /// server's default (`ServerBuilder::send_compressed`). Single replies of a stream can opt
    /// out with [`crate::Reply`].
    pub fn set_compressed(&mut self, on: bool) {
        self.compress = Some(on);
    }

    /// The call's compression choice, if the handler made one.
    pub(crate) fn compression(&self) -> Option<bool> {
        self.compress
    }

    /// Initial metadata, sent with the response headers.
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        &mut self.metadata
    }

    /// Trailing metadata, sent beside `grpc-status`.
    pub fn trailers_mut(&mut self) -> &mut HeaderMap {
        &mut self.trailers
    }

    /// The message.
    pub fn get_ref(&self) -> &T {
        &self.message
    }

    /// Maps the message, keeping the metadata.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Response<U> {
        Response {
            metadata: self.metadata,
            trailers: self.trailers,
            compress: self.compress,
            message: f(self.message),
        }
    }

    pub(crate) fn into_parts(self) -> (HeaderMap, T, HeaderMap) {
        (self.metadata, self.message, self.trailers)
    }
}

impl<T> From<T> for Response<T> {
    fn from(message: T) -> Self {
        Response::new(message)
    }
}
