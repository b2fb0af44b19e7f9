//! Typed calls: [`Grpc`] sends prost messages over a [`Channel`] for all four call kinds, with
//! per-call metadata, deadline and compression. Generated clients (`volley-build`) are thin
//! wrappers over it, one method per rpc, as tonic's are over `tonic::client::Grpc`.

mod intercept;
mod message;
mod streaming;

use std::{pin::pin, sync::Arc};

use bytes::Bytes;
use futures_util::Stream;
use futures_util::StreamExt;
use h2::{SendStream, client::ResponseFuture};
use http::{
    HeaderMap, HeaderValue, Method, Uri,
    uri::{Authority, PathAndQuery, Scheme},
};
use prost::Message;
use tokio::time::Instant;
use volley_wire::{
    Code, Status,
    codec::{DEFAULT_MAX_RECV, FrameDecoder, encode_frame},
    compression::Encoding,
    names::{GRPC_ENCODING, GRPC_PREVIOUS_RPC_ATTEMPTS},
};

pub use intercept::{Attempt, AttemptEnd, ClientInterceptor};
pub use message::{IntoStreamingRequest, Request, Response};
pub use streaming::Streaming;

use crate::{
    Channel, Endpoint, EndpointError, Lease, Strategy,
    call::{Failure, failure, http_status, send_message, set_grpc_headers},
    channel::MAX_ATTEMPTS,
    endpoint::Target,
    retry::{self, Failed as _},
    service_config::CallPolicy,
};
use intercept::{Chain, Observed, SentTally};
use message::Parts;
use streaming::{AbortOnDrop, Held};

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
        let scheme = if ep.tls.is_some() {
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

    /// Dials `target` (`host:port`, `http://host:port`, `dns:///host:port`, `unix:/path`) in
    /// plaintext on one shared connection, as tonic's generated `connect` does; for TLS or another
    /// strategy build a [`Channel`] and use [`Grpc::new`].
    pub async fn connect(target: &str) -> Result<Grpc, DialError> {
        let target = target.strip_prefix("http://").unwrap_or(target);
        let ep = Endpoint::new(Target::parse(target)?)?;
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

    /// One request, one reply. A call the server never saw (refused stream, GOAWAY, connection
    /// gone before the stream opened) is sent again, up to three attempts; with a service
    /// config on the channel ([`Channel::with_service_config`]), the method's retry or hedging
    /// policy applies too, and its timeout when the request sets none.
    pub async fn unary<Req, Resp>(
        &self,
        path: &'static str,
        request: Request<Req>,
    ) -> Result<Response<Resp>, Status>
    where
        Req: Message,
        Resp: Message + Default,
    {
        let (mut parts, message) = request.into_parts();
        let config = self.channel.service_config().map(|c| &**c);
        let method = config.and_then(|c| c.method(path));
        if parts.timeout.is_none() {
            parts.timeout = method.and_then(|m| m.timeout);
        }
        let compress = parts.compress.unwrap_or(self.send_compressed);
        let body = frame(&message, compress);
        let started = Instant::now();
        let deadline = parts.timeout.map(|t| started + t);
        let attempt = |n| self.unary_attempt(path, &parts, compress, &body, (started, deadline), n);
        match (method.and_then(|m| m.policy.as_ref()), config) {
            (Some(CallPolicy::Retry(p)), Some(c)) => {
                retry::retry(p, c.throttle(), deadline, attempt).await
            }
            (Some(CallPolicy::Hedge(p)), Some(c)) => retry::hedge(p, c.throttle(), attempt).await,
            _ => attempt(1).await.map_err(|f| f.finish(false)),
        }
    }

    /// Attempt `n` of a unary call (sent again at once while the server never saw it), read to
    /// its one reply.
    async fn unary_attempt<Resp: Message + Default>(
        &self,
        path: &'static str,
        parts: &Parts,
        compress: bool,
        body: &Bytes,
        (started, deadline): (Instant, Option<Instant>),
        n: u32,
    ) -> Result<Response<Resp>, AttemptFailed> {
        let fatal = |status| AttemptFailed {
            status,
            committed: true,
            observed: None,
        };
        let mut tries: u32 = 0;
        let (headers, mut replies) = loop {
            tries += 1;
            let (mut head, mut observed) = self
                .attempt(path, parts, compress, n + tries - 1, started)
                .map_err(fatal)?;
            if n > 1 {
                head.headers_mut()
                    .insert(GRPC_PREVIOUS_RPC_ATTEMPTS, HeaderValue::from(n - 1));
            }
            if let Some(o) = &observed {
                o.sent_tally().frame(body.len());
            }
            let lease = match self.channel.lease().await {
                Ok(l) => l,
                Err(status) => {
                    return Err(AttemptFailed {
                        status,
                        committed: false,
                        observed,
                    });
                }
            };
            let sent = async {
                let (resp, mut out) = open(&lease, head).await?;
                out.send_data(body.clone(), true)
                    .map_err(|e| failure(&e, false))?;
                resp.await.map_err(|e| failure(&e, false))
            };
            match within(deadline, sent).await {
                Ok(resp) => {
                    let held = self.held(Some(lease), None, deadline);
                    match self.replies::<Resp>(resp, held, observed) {
                        Ok(r) => break r,
                        Err((status, observed)) => {
                            return Err(AttemptFailed {
                                status,
                                committed: false,
                                observed,
                            });
                        }
                    }
                }
                Err(f) => {
                    if f.retire {
                        lease.connection().retire();
                    }
                    if !f.unprocessed || tries as usize >= MAX_ATTEMPTS {
                        return Err(AttemptFailed {
                            status: f.status,
                            committed: f.committed,
                            observed,
                        });
                    }
                    if let Some(o) = &mut observed {
                        o.retrying();
                    }
                    drop(end_attempt(observed, f.status));
                }
            }
        };
        replies.keep_observed();
        match single(&mut replies).await {
            Ok(reply) => Ok(Response::from_parts(
                headers,
                reply,
                replies.take_trailers(),
            )),
            Err(status) => Err(AttemptFailed {
                status,
                committed: true,
                observed: replies.take_observed(),
            }),
        }
    }

    /// One request, a stream of replies.
    pub async fn server_streaming<Req, Resp>(
        &self,
        path: &'static str,
        request: Request<Req>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        Req: Message,
        Resp: Message + Default,
    {
        let (parts, message) = request.into_parts();
        let compress = parts.compress.unwrap_or(self.send_compressed);
        let one = Outgoing::<futures_util::stream::Empty<()>>::One(frame(&message, compress));
        self.open_call(path, parts, compress, one).await
    }

    /// A stream of requests, one reply.
    pub async fn client_streaming<S, Resp>(
        &self,
        path: &'static str,
        request: Request<S>,
    ) -> Result<Response<Resp>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let (headers, mut replies, _) = self.streaming(path, request).await?.into_parts();
        let reply = single(&mut replies).await?;
        Ok(Response::from_parts(
            headers,
            reply,
            replies.take_trailers(),
        ))
    }

    /// A stream of requests and a stream of replies, both open at once. The requests are sent
    /// by a task of their own, with the server's flow control, until the stream ends or the
    /// call does.
    pub async fn streaming<S, Resp>(
        &self,
        path: &'static str,
        request: Request<S>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let (parts, messages) = request.into_parts();
        let compress = parts.compress.unwrap_or(self.send_compressed);
        self.open_call(path, parts, compress, Outgoing::Many(messages))
            .await
    }

    /// Opens a call whose replies are read as a stream, sends its request(s), and waits for the
    /// response headers (all within the deadline).
    async fn open_call<S, Resp>(
        &self,
        path: &'static str,
        parts: Parts,
        compress: bool,
        outgoing: Outgoing<S>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let started = Instant::now();
        let deadline = parts.timeout.map(|t| started + t);
        let (head, observed) = self.attempt(path, &parts, compress, 1, started)?;
        let tally = observed.as_ref().map(|o| o.sent_tally());
        let mut observed = Some(observed);
        let mut fail = |s: Status| end_attempt(observed.take().flatten(), s);
        let lease = self.channel.lease().await.map_err(&mut fail)?;
        let (resp, mut out) = within(deadline, open(&lease, head))
            .await
            .map_err(|f| fail(f.status))?;
        let sender = match outgoing {
            Outgoing::One(body) => {
                if let Some(t) = &tally {
                    t.frame(body.len());
                }
                out.send_data(body, true)
                    .map_err(|e| fail(failure(&e, false).status))?;
                None
            }
            Outgoing::Many(messages) => Some(AbortOnDrop(tokio::spawn(send_all(
                out, messages, compress, tally,
            )))),
        };
        let resp = within(deadline, async {
            resp.await.map_err(|e| failure(&e, false))
        })
        .await
        .map_err(|f| fail(f.status))?;
        let held = self.held(Some(lease), sender, deadline);
        let (headers, replies) = self
            .replies(resp, held, observed.flatten())
            .map_err(|(s, o)| end_attempt(o, s))?;
        Ok(Response::from_parts(headers, replies, HeaderMap::new()))
    }

    fn held(
        &self,
        lease: Option<Lease>,
        sender: Option<AbortOnDrop>,
        deadline: Option<Instant>,
    ) -> Held {
        Held {
            _lease: lease,
            _sender: sender,
            deadline: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
            observed: None,
        }
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

    /// The response headers and the reply stream, or the call's status when the server answered
    /// with an HTTP error or a trailers-only response (with the attempt's watch, not yet
    /// ended).
    #[allow(clippy::type_complexity)]
    fn replies<Resp: Message + Default>(
        &self,
        resp: http::Response<h2::RecvStream>,
        mut held: Held,
        observed: Option<Box<Observed>>,
    ) -> Result<(HeaderMap, Streaming<Resp>), (Status, Option<Box<Observed>>)> {
        let (head, body) = resp.into_parts();
        if head.status != http::StatusCode::OK {
            return Err((http_status(head.status), observed));
        }
        held.observed = observed;
        let mut fail = |s: Status| (s, held.observed.take());
        if let Some(status) = Status::from_headers(&head.headers) {
            if status.code() != Code::Ok {
                return Err(fail(status));
            }
            held.end(None);
            let trailers = head.headers.clone();
            return Ok((head.headers, Streaming::ended(body, trailers)));
        }
        let encoding = Encoding::from_header(head.headers.get(GRPC_ENCODING)).map_err(&mut fail)?;
        let decoder = FrameDecoder::new(encoding, self.max_recv);
        Ok((head.headers, Streaming::new(body, decoder, held)))
    }
}

/// A unary attempt that failed, its interceptors' watch not yet ended: the retry decides
/// whether they are told another attempt follows.
struct AttemptFailed {
    status: Status,
    committed: bool,
    observed: Option<Box<Observed>>,
}

impl retry::Failed for AttemptFailed {
    fn status(&self) -> &Status {
        &self.status
    }
    fn committed(&self) -> bool {
        self.committed
    }
    fn finish(mut self, retrying: bool) -> Status {
        if let Some(o) = self.observed.as_mut().filter(|_| retrying) {
            o.retrying();
        }
        end_attempt(self.observed, self.status)
    }
}

/// Tells an attempt's interceptors it failed with `status`, and gives the status back.
fn end_attempt(observed: Option<Box<Observed>>, status: Status) -> Status {
    if let Some(mut o) = observed {
        o.end(Some(status.clone()));
    }
    status
}

/// What a call sends: one pre-framed request, or a stream of messages sent by a task.
enum Outgoing<S> {
    One(Bytes),
    Many(S),
}

/// `user-agent` of typed calls.
const USER_AGENT: &str = concat!("volley-client/", env!("CARGO_PKG_VERSION"));

/// Opens the call's stream on the leased connection; a failure here is one the server never saw.
async fn open(
    lease: &Lease,
    head: http::Request<()>,
) -> Result<(ResponseFuture, SendStream<Bytes>), Failure> {
    lease
        .connection()
        .open_stream(head)
        .await
        .map_err(|status| Failure {
            status,
            unprocessed: true,
            retire: true,
            committed: false,
        })
}

/// Runs `fut` until `deadline`, if any, failing with DEADLINE_EXCEEDED after it (also when it
/// failed on its own once the deadline had passed: the server's reset can beat our timer).
async fn within<T>(
    deadline: Option<Instant>,
    fut: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let Some(d) = deadline else {
        return fut.await;
    };
    let expired = || Failure {
        status: streaming::deadline_exceeded(),
        unprocessed: false,
        retire: false,
        committed: false,
    };
    match tokio::time::timeout_at(d, fut).await {
        Ok(Err(_)) if Instant::now() >= d => Err(expired()),
        Ok(r) => r,
        Err(_) => Err(expired()),
    }
}

/// The one reply of a unary or client-streaming call, read to the call's end.
async fn single<T: Message + Default>(replies: &mut Streaming<T>) -> Result<T, Status> {
    let Some(reply) = replies.message().await? else {
        return Err(Status::internal(
            "the server ended a unary call without a reply",
        ));
    };
    if replies.message().await?.is_some() {
        return Err(Status::internal(
            "the server sent more than one reply to a unary call",
        ));
    }
    Ok(reply)
}

/// One request message as a frame, gzipped when asked.
fn frame<M: Message>(message: &M, compress: bool) -> Bytes {
    if compress {
        Encoding::Gzip.compress_frame(&message.encode_to_vec())
    } else {
        encode_frame(message)
    }
}

/// Sends every message of `messages`, then ends the request stream. Stops quietly when the
/// call is gone (the reply side reports its status).
async fn send_all<S>(
    mut out: SendStream<Bytes>,
    messages: S,
    compress: bool,
    tally: Option<Arc<SentTally>>,
) where
    S: Stream + Send,
    S::Item: Message,
{
    let mut messages = pin!(messages);
    while let Some(m) = messages.next().await {
        let frame = frame(&m, compress);
        if let Some(t) = &tally {
            t.frame(frame.len());
        }
        if send_message(&mut out, frame, false).await.is_err() {
            return;
        }
    }
    let _ = out.send_data(Bytes::new(), true);
}
