//! [`Streaming`]: the replies of a typed call as they arrive, decoded, then its trailers.

use std::{
    future::poll_fn,
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use futures_util::Stream;
use h2::RecvStream;
use http::HeaderMap;
use prost::Message;
use tokio::{task::JoinHandle, time::Sleep};
use volley_wire::{Code, Status, codec::FrameDecoder};

use super::intercept::Observed;
use crate::{Lease, attempt::transport_status};

/// The status of a call whose deadline passed, worded as grpc-go words it.
pub(crate) fn deadline_exceeded() -> Status {
    Status::new(Code::DeadlineExceeded, "context deadline exceeded")
}

/// Aborts the task sending a call's request stream once the call is over or abandoned.
pub(crate) struct AbortOnDrop(pub(crate) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the call holds while its replies are read: its connection lease, its request-stream
/// sender, its deadline.
#[derive(Default)]
pub(crate) struct Held {
    /// Held for its drop: the connection stays counted in flight while replies are read.
    pub(crate) _lease: Option<Lease>,
    /// Held for its drop: the request stream stops when the call ends.
    pub(crate) _sender: Option<AbortOnDrop>,
    pub(crate) deadline: Option<Pin<Box<Sleep>>>,
    /// The attempt as the client's interceptors watch it (when there are any).
    pub(crate) observed: Option<Box<Observed>>,
}

impl Held {
    /// Tells the interceptors how the attempt ended (`None`: OK).
    pub(crate) fn end(&mut self, status: Option<&Status>) {
        if let Some(o) = &mut self.observed {
            o.end(status.cloned());
        }
    }
}

enum State {
    Body,
    Trailers,
    Done,
}

/// A stream of typed replies; ends with `None` after an OK status, or with one `Err` carrying
/// the call's status. Read it with [`Streaming::message`] or as a [`Stream`].
pub struct Streaming<T> {
    body: RecvStream,
    decoder: FrameDecoder,
    state: State,
    trailers: Option<HeaderMap>,
    held: Held,
    /// A failure leaves the attempt's watch in place for [`Streaming::take_observed`] (a
    /// unary call's retry decides whether another attempt follows before it ends).
    keep_observed: bool,
    _message: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streaming")
            .field("trailers", &self.trailers)
            .finish_non_exhaustive()
    }
}

impl<T: Message + Default> Streaming<T> {
    pub(crate) fn new(body: RecvStream, decoder: FrameDecoder, held: Held) -> Self {
        Streaming {
            body,
            decoder,
            state: State::Body,
            trailers: None,
            held,
            keep_observed: false,
            _message: PhantomData,
        }
    }

    /// The next reply; `Ok(None)` once the call ended with OK.
    pub async fn message(&mut self) -> Result<Option<T>, Status> {
        poll_fn(|cx| Pin::new(&mut *self).poll_next(cx))
            .await
            .transpose()
    }

    /// The trailing metadata, once the stream has ended (`grpc-status` included).
    pub fn trailers(&self) -> Option<&HeaderMap> {
        self.trailers.as_ref()
    }

    /// Keep the attempt's watch after a failure, for [`Streaming::take_observed`].
    pub(crate) fn keep_observed(&mut self) {
        self.keep_observed = true;
    }

    /// The attempt's watch, once the call failed (with [`Streaming::keep_observed`]).
    pub(crate) fn take_observed(&mut self) -> Option<Box<Observed>> {
        self.held.observed.take()
    }

    pub(crate) fn take_trailers(&mut self) -> HeaderMap {
        self.trailers.take().unwrap_or_default()
    }

    /// A transport error's status; once the deadline has passed, DEADLINE_EXCEEDED (a server
    /// may reset a stream it timed out before our own timer fires), as grpc-go reports it.
    fn transport(&self, e: &h2::Error) -> Status {
        match &self.held.deadline {
            Some(d) if d.is_elapsed() || d.deadline() <= tokio::time::Instant::now() => {
                deadline_exceeded()
            }
            _ => transport_status(e),
        }
    }

    fn fail(&mut self, status: Status) -> Poll<Option<Result<T, Status>>> {
        self.state = State::Done;
        self.held.end(Some(&status));
        let observed = self.keep_observed.then(|| self.held.observed.take());
        self.held = Held::default();
        self.held.observed = observed.flatten();
        Poll::Ready(Some(Err(status)))
    }

    fn decode(&mut self, payload: Bytes) -> Poll<Option<Result<T, Status>>> {
        if let Some(o) = &mut self.held.observed {
            o.received(payload.len());
        }
        match T::decode(payload) {
            Ok(m) => Poll::Ready(Some(Ok(m))),
            Err(e) => self.fail(Status::internal(format!(
                "grpc: failed to unmarshal the received message: {e}"
            ))),
        }
    }
}

impl<T: Message + Default> Stream for Streaming<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if matches!(this.state, State::Body | State::Trailers)
                && let Some(d) = this.held.deadline.as_mut()
                && d.as_mut().poll(cx).is_ready()
            {
                return this.fail(deadline_exceeded());
            }
            match std::mem::replace(&mut this.state, State::Done) {
                State::Done => return Poll::Ready(None),
                State::Body => {
                    this.state = State::Body;
                    match this.decoder.next_message() {
                        Ok(Some(payload)) => return this.decode(payload),
                        Ok(None) => {}
                        Err(s) => return this.fail(s),
                    }
                    match ready!(this.body.poll_data(cx)) {
                        Some(Ok(chunk)) => {
                            let _ = this.body.flow_control().release_capacity(chunk.len());
                            this.decoder.push(chunk);
                        }
                        Some(Err(e)) => {
                            let status = this.transport(&e);
                            return this.fail(status);
                        }
                        None if this.decoder.is_empty() => this.state = State::Trailers,
                        None => {
                            return this.fail(Status::internal(
                                "the server ended the stream inside a message",
                            ));
                        }
                    }
                }
                State::Trailers => {
                    this.state = State::Trailers;
                    let trailers = match ready!(this.body.poll_trailers(cx)) {
                        Ok(t) => t.unwrap_or_default(),
                        Err(e) => {
                            let status = this.transport(&e);
                            return this.fail(status);
                        }
                    };
                    let status = Status::from_headers(&trailers);
                    this.trailers = Some(trailers);
                    match status {
                        Some(s) if s.code() == Code::Ok => {
                            this.held.end(None);
                            this.held = Held::default();
                            this.state = State::Done;
                            return Poll::Ready(None);
                        }
                        Some(s) => return this.fail(s),
                        None => {
                            return this.fail(Status::internal(
                                "server closed the stream without sending trailers",
                            ));
                        }
                    }
                }
            }
        }
    }
}

impl<T> Streaming<T> {
    /// A stream that already ended with OK (a trailers-only response: `trailers` are its headers).
    pub(crate) fn ended(body: RecvStream, trailers: HeaderMap) -> Self {
        Streaming {
            body,
            decoder: FrameDecoder::new(None, 0),
            state: State::Done,
            trailers: Some(trailers),
            held: Held::default(),
            keep_observed: false,
            _message: PhantomData,
        }
    }
}
