//! One HTTP/2 stream's call: the routed call until its reply head, then the reply body piped into
//! the stream with flow control (following hyper 1.x's `H2Stream` and `PipeToSendStream`).

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, atomic::Ordering},
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use h2::server::SendResponse;
use http_body::Body;
use tracing::debug;

use super::idle::Activity;
use crate::{
    body::{HttpResponse, ResponseBody},
    handler::BoxFuture,
};

/// One call: the routed call until its reply head, then the reply body piped into the
/// stream. A hand-written future (like hyper's `H2Stream`) so the task holds one small state.
pub(super) struct CallStream {
    state: Stage,
    reply: SendResponse<Bytes>,
    /// The connection's counts: calls the client reset before their reply (see `Calm` in
    /// `conn::h2`), and calls open (`conn::idle`).
    activity: Arc<Activity>,
}

impl Drop for CallStream {
    fn drop(&mut self) {
        self.activity.ended();
    }
}

enum Stage {
    Service(BoxFuture<HttpResponse>),
    Body(Pipe),
}

impl Future for CallStream {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                Stage::Service(fut) => {
                    let Poll::Ready(resp) = fut.as_mut().poll(cx) else {
                        // A RST_STREAM from the client cancels the call: dropping its future
                        // drops the handler.
                        if let Poll::Ready(r) = this.reply.poll_reset(cx) {
                            debug!("stream reset by the client before its reply: {r:?}");
                            this.activity.early_resets.fetch_add(1, Ordering::Relaxed);
                            return Poll::Ready(());
                        }
                        return Poll::Pending;
                    };
                    match this.start_reply(resp) {
                        Some(pipe) => this.state = Stage::Body(pipe),
                        None => return Poll::Ready(()),
                    }
                }
                Stage::Body(pipe) => {
                    if let Err(e) = ready!(pipe.poll(cx)) {
                        debug!("sending a reply body failed: {e}");
                    }
                    return Poll::Ready(());
                }
            }
        }
    }
}

impl CallStream {
    /// A call routed from a new stream, answered on `reply`, counted in `activity` until it is
    /// dropped.
    pub(super) fn new(
        call: BoxFuture<HttpResponse>,
        reply: SendResponse<Bytes>,
        activity: Arc<Activity>,
    ) -> CallStream {
        activity.started();
        CallStream {
            state: Stage::Service(call),
            reply,
            activity,
        }
    }

    /// Resets the stream (a handler that panicked on its first poll).
    pub(super) fn reset(&mut self, reason: h2::Reason) {
        self.reply.send_reset(reason);
    }

    /// Sends the reply head, and a unary reply whole; the pipe for a body still to come.
    fn start_reply(&mut self, resp: HttpResponse) -> Option<Pipe> {
        let (parts, mut body) = resp.into_parts();
        let mut head = http::Response::from_parts(parts, ());
        let end = body.is_end_stream();
        if !end && let Some(len) = body.size_hint().exact() {
            head.headers_mut()
                .entry(http::header::CONTENT_LENGTH)
                .or_insert_with(|| len.into());
        }
        let mut tx = match self.reply.send_response(head, end) {
            Ok(tx) => tx,
            Err(e) => {
                debug!("sending a reply head failed: {e}");
                self.reply.send_reset(h2::Reason::INTERNAL_ERROR);
                return None;
            }
        };
        if end {
            return None;
        }
        // A unary reply goes out in one step: h2 buffers a frame beyond the window, and one
        // message needs no backpressure. Saves the pipe's per-frame capacity and reset checks
        // (each locks h2's stream store).
        if let Some((data, trailers)) = body.take_unary() {
            let sent = tx.send_data(data, false);
            if let Err(e) = sent.and_then(|()| tx.send_trailers(trailers)) {
                debug!("sending a unary reply failed: {e}");
            }
            return None;
        }
        Some(Pipe {
            body,
            tx,
            held: None,
        })
    }
}

/// A reply body being written to its stream, a frame at a time as flow control allows.
struct Pipe {
    body: ResponseBody,
    tx: h2::SendStream<Bytes>,
    /// A data frame taken from the body, waiting for stream capacity; and whether it ends it.
    held: Option<(Bytes, bool)>,
}

impl Pipe {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), h2::Error>> {
        loop {
            if let Some((data, eos)) = self.held.take() {
                while self.tx.capacity() == 0 {
                    match self.tx.poll_capacity(cx) {
                        Poll::Pending => {
                            self.held = Some((data, eos));
                            return self.wait(cx);
                        }
                        Poll::Ready(Some(Ok(0))) => {}
                        Poll::Ready(Some(Ok(_))) => break,
                        Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                        // Closed or reset under us: nothing more can be sent.
                        Poll::Ready(None) => return Poll::Ready(Ok(())),
                    }
                }
                // Fails once the client has reset the stream: a body that is always ready
                // ends here without a reset check per frame.
                self.tx.send_data(data, eos)?;
                if eos {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) else {
                return self.wait(cx);
            };
            match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let eos = self.body.is_end_stream();
                        if data.is_empty() {
                            self.tx.send_data(data, eos)?;
                            if eos {
                                return Poll::Ready(Ok(()));
                            }
                            continue;
                        }
                        // A claim of one byte, not the frame's length: h2 raises it to what is
                        // buffered, and a large claim would pin connection window while waiting
                        // (hyper #4003).
                        self.tx.reserve_capacity(1);
                        self.held = Some((data, eos));
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            self.tx.reserve_capacity(0);
                            self.tx.send_trailers(trailers)?;
                            return Poll::Ready(Ok(()));
                        }
                    }
                },
                Some(Err(never)) => match never {},
                None => {
                    self.tx.send_data(Bytes::new(), true)?;
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }

    /// Before waiting for the body or for capacity: ends the pipe if the client reset the
    /// stream, else registers to hear of a reset (each check locks h2's stream store, so it is
    /// made only when the pipe is about to wait, not per frame).
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), h2::Error>> {
        match self.tx.poll_reset(cx) {
            Poll::Ready(r) => Poll::Ready(Err(r?.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}
