//! One call on a volley-client HTTP/2 connection, any of the four kinds, for any of the three
//! protocols: the request head, messages out (with the peer's flow control), and the reply read
//! as grpc-go hands it to grpcurl: response headers (gRPC's own removed), messages, then the
//! status and trailers. A reply the protocol does not allow becomes grpc-go's status for it.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::{RecvStream, SendStream, client::ResponseFuture};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use prost::Message as _;
use volley_client::{Connection, send_message, transport_status};
use volley_wire::{codec::FrameDecoder, compression::Encoding, timeout::format_grpc_timeout};

use crate::{
    envelope::{Envelopes, Item},
    metadata::{self, Metadata},
    status::CallStatus,
    web::{self, Protocol},
};

/// What a call is sent with.
#[derive(Clone, Debug)]
pub struct Head {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The `:authority`.
    pub authority: String,
    /// `/package.Service/Method`.
    pub path: String,
    /// `-H` and `-rpc-header`, or why grpc-go would refuse them.
    pub metadata: Result<HeaderMap, String>,
    /// What is left of `-max-time`.
    pub timeout: Option<Duration>,
    /// The user agent.
    pub user_agent: String,
    /// The protocol.
    pub protocol: Protocol,
    /// Largest reply message (`-max-msg-sz`).
    pub max_recv: usize,
    /// A unary call (Connect sends and answers its message without an envelope).
    pub unary: bool,
}

/// The request side of a call (taken apart for bidi, where it runs beside the replies).
#[derive(Default)]
pub struct Sender {
    out: Option<SendStream<Bytes>>,
    /// Connect unary: the message is the whole body.
    raw_body: bool,
}

impl Sender {
    /// Sends one request message (gRPC framing, or Connect's unary body as it is).
    pub async fn send(
        &mut self,
        msg: &prost_reflect::DynamicMessage,
        last: bool,
    ) -> Result<(), CallStatus> {
        self.send_encoded(Bytes::from(msg.encode_to_vec()), last)
            .await
    }

    /// Sends one request message already encoded as protobuf.
    pub async fn send_encoded(&mut self, payload: Bytes, last: bool) -> Result<(), CallStatus> {
        let body = if self.raw_body {
            payload
        } else {
            let mut framed = BytesMut::with_capacity(5 + payload.len());
            framed.extend_from_slice(&[0]);
            framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            framed.extend_from_slice(&payload);
            framed.freeze()
        };
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        send_message(out, body, last)
            .await
            .map_err(|s| CallStatus::from_wire(&s))?;
        if last {
            self.out = None;
        }
        Ok(())
    }

    /// Ends the request stream.
    pub fn close(&mut self) {
        if let Some(mut out) = self.out.take() {
            let _ = out.send_data(Bytes::new(), true);
        }
    }
}

/// An open call.
pub struct Call {
    sender: Sender,
    resp: Option<ResponseFuture>,
    body: Option<RecvStream>,
    frames: Frames,
    protocol: Protocol,
    /// Set when the reply ended early (trailers-only, an HTTP error, a protocol error).
    ended: Option<(CallStatus, Metadata)>,
}

enum Frames {
    Grpc(FrameDecoder),
    Web(Envelopes),
}

impl Call {
    /// Opens the stream and sends the request head.
    pub async fn open(conn: &Connection, head: &Head) -> Result<Call, CallStatus> {
        let uri = Uri::builder()
            .scheme(head.scheme)
            .authority(head.authority.as_str())
            .path_and_query(head.path.as_str())
            .build()
            .map_err(|e| CallStatus::new(13, e.to_string()))?;
        let mut req = Request::new(());
        *req.method_mut() = Method::POST;
        *req.uri_mut() = uri;
        let h = req.headers_mut();
        *h = head.metadata.clone().map_err(|e| CallStatus::new(13, e))?;
        web::protocol_headers(h, head.protocol, head.unary);
        let ua = HeaderValue::from_str(&head.user_agent)
            .unwrap_or(HeaderValue::from_static("volley-call"));
        h.insert(http::header::USER_AGENT, ua);
        if let Some(t) = head.timeout {
            match head.protocol {
                Protocol::Connect => {
                    h.insert(
                        "connect-timeout-ms",
                        HeaderValue::from(t.as_millis().max(1) as u64),
                    );
                }
                _ => {
                    let v =
                        HeaderValue::from_str(&format_grpc_timeout(t)).expect("digits and a unit");
                    h.insert("grpc-timeout", v);
                }
            }
        }
        let (resp, out) = conn
            .open_stream(req)
            .await
            .map_err(|s| CallStatus::from_wire(&s))?;
        let frames = match head.protocol {
            Protocol::Grpc => Frames::Grpc(FrameDecoder::new(Some(Encoding::Gzip), head.max_recv)),
            p => Frames::Web(Envelopes::new(p == Protocol::Connect, head.max_recv)),
        };
        Ok(Call {
            sender: Sender {
                out: Some(out),
                raw_body: head.protocol == Protocol::Connect && head.unary,
            },
            resp: Some(resp),
            body: None,
            frames,
            protocol: head.protocol,
            ended: None,
        })
    }

