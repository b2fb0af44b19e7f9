//! One unary call's attempt on an h2-crate connection, as channels, typed calls and the load
//! engine share it: the request head built once (`CallHead`), a pre-encoded body, the reply read
//! to its status without decoding the message (`UnaryReply`), and what a failure says about
//! sending the call again (`Failure`), in grpc-go's words.

use std::{future::poll_fn, time::Duration};

use bytes::{Bytes, BytesMut};
use h2::{RecvStream, SendStream, client::SendRequest};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, header::CONTENT_TYPE};
use volley_wire::{Code, Status, timeout::format_grpc_timeout};

/// A request head prepared once and cloned per call.
#[derive(Clone, Debug)]
pub struct CallHead {
    uri: Uri,
    headers: HeaderMap,
    /// Largest reply message accepted (ghz `--max-recv-message-size`).
    pub max_recv: usize,
}

impl CallHead {
    /// A head for `path` on `authority`, with gRPC's headers, `metadata`, an optional deadline
    /// header and gzip negotiation.
    pub fn new(
        scheme: &str,
        authority: &str,
        path: &str,
        metadata: &[(HeaderName, HeaderValue)],
        timeout: Option<Duration>,
        gzip: bool,
    ) -> Result<CallHead, String> {
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|e| format!("invalid call URI {scheme}://{authority}{path}: {e}"))?;
        let mut headers = HeaderMap::with_capacity(6 + metadata.len());
        set_grpc_headers(&mut headers, "volley-bench", timeout, gzip, gzip);
        for (k, v) in metadata {
            headers.append(k.clone(), v.clone());
        }
        Ok(CallHead {
            uri,
            headers,
            max_recv: usize::MAX,
        })
    }

    /// This head with `metadata` added after its own (per-call metadata).
    pub fn with_metadata(&self, metadata: &[(HeaderName, HeaderValue)]) -> CallHead {
        let mut head = self.clone();
        for (k, v) in metadata {
            head.headers.append(k.clone(), v.clone());
        }
        head
    }

    /// The method's path, `/package.Service/Method`.
    pub fn path(&self) -> &str {
        self.uri.path()
    }

    /// The request head for one call.
    pub fn request(&self) -> Request<()> {
        let mut r = Request::new(());
        *r.method_mut() = Method::POST;
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// Sets the headers every gRPC request carries (replacing any of the same name): content
/// type, `te`, `user-agent`, `grpc-timeout`, and gzip as sent (`grpc-encoding`) and as accepted
/// (`grpc-accept-encoding`).
pub(crate) fn set_grpc_headers(
    headers: &mut HeaderMap,
    user_agent: &'static str,
    timeout: Option<Duration>,
    send_gzip: bool,
    accept_gzip: bool,
) {
    use volley_wire::names::{GRPC_ACCEPT_ENCODING, GRPC_ENCODING, GRPC_TIMEOUT};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
    headers.insert(
        http::header::USER_AGENT,
        HeaderValue::from_static(user_agent),
    );
    if let Some(t) = timeout {
        let v = HeaderValue::from_str(&format_grpc_timeout(t)).expect("digits and a unit");
        headers.insert(GRPC_TIMEOUT, v);
    }
    if send_gzip {
        headers.insert(GRPC_ENCODING, HeaderValue::from_static("gzip"));
    }
    if accept_gzip {
        headers.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
    }
}

/// What a unary call returned, apart from its status.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnaryReply {
    /// Bytes of response messages received (framing included).
    pub bytes: usize,
}

impl UnaryReply {
    /// The reply, or ResourceExhausted when its message is over `max_recv` bytes, worded as
    /// grpc-go's client words it (ghz prints this).
    #[inline]
    pub fn within(self, max_recv: usize) -> Result<UnaryReply, Status> {
        let len = self.bytes.saturating_sub(volley_wire::codec::HEADER_LEN);
        if len > max_recv {
            return Err(too_large(len, max_recv));
        }
        Ok(self)
    }
}

/// Kept out of line: every call checks its size, almost none fails.
#[cold]
fn too_large(len: usize, max_recv: usize) -> Status {
    Status::resource_exhausted(format!(
        "grpc: received message larger than max ({len} vs. {max_recv})"
    ))
}

/// The status for a transport failure, worded as grpc-go words them (ghz prints these).
pub fn transport_status(e: &h2::Error) -> Status {
    if let Some(reason) = e.reason() {
        if e.is_reset() {
            return match reason {
                h2::Reason::CANCEL => Status::cancelled("grpc: the server cancelled the stream"),
                h2::Reason::REFUSED_STREAM => {
                    Status::unavailable("the server refused the stream (REFUSED_STREAM)")
                }
                r => Status::internal(format!(
                    "stream terminated by RST_STREAM with error code: {r:?}"
                )),
            };
        }
        if e.is_go_away() {
            return Status::unavailable("transport is closing");
        }
    }
    if e.is_io() {
        return Status::unavailable(format!("connection error: {e}"));
    }
    Status::unavailable(format!("transport: {e}"))
}

