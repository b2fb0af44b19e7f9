//! What a run calls: a gRPC method (endpoint, request head, call kind, payload), a plain HTTP
//! request, a weighted mix of those, or calls written by the caller, as one enum so that no
//! target is half of another.

pub(crate) mod build;
mod frame;
mod lines;
pub mod metadata;
pub mod mix;
pub mod payload;
mod web;

use std::{cell::RefCell, future::Future, pin::Pin, sync::Arc};

use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use volley_client::{CallHead, Connection, Endpoint, load::fast::frame::HeaderBlock};
use volley_proto::template::CallData;
use volley_wire::Status;

pub use build::TargetError;

use crate::recorder::Recorder;
use mix::MixTarget;
use payload::Payload;

/// What to call.
pub enum Target {
    /// A gRPC method.
    Grpc(GrpcTarget),
    /// A plain HTTP request (`volley bench http://...`).
    Http(HttpTarget),
    /// Calls written by the caller (a study such as `volley orders`), on HTTP/2.
    Custom(CustomTarget),
    /// Several gRPC methods or HTTP/2 requests to one server, each call to one of them.
    Mix(MixTarget),
}

/// Calls the engine does not know how to make: it dials, schedules, times and records them; the
/// [`CustomCall`] makes each one on a connection and may record figures of its own.
pub struct CustomTarget {
    /// Where.
    pub endpoint: Endpoint,
    /// The call.
    pub call: Arc<dyn CustomCall>,
}

/// The future of one custom call: the bytes received, or the status it failed with.
pub type CustomFuture<'a> = Pin<Box<dyn Future<Output = Result<usize, Status>> + 'a>>;

/// One call of a [`CustomTarget`].
pub trait CustomCall: Send + Sync {
    /// Makes call number `i` on `conn`. `rec` is the thread's recorder: the engine records the
    /// call itself (latency, status); the call may add per-message figures (`message_latency`,
    /// `messages_sent`, `messages_received`) and its own (`probe`).
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a>;
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
    /// Messages per stream call when a mix's entry sets its own (else the run's).
    pub stream_call_count: Option<u64>,
    /// The request head as the fast path sends it (encoded once).
    pub block: HeaderBlock,
    /// Metadata rendered per call (`-m` with template actions), sent after the head's.
    pub metadata: Option<Arc<metadata::MetadataTemplate>>,
    /// The call data every call starts from (the method's names), for templates (boxed: it is
    /// large, and the target enum carries its largest variant's size).
    pub base: Box<CallData>,
    /// A template reads `{{.UUID}}`: each call makes one (else none is made).
    pub uuid: bool,
}

impl GrpcTarget {
    /// The data of call `i` by worker `worker_id`, when its data or metadata is templated (one
    /// per call, shared by both as ghz shares it); `None` when nothing is rendered per call.
    #[inline]
    pub fn call_data(&self, i: u64, worker_id: &Arc<str>) -> Option<CallData> {
        (self.payload.is_templated() || self.metadata.is_some())
            .then(|| payload::call_data(&self.base, i, worker_id, self.uuid))
    }

    /// The metadata call `data` adds to the head (`None` when there is none per call).
    #[inline]
    pub fn call_metadata(
        &self,
        data: Option<&CallData>,
    ) -> Result<Option<Vec<metadata::Pair>>, Status> {
        match (&self.metadata, data) {
            (Some(t), Some(d)) => t.render(d).map(Some).map_err(Status::internal),
            _ => Ok(None),
        }
    }

    /// The head of a call with `data`: the target's, or one with the call's metadata added,
    /// made in `own` (a slot on the caller's stack: no `Cow` to test and drop per call).
    #[inline]
    pub fn head_for<'a>(
        &'a self,
        data: Option<&CallData>,
        own: &'a mut Option<CallHead>,
    ) -> Result<&'a CallHead, Status> {
        Ok(match self.call_metadata(data)? {
            None => &self.head,
            Some(md) => own.insert(self.head.with_metadata(&md)),
        })
    }

    /// [`Self::head_for`] as the fast path sends it: the target's block, or one with the call's
    /// metadata appended.
    #[inline]
    pub fn block_for<'a>(
        &'a self,
        data: Option<&CallData>,
        own: &'a mut Option<HeaderBlock>,
    ) -> Result<&'a HeaderBlock, Status> {
        Ok(match self.call_metadata(data)? {
            None => &self.block,
            Some(md) => own.insert(self.block.with_metadata(&md)),
        })
    }
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
            Target::Custom(c) => &c.endpoint,
            Target::Mix(m) => m.entries()[0].target.endpoint(),
        }
    }

    /// Each worker has a connection of its own (not a channel's): plain HTTP/1.1, one request
    /// in flight per connection, and custom calls, whose clients each own one connection.
    pub fn has_own_connections(&self) -> bool {
        matches!(self, Target::Http(h) if !h.http2) || matches!(self, Target::Custom(_))
    }

    /// What call number `i` calls, and which entry of a mix that is (`None` when not a mix).
    #[inline]
    pub fn leaf(&self, i: u64) -> (&Target, Option<usize>) {
        match self {
            Target::Mix(m) => {
                let e = m.pick(i);
                (&m.entries()[e].target, Some(e))
            }
            t => (t, None),
        }
    }

    /// The names and weights of a mix's entries (empty when not a mix).
    pub fn methods(&self) -> Vec<(String, u64)> {
        match self {
            Target::Mix(m) => m
                .entries()
                .iter()
                .map(|e| (e.name.clone(), e.weight))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Prefix of `{{.WorkerID}}`.
    pub fn worker_prefix(&self) -> &str {
        match self {
            Target::Grpc(g) => &g.worker_prefix,
            Target::Mix(m) => m.entries()[0].target.worker_prefix(),
            Target::Http(_) | Target::Custom(_) => "",
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