    /// Sends one request message.
    pub async fn send(
        &mut self,
        msg: &prost_reflect::DynamicMessage,
        last: bool,
    ) -> Result<(), CallStatus> {
        self.sender.send(msg, last).await
    }

    /// Sends one request message already encoded as protobuf.
    pub async fn send_encoded(&mut self, payload: Bytes, last: bool) -> Result<(), CallStatus> {
        self.sender.send_encoded(payload, last).await
    }

    /// Ends the request stream.
    pub fn close_send(&mut self) {
        self.sender.close();
    }

    /// Takes the request side, to send from beside the replies.
    pub fn sender(&mut self) -> Sender {
        std::mem::take(&mut self.sender)
    }

    /// Waits for the response headers. A reply that is only trailers (or an HTTP error) gives
    /// empty headers; its status comes from [`Call::finish`].
    pub async fn headers(&mut self) -> Metadata {
        let Some(resp) = self.resp.take() else {
            return Metadata::new();
        };
        let resp = match resp.await {
            Ok(r) => r,
            Err(e) => {
                self.ended = Some((
                    CallStatus::from_wire(&transport_status(&e)),
                    Metadata::new(),
                ));
                return Metadata::new();
            }
        };
        let (parts, body) = resp.into_parts();
        match web::check_head(self.protocol, parts.status.as_u16(), &parts.headers) {
            web::Head::Stream => {
                self.body = Some(body);
                metadata::from_response(&parts.headers)
            }
            web::Head::Ended(status) => {
                self.ended = Some((status, metadata::from_response(&parts.headers)));
                Metadata::new()
            }
            web::Head::ConnectError(status) => {
                let body = read_all(body).await;
                self.ended = Some((
                    web::connect_error(status, &body),
                    metadata::from_response(&parts.headers),
                ));
                metadata::from_response(&parts.headers)
            }
            web::Head::ConnectUnary => {
                let body_bytes = read_all(body).await;
                let trailers = web::connect_trailers(&parts.headers);
                self.frames = Frames::Web(Envelopes::unary(body_bytes, trailers));
                web::connect_headers(&parts.headers)
            }
        }
    }

    /// The next reply message, `Ok(None)` once they have all come.
    pub async fn message(&mut self) -> Result<Option<Bytes>, CallStatus> {
        loop {
            let next = match &mut self.frames {
                Frames::Grpc(d) => d.next_message().map_err(|s| CallStatus::from_wire(&s))?,
                Frames::Web(e) => match e.next_item()? {
                    Item::Message(m) => Some(m),
                    Item::End(status, trailers) => {
                        self.ended = Some((status, trailers));
                        self.body = None;
                        return Ok(None);
                    }
                    Item::More => None,
                },
            };
            if let Some(m) = next {
                return Ok(Some(m));
            }
            let Some(body) = self.body.as_mut() else {
                return Ok(None);
            };
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    match &mut self.frames {
                        Frames::Grpc(d) => d.push(chunk),
                        Frames::Web(e) => e.push(chunk),
                    }
                }
                Some(Err(e)) => return Err(CallStatus::from_wire(&transport_status(&e))),
                None => return Ok(None),
            }
        }
    }

    /// The status and trailers, once the messages are read.
    pub async fn finish(&mut self) -> (CallStatus, Metadata) {
        if let Some(done) = self.ended.take() {
            return done;
        }
        let Some(mut body) = self.body.take() else {
            return (
                CallStatus::new(13, "server closed the stream without sending trailers"),
                Metadata::new(),
            );
        };
        if self.protocol != Protocol::Grpc {
            return (
                CallStatus::new(13, "server closed the stream without sending trailers"),
                Metadata::new(),
            );
        }
        match body.trailers().await {
            Ok(Some(t)) => match CallStatus::from_headers(&t) {
                Some(s) => (s, metadata::from_response(&t)),
                None => (
                    CallStatus::new(13, "server closed the stream without sending trailers"),
                    metadata::from_response(&t),
                ),
            },
            Ok(None) => (
                CallStatus::new(13, "server closed the stream without sending trailers"),
                Metadata::new(),
            ),
            Err(e) => (
                CallStatus::from_wire(&transport_status(&e)),
                Metadata::new(),
            ),
        }
    }
}

async fn read_all(mut body: RecvStream) -> Bytes {
    let mut all = BytesMut::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    all.freeze()
}
