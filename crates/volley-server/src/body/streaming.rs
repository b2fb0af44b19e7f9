//! `Streaming<T>`: the inbound message stream of a client-streaming or bidi call, decoded lazily.

use std::{
    future::Future,
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use futures_core::Stream;
use http_body::Body;
use prost::Message;

use volley_wire::{Status, codec::FrameDecoder};

use super::{RequestBody, envelope::Base64Decoder};
use crate::{intercept::Tally, transcode::json_to_proto};

/// Messages of type `T` as the client sends them; ends when the client half-closes.
///
/// An error ends the stream: a malformed or oversized frame, or the client resetting the call
/// (`Cancelled`).
pub struct Streaming<T> {
    raw: RawStreaming,
    _message: PhantomData<fn() -> T>,
}

impl<T: Message + Default> Streaming<T> {
    pub(crate) fn new(raw: RawStreaming) -> Self {
        Streaming {
            raw,
            _message: PhantomData,
        }
    }

    /// Whether the last message this stream yielded arrived compressed.
    pub fn last_compressed(&self) -> bool {
        self.raw.decoder.last_compressed()
    }

    /// The next message, `Ok(None)` once the client has finished sending.
    pub async fn message(&mut self) -> Result<Option<T>, Status> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx))
            .await
            .transpose()
    }
}

impl<T: Message + Default> Stream for Streaming<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let raw = ready!(self.raw.poll_message(cx));
        Poll::Ready(raw.map(|r| {
            r.and_then(|b| {
                T::decode(b).map_err(|e| {
                    self.raw.done = true;
                    Status::internal(format!(
                        "grpc: failed to unmarshal the received message: {e}"
                    ))
                })
            })
        }))
    }
}

/// Undecoded message payloads read from a request body.
pub(crate) struct RawStreaming {
    body: RequestBody,
    decoder: FrameDecoder,
    done: bool,
    /// gRPC-Web text: the body is base64 of the frames.
    base64: Option<Base64Decoder>,
    /// The JSON codec: each message is JSON of this type, re-encoded to protobuf.
    json: Option<prost_reflect::MessageDescriptor>,
    /// The interceptors' count of messages and bytes received (calls with interceptors).
    tally: Option<Tally>,
}

impl RawStreaming {
    pub(crate) fn new(
        body: RequestBody,
        decoder: FrameDecoder,
        base64: bool,
        json: Option<prost_reflect::MessageDescriptor>,
    ) -> Self {
        RawStreaming {
            body,
            decoder,
            done: false,
            base64: base64.then(Base64Decoder::default),
            json,
            tally: None,
        }
    }

    /// Counts what is read into `tally`.
    pub(crate) fn with_tally(mut self, tally: Option<Tally>) -> Self {
        self.tally = tally;
        self
    }

    fn fail(&mut self, e: Status) -> Poll<Option<Result<Bytes, Status>>> {
        self.done = true;
        self.decoder = FrameDecoder::new(None, 0);
        Poll::Ready(Some(Err(e)))
    }

    pub(crate) fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Status>>> {
        loop {
            match self.decoder.next_message() {
                Ok(Some(m)) => {
                    if let Some(t) = &self.tally {
                        t.message_in();
                    }
                    return match &self.json {
                        Some(desc) => match json_to_proto(desc, &m) {
                            Ok(b) => Poll::Ready(Some(Ok(b))),
                            Err(e) => self.fail(e),
                        },
                        None => Poll::Ready(Some(Ok(m))),
                    };
                }
                Ok(None) => {}
                Err(e) => return self.fail(e),
            }
            if self.done {
                if let Some(b) = &self.base64
                    && !b.is_empty()
                {
                    self.base64 = None;
                    return self.fail(Status::invalid_argument(
                        "grpc-web-text: the body ended inside a base64 quantum",
                    ));
                }
                if self.decoder.is_empty() {
                    return Poll::Ready(None);
                }
                self.decoder = FrameDecoder::new(None, 0);
                return Poll::Ready(Some(Err(Status::internal(
                    "grpc: the client ended the stream inside a message",
                ))));
            }
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if let Some(t) = &self.tally {
                            t.bytes_in(data.len());
                        }
                        match &mut self.base64 {
                            Some(b) => match b.push(&data) {
                                Ok(decoded) => self.decoder.push(decoded),
                                Err(e) => return self.fail(e),
                            },
                            None => self.decoder.push(data),
                        }
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    self.decoder = FrameDecoder::new(None, 0);
                    return Poll::Ready(Some(Err(Status::cancelled(format!(
                        "the client cancelled the call: {e}"
                    )))));
                }
                None => self.done = true,
            }
        }
    }

    /// Reads exactly one message and the end of the stream, as a unary request must be; a
    /// cardinality violation is UNIMPLEMENTED (as grpc-go and the Connect suite expect).
    /// Also says whether the message arrived compressed.
    pub(crate) fn single(&mut self) -> Single<'_> {
        Single {
            raw: self,
            first: None,
        }
    }

    /// Moves the stream out (to a streaming handler), leaving an ended one in its place.
    pub(crate) fn take(&mut self) -> RawStreaming {
        let ended = RawStreaming {
            body: RequestBody::ended(),
            decoder: FrameDecoder::new(None, 0),
            done: true,
            base64: None,
            json: None,
            tally: None,
        };
        std::mem::replace(self, ended)
    }
}

/// The future of [`RawStreaming::single`]: a hand-written state machine because it sits on every
/// unary call's path, where it would otherwise add its own copy of the stream to the call's future.
pub(crate) struct Single<'a> {
    raw: &'a mut RawStreaming,
    first: Option<(Bytes, bool)>,
}

impl Future for Single<'_> {
    type Output = Result<(Bytes, bool), Status>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.first.is_none() {
            let msg = match ready!(this.raw.poll_message(cx)) {
                Some(r) => r?,
                None => {
                    return Poll::Ready(Err(Status::unimplemented(
                        "grpc: the client sent no request message for a unary call",
                    )));
                }
            };
            this.first = Some((msg, this.raw.decoder.last_compressed()));
        }
        Poll::Ready(match ready!(this.raw.poll_message(cx)) {
            None => Ok(this.first.take().expect("first message read")),
            Some(Err(e)) => Err(e),
            Some(Ok(_)) => Err(Status::unimplemented(
                "grpc: the client sent more than one request message for a unary call",
            )),
        })
    }
}
