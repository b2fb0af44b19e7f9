//! Typed calls: [`Grpc`] sends prost messages over a [`Channel`] for all four call kinds, with
//! per-call metadata, deadline and compression. Generated clients (`volley-build`) are thin
//! wrappers over it, one method per rpc, as tonic's are over `tonic::client::Grpc`.
//!
//! Here: the client's configuration and each attempt's request head (interceptors first);
//! `unary` runs one request, one reply, with its retries; `open` the calls whose replies (or
//! requests) are streams; `call` what both do with a stream once leased (open it within the
//! deadline, read its response headers into a `Streaming`); `intercept`, `message` and
//! `streaming` the types a call's caller sees.

mod call;
mod intercept;
mod message;
mod open;
mod streaming;
mod unary;

use std::sync::Arc;

use bytes::Bytes;
use http::{
    HeaderMap, Method, Uri,
    uri::{Authority, PathAndQuery, Scheme},
};
use prost::Message;
use tokio::time::Instant;
use volley_wire::{
    Status,
    codec::{DEFAULT_MAX_RECV, encode_frame},
    compression::Encoding,
};

pub use intercept::{Attempt, AttemptEnd, ClientInterceptor};
pub use message::{IntoStreamingRequest, Request, Response};
pub use streaming::Streaming;

use self::{
    intercept::{Chain, Observed},
    message::Parts,
};
use crate::{Channel, Endpoint, EndpointError, Strategy, attempt::set_grpc_headers};

/// Why [`Grpc::connect`] could not reach its target.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The target is not a gRPC target.
    #[error(transparent)]
    Target(#[from] EndpointError),
    /// The first connection could not be opened.
    #[error("{}", .0.message())]
    Dial(Status),
}

impl From<std::convert::Infallible> for DialError {
    fn from(never: std::convert::Infallible) -> DialError {
        match never {}
    }
}

/// The typed-call core that generated clients wrap; cheap to clone (the channel is shared).
#[derive(Clone)]
pub struct Grpc {
    channel: Channel,
    scheme: Scheme,
    authority: Authority,
    send_compressed: bool,
    max_recv: usize,
    /// The client's interceptors, in order; `None` when there are none.
    interceptors: Option<Chain>,
    /// The target as interceptors are told it.
    target: Arc<str>,
}

impl std::fmt::Debug for Grpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grpc")
            .field("authority", &self.authority)
            .field("strategy", &self.channel.strategy())
            .finish_non_exhaustive()
    }
}

impl Grpc {
    /// Typed calls over `channel` (any strategy).
    pub fn new(channel: Channel) -> Grpc {
        let ep = channel.endpoint();
        let scheme = if ep.is_tls() {
            Scheme::HTTPS
        } else {
            Scheme::HTTP
        };
        // The endpoint checked its authority when it was built from a target.
        let authority = Authority::try_from(ep.authority.as_str())
            .unwrap_or_else(|_| Authority::from_static("localhost"));
        let target = Arc::from(ep.authority.as_str());
        Grpc {
            channel,
            scheme,
            authority,
            send_compressed: false,
            max_recv: DEFAULT_MAX_RECV,
            interceptors: None,
            target,
        }
    }

    /// Adds an interceptor that runs around every attempt of every call made through this
    /// `Grpc` and its clones (generated clients included), after the ones added before. See
    /// [`ClientInterceptor`].
    #[must_use]
    pub fn intercept(mut self, interceptor: impl ClientInterceptor) -> Self {
        let mut all: Vec<Arc<dyn ClientInterceptor>> =
            self.interceptors.as_deref().unwrap_or_default().to_vec();
        all.push(Arc::new(interceptor));
        self.interceptors = Some(all.into());
        self
    }

    /// Dials `dst` on one shared connection, as tonic's generated `connect` does: anything an
    /// [`Endpoint`] is made from (`"http://host:port"`, a `String`, an `http::Uri`, `host:port`,
    /// `dns:///host:port`, `unix:/path`, `https://...` for TLS with the system's roots) or an
    /// `Endpoint` itself. For another strategy build a [`Channel`] and use [`Grpc::new`].
    pub async fn connect<D>(dst: D) -> Result<Grpc, DialError>
    where
        D: TryInto<Endpoint>,
        D::Error: Into<DialError>,
    {
        let ep = dst.try_into().map_err(Into::into)?;
        let channel = Channel::new(ep, Strategy::Single);
        channel.warm().await.map_err(DialError::Dial)?;
        Ok(Grpc::new(channel))
    }

    /// Compresses request messages with gzip unless a call says otherwise (default off).
    #[must_use]
    pub fn send_compressed(mut self, on: bool) -> Self {
        self.send_compressed = on;
        self
    }

    /// Largest reply message accepted, after decompression (default 4 MiB, as grpc-go's).
    #[must_use]
    pub fn max_decoding_message_size(mut self, bytes: usize) -> Self {
        self.max_recv = bytes;
        self
    }

    /// The channel calls go over.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// One attempt's request head, its metadata first passed through the interceptors (whose
    /// watch on the attempt comes back with it; `Err` when one refused the call).
    fn attempt(
        &self,
        path: &'static str,
        parts: &Parts,
        compress: bool,
        number: u32,
        call_started: Instant,
    ) -> Result<(http::Request<()>, Option<Box<Observed>>), Status> {
        let Some(chain) = &self.interceptors else {
            return Ok((self.head(path, &parts.metadata, parts, compress), None));
        };
        let mut metadata = parts.metadata.clone();
        let observed = Observed::start(
            chain,
            path,
            &self.target,
            &mut metadata,
            parts.timeout.map(|t| call_started + t),
            number,
            call_started,
        )?;
        let head = self.head(path, &metadata, parts, compress);
        Ok((head, Some(Box::new(observed))))
    }

    /// The request head of one call: its metadata, then gRPC's headers over them.
    fn head(
        &self,
        path: &'static str,
        metadata: &HeaderMap,
        parts: &Parts,
        compress: bool,
    ) -> http::Request<()> {
        let mut uri = http::uri::Parts::default();
        uri.scheme = Some(self.scheme.clone());
        uri.authority = Some(self.authority.clone());
        uri.path_and_query = Some(PathAndQuery::from_static(path));
        let mut r = http::Request::new(());
        *r.method_mut() = Method::POST;
        *r.uri_mut() = Uri::from_parts(uri).expect("scheme, authority and path are set");
        let h = r.headers_mut();
        h.reserve(6 + metadata.len());
        for (k, v) in metadata {
            h.append(k, v.clone());
        }
        set_grpc_headers(h, USER_AGENT, parts.timeout, compress, true);
        r
    }
}

/// `user-agent` of typed calls.
const USER_AGENT: &str = concat!("volley-client/", env!("CARGO_PKG_VERSION"));

/// One request message as a frame, gzipped when asked.
fn frame<M: Message>(message: &M, compress: bool) -> Bytes {
    if compress {
        Encoding::Gzip.compress_frame(&message.encode_to_vec())
    } else {
        encode_frame(message)
    }
}
