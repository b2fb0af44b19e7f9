//! The response body: frames of a reply (one or a stream) followed by the status trailers.

use std::{
    convert::Infallible,
    pin::Pin,
    task::{Context, Poll},
};

use crate::intercept::EndGuard;
use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::{HeaderMap, StatusCode, header::CONTENT_TYPE};
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use volley_wire::{
    Code, Status,
    codec::{FLAG_NO_COMPRESS, HEADER_LEN},
    compression::ACCEPT_ENCODING,
    compression::Encoding,
    names::{GRPC_ACCEPT_ENCODING, GRPC_STATUS},
};

/// Encoded, uncompressed frames of a response stream.
pub(crate) type FrameStream = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send + 'static>>;

/// The body of volley's answers (an `http_body::Body` of `Bytes`, never failing): a gRPC reply's
/// frames and its status trailers, a gRPC-Web or Connect envelope, or a plain HTTP answer. Unary
/// replies are two frames (data, trailers) with no further state; streams are polled with the
/// call's deadline and end with the status in the trailers. A call with interceptors carries
/// their `EndGuard` here, which sees every frame go out.
pub struct ResponseBody(Kind, Option<EndGuard>);

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseBody").finish_non_exhaustive()
    }
}

enum Kind {
    /// Trailers-only responses: the status travelled in the headers.
    Empty,
    Unary {
        data: Option<Bytes>,
        trailers: Option<HeaderMap>,
    },
    Stream(Box<StreamState>),
    /// Any other body (plain HTTP answers), boxed.
    Other(Box<dyn Body<Data = Bytes, Error = Infallible> + Send + Unpin>),
}

struct StreamState {
    frames: FrameStream,
    trailers: Option<HeaderMap>,
    deadline: Option<Pin<Box<Sleep>>>,
    compress: Option<Encoding>,
    max_send: usize,
}

/// The trailers that close a call: user trailers plus `grpc-status` (and `grpc-message`).
pub(crate) fn status_trailers(mut trailers: HeaderMap, status: Option<&Status>) -> HeaderMap {
    if status.is_none() && trailers.is_empty() {
        // The common end of a call: a clone of the finished map, no hashing (see
        // `grpc_headers`).
        static OK: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(|| {
            HeaderMap::from_iter([(GRPC_STATUS, Code::Ok.header_value())])
        });
        return OK.clone();
    }
    match status {
        None => {
            trailers.insert(GRPC_STATUS, Code::Ok.header_value());
        }
        Some(s) => s.write_to(&mut trailers),
    }
    trailers
}

/// Compresses a frame when asked to, and checks the send limit.
pub(crate) fn outgoing_frame(
    frame: Bytes,
    compress: Option<Encoding>,
    max_send: usize,
) -> Result<Bytes, Status> {
    let len = frame.len() - HEADER_LEN;
    if len > max_send {
        return Err(Status::resource_exhausted(format!(
            "grpc: trying to send message larger than max ({len} vs. {max_send})"
        )));
    }
    if frame[0] & FLAG_NO_COMPRESS != 0 {
        let mut b = BytesMut::from(frame);
        b[0] &= !FLAG_NO_COMPRESS;
        return Ok(b.freeze());
    }
    Ok(match compress {
        Some(enc) => enc.compress_frame(&frame[HEADER_LEN..]),
        None => frame,
    })
}

/// The empty body.
impl Default for ResponseBody {
    fn default() -> Self {
        ResponseBody::empty()
    }
}

impl ResponseBody {
    /// A body with nothing in it.
    pub(crate) fn empty() -> Self {
        ResponseBody(Kind::Empty, None)
    }

    pub(crate) fn unary(data: Bytes, trailers: HeaderMap) -> Self {
        ResponseBody(
            Kind::Unary {
                data: Some(data),
                trailers: Some(trailers),
            },
            None,
        )
    }

    /// A unary reply's frame and trailers, taken whole (the HTTP/2 writer sends them at once);
    /// `None` for any other body.
    pub(crate) fn take_unary(&mut self) -> Option<(Bytes, HeaderMap)> {
        let (data, trailers) = match &mut self.0 {
            Kind::Unary {
                data: data @ Some(_),
                trailers: trailers @ Some(_),
            } => (data.take()?, trailers.take()?),
            _ => return None,
        };
        if let Some(end) = &mut self.1 {
            end.sent(data.len());
            end.status_from(&trailers);
        }
        Some((data, trailers))
    }

