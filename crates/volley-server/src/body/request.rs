//! Request bodies that HTTP/1.1 drains instead of dropping when a call ends early.
//!
//! Over HTTP/1.1 a server that answers (say, RESOURCE_EXHAUSTED for an oversized message) and
//! closes while the client is still uploading makes the client's write fail with a broken pipe,
//! and the client never reads the answer. Like Go's net/http, we read and discard what is left,
//! bounded in bytes and time, so the answer arrives. HTTP/2 needs none of this: the stream is
//! reset and the connection lives on.
//!
//! Bodies come from hyper (HTTP/1.1), straight from h2 (`conn::h2`), or, when volley's router is
//! a `tower::Service` in someone else's server (axum, a hyper loop), from any `http_body::Body`.

use std::{
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use volley_wire::Status;

/// At most this much is read and thrown away after the call has ended.
const DRAIN_BYTES: usize = 8 << 20;
/// For at most this long.
const DRAIN_TIME: Duration = Duration::from_secs(3);

/// Reads and drops what is left of a request body before a plain refusal (404, 405, 415),
/// bounded like the background drain. The refusal then follows a whole request, so a request
/// that is malformed further on (a wrong content-length, pseudo-headers in trailers) gets its
/// protocol error from the HTTP/2 layer rather than a reply to half of it. Free when the request
/// has no body.
pub(crate) async fn discard(body: &mut RequestBody) {
    if body.is_end_stream() {
        return;
    }
    let read = async {
        let mut read = 0;
        while let Some(Ok(frame)) =
            std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
        {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

/// A request body; over HTTP/1.1 the unread rest is drained in the background on drop.
pub(crate) struct RequestBody {
    inner: Option<Inner>,
    drain: bool,
}

enum Inner {
    Hyper(Incoming),
    H2(h2::RecvStream),
    /// Any body (the `tower::Service` path): boxed once per call.
    Other(http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>),
}

/// A body error of another server's body type.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that failed (the client reset the stream, or the connection broke).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    #[error(transparent)]
    H2(#[from] h2::Error),
    #[error("{0}")]
    Other(BoxError),
}

impl RequestBody {
    /// A body already read to its end.
    pub(crate) fn ended() -> Self {
        RequestBody {
            inner: None,
            drain: false,
        }
    }

    /// Wraps a body from hyper; `http1` turns draining on.
    pub(crate) fn new(inner: Incoming, http1: bool) -> Self {
        RequestBody {
            inner: Some(Inner::Hyper(inner)),
            drain: http1,
        }
    }

    /// Wraps any other server's body (volley's router as a `tower::Service`).
    pub(crate) fn other<B>(body: B) -> Self
    where
        B: Body + Send + 'static,
        B::Data: Into<Bytes>,
        B::Error: Into<BoxError>,
    {
        use http_body_util::BodyExt;
        let boxed = body
            .map_frame(|f| f.map_data(Into::into))
            .map_err(Into::into)
            .boxed_unsync();
        RequestBody {
            inner: Some(Inner::Other(boxed)),
            drain: false,
        }
    }

    /// Wraps an HTTP/2 stream's body from h2.
    pub(crate) fn h2(inner: h2::RecvStream) -> Self {
        RequestBody {
            inner: Some(Inner::H2(inner)),
            drain: false,
        }
    }
}

impl Inner {
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self {
            Inner::Hyper(b) => Pin::new(b).poll_frame(cx).map_err(BodyError::from),
            Inner::Other(b) => Pin::new(b).poll_frame(cx).map_err(BodyError::Other),
            Inner::H2(b) => {
                // Like hyper: the window is given back as soon as data is handed over, so
                // flow control bounds what is buffered unread, not what a handler keeps.
                if let Some(data) = ready!(b.poll_data(cx)) {
                    let data = data?;
                    let _ = b.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(match ready!(b.poll_trailers(cx)) {
                    Ok(Some(t)) => Some(Ok(Frame::trailers(t))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e.into())),
                })
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Inner::Hyper(b) => b.is_end_stream(),
            Inner::H2(b) => b.is_end_stream(),
            Inner::Other(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Inner::Hyper(b) => b.size_hint(),
            Inner::Other(b) => b.size_hint(),
            // h2 checks content-length against the data itself; no hint is needed here.
            Inner::H2(b) if b.is_end_stream() => SizeHint::with_exact(0),
            Inner::H2(_) => SizeHint::default(),
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.inner.as_mut() {
            Some(b) => b.poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Inner::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Inner::size_hint)
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else {
            return;
        };
        if !self.drain || body.is_end_stream() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            let drain = async {
                let mut read = 0;
                while let Some(Ok(frame)) = std::future::poll_fn(|cx| body.poll_frame(cx)).await {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    if read > DRAIN_BYTES {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
        });
    }
}

/// Reads a whole body, refusing more than `max` bytes.
pub(crate) async fn read_limited(
    mut body: RequestBody,
    max: usize,
) -> Result<Bytes, (Status, Option<StatusCode>)> {
    let mut buf = BytesMut::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let frame =
            frame.map_err(|e| (Status::cancelled(format!("reading the request: {e}")), None))?;
        if let Ok(d) = frame.into_data() {
            if buf.len() + d.len() > max {
                return Err((
                    Status::resource_exhausted(format!(
                        "request body larger than max ({max} bytes)"
                    )),
                    Some(StatusCode::PAYLOAD_TOO_LARGE),
                ));
            }
            buf.extend_from_slice(&d);
        }
    }
    Ok(buf.freeze())
}