// Reached from outside through `load` only.
#[cfg_attr(not(feature = "load"), allow(unreachable_pub))]
/// A failed attempt, and what it says about the connection and a second try.
#[derive(Debug)]
pub struct Failure {
    /// The call's status.
    pub status: Status,
    /// The server never saw the call (the connection was gone before the stream opened, the
    /// stream was refused, or it lay beyond a GOAWAY's last stream id): sending it again is safe,
    /// as gRPC's transparent retry does.
    pub unprocessed: bool,
    /// The connection should take no new calls (it failed, or the peer is going away).
    pub retire: bool,
    /// The server's response headers had arrived: the call is committed, and a retry policy
    /// does not send it again (gRFC A6). A trailers-only answer is not committed.
    pub committed: bool,
}

pub(crate) fn failure(e: &h2::Error, before_send: bool) -> Failure {
    let refused = e.is_reset() && e.reason() == Some(h2::Reason::REFUSED_STREAM);
    let go_away = e.is_go_away();
    Failure {
        status: transport_status(e),
        unprocessed: before_send || refused || (go_away && e.is_remote()),
        retire: before_send || go_away || e.is_io(),
        committed: false,
    }
}

/// An attempt of a call that follows `previous` others of the same call (it says so in
/// `grpc-previous-rpc-attempts`, gRFC A6), the reply's bytes (its gRPC frames) kept in `keep`
/// when given.
pub(crate) async fn attempt_numbered(
    send: &SendRequest<Bytes>,
    head: &CallHead,
    body: Bytes,
    keep: Option<&mut BytesMut>,
    previous: u32,
) -> Result<UnaryReply, Failure> {
    let mut send = send.clone().ready().await.map_err(|e| failure(&e, true))?;
    let mut request = head.request();
    if previous > 0 {
        request.headers_mut().insert(
            volley_wire::names::GRPC_PREVIOUS_RPC_ATTEMPTS,
            HeaderValue::from(previous),
        );
    }
    let (resp, mut stream) = send
        .send_request(request, false)
        .map_err(|e| failure(&e, true))?;
    stream
        .send_data(body, true)
        .map_err(|e| failure(&e, false))?;
    let resp = resp.await.map_err(|e| failure(&e, false))?;
    let not_retried = |(status, committed)| Failure {
        status,
        unprocessed: false,
        retire: false,
        committed,
    };
    let reply = read_reply(resp, keep).await.map_err(not_retried)?;
    reply
        .within(head.max_recv)
        .map_err(|status| not_retried((status, true)))
}

/// Reads a response to its status, counting message bytes (and keeping the body's in `keep`
/// when given); a failure says whether it came after the response headers (a trailers-only
/// answer or an HTTP error did not).
pub(crate) async fn read_reply(
    resp: http::Response<RecvStream>,
    mut keep: Option<&mut BytesMut>,
) -> Result<UnaryReply, (Status, bool)> {
    let (parts, mut body) = resp.into_parts();
    if parts.status != http::StatusCode::OK {
        return Err((http_status(parts.status), false));
    }
    if let Some(s) = Status::from_headers(&parts.headers) {
        // Trailers-only.
        return if s.code() == Code::Ok {
            Ok(UnaryReply::default())
        } else {
            Err((s, false))
        };
    }
    let committed = |s| (s, true);
    let mut reply = UnaryReply::default();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| committed(transport_status(&e)))?;
        reply.bytes += chunk.len();
        if let Some(k) = keep.as_deref_mut() {
            k.extend_from_slice(&chunk);
        }
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body
        .trailers()
        .await
        .map_err(|e| committed(transport_status(&e)))?;
    match trailers.as_ref().and_then(Status::from_headers) {
        Some(s) if s.code() == Code::Ok => Ok(reply),
        Some(s) => Err(committed(s)),
        None => Err(committed(Status::internal(
            "server closed the stream without sending trailers",
        ))),
    }
}

pub(crate) fn http_status(s: http::StatusCode) -> Status {
    Status::new(
        Code::from_http_status(s.as_u16()),
        format!(
            "unexpected HTTP status code received from server: {} ({})",
            s.as_u16(),
            s.canonical_reason().unwrap_or("")
        ),
    )
}

/// Queues one message on a request stream once the peer's flow control has room for some of it
/// (h2 buffers the rest), so a fast sender cannot run ahead of a slow server without bound.
pub async fn send_message(
    out: &mut SendStream<Bytes>,
    msg: Bytes,
    end: bool,
) -> Result<(), Status> {
    // Nothing to wait for with an empty body (a Connect unary call of an empty message): h2
    // grants no capacity for zero bytes, so the loop below would wait for ever.
    if msg.is_empty() {
        return out.send_data(msg, end).map_err(|e| transport_status(&e));
    }
    out.reserve_capacity(msg.len());
    while out.capacity() == 0 {
        match poll_fn(|cx| out.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(transport_status(&e)),
            None => return Err(Status::unavailable("stream closed while sending")),
        }
    }
    out.send_data(msg, end).map_err(|e| transport_status(&e))
}