    /// Lets an interceptors' guard watch this body: it counts the frames sent and reads the
    /// status from the trailers (or from `trailers_only` headers), and fires when dropped.
    pub(crate) fn watch(&mut self, end: EndGuard) {
        self.1 = Some(end);
    }

    /// Adds trailers to the ones still to be sent; false when there are none to add to
    /// (a trailers-only or plain answer).
    pub(crate) fn extend_trailers(&mut self, extra: HeaderMap) -> bool {
        let pending = match &mut self.0 {
            Kind::Unary { trailers, .. } => trailers.as_mut(),
            Kind::Stream(s) => s.trailers.as_mut(),
            _ => None,
        };
        match pending {
            Some(t) => {
                t.extend(extra);
                true
            }
            None => false,
        }
    }

    pub(crate) fn stream(
        frames: FrameStream,
        trailers: HeaderMap,
        deadline: Option<Instant>,
        compress: Option<Encoding>,
        max_send: usize,
    ) -> Self {
        ResponseBody(
            Kind::Stream(Box::new(StreamState {
                frames,
                trailers: Some(trailers),
                deadline: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
                compress,
                max_send,
            })),
            None,
        )
    }

    /// Wraps any other body (plain-HTTP answers share the server's response type).
    pub(crate) fn other(
        body: impl Body<Data = Bytes, Error = Infallible> + Send + Unpin + 'static,
    ) -> Self {
        ResponseBody(Kind::Other(Box::new(body)), None)
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let frame = this.poll_kind(cx);
        if let (Some(end), Poll::Ready(Some(Ok(frame)))) = (&mut this.1, &frame) {
            if let Some(data) = frame.data_ref() {
                end.sent(data.len());
            } else if let Some(t) = frame.trailers_ref() {
                end.status_from(t);
            }
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Empty => true,
            Kind::Unary { data, trailers } => data.is_none() && trailers.is_none(),
            Kind::Stream(s) => s.trailers.is_none(),
            Kind::Other(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Other(b) => b.size_hint(),
            _ => SizeHint::default(),
        }
    }
}

impl ResponseBody {
    fn poll_kind(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.0 {
            Kind::Empty => Poll::Ready(None),
            Kind::Unary { data, trailers } => Poll::Ready(match data.take() {
                Some(d) => Some(Ok(Frame::data(d))),
                None => trailers.take().map(|t| Ok(Frame::trailers(t))),
            }),
            Kind::Stream(s) => s.poll(cx),
            Kind::Other(b) => Pin::new(b).poll_frame(cx),
        }
    }
}

impl StreamState {
    fn finish(
        &mut self,
        status: Option<&Status>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let trailers = self.trailers.take().map(|t| status_trailers(t, status));
        self.deadline = None;
        Poll::Ready(trailers.map(|t| Ok(Frame::trailers(t))))
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.trailers.is_none() {
            return Poll::Ready(None);
        }
        if let Some(d) = &mut self.deadline
            && d.as_mut().poll(cx).is_ready()
        {
            return self.finish(Some(&Status::deadline_exceeded(
                "context deadline exceeded",
            )));
        }
        match self.frames.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => self.finish(None),
            Poll::Ready(Some(Err(status))) => self.finish(Some(&status)),
            Poll::Ready(Some(Ok(frame))) => {
                match outgoing_frame(frame, self.compress, self.max_send) {
                    Ok(f) => Poll::Ready(Some(Ok(Frame::data(f)))),
                    Err(status) => self.finish(Some(&status)),
                }
            }
        }
    }
}

/// The HTTP response every call path returns.
pub(crate) type HttpResponse = http::Response<ResponseBody>;

/// A response whose headers carry the status and whose body is empty ("Trailers-Only"); `shape`
/// gives it its content type, as every framed response.
pub(crate) fn trailers_only(status: &Status) -> HttpResponse {
    let mut resp = http::Response::new(ResponseBody::empty());
    let h = resp.headers_mut();
    h.insert(GRPC_ACCEPT_ENCODING, ACCEPT_ENCODING);
    status.write_to(h);
    resp
}

/// A plain-text HTTP answer (for requests that are not gRPC at all).
pub(crate) fn plain(code: StatusCode, text: impl Into<Bytes>) -> HttpResponse {
    let body = http_body_util::Full::new(text.into());
    let mut resp = http::Response::new(ResponseBody::other(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
