//! A gRPC caller written on the h2 crate, with no framework in between: tests choose every header
//! and byte, and see every header, message and trailer the server sent.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use prost::Message;
use volley_wire::{Code, Status};

/// Frames a message as gRPC does (flag 0, big-endian length).
pub fn frame(m: &impl Message) -> Bytes {
    let body = m.encode_to_vec();
    let mut b = BytesMut::with_capacity(5 + body.len());
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(body.len() as u32).to_be_bytes());
    b.extend_from_slice(&body);
    b.freeze()
}

/// One HTTP/2 connection.
#[derive(Clone)]
pub struct RawClient {
    send: SendRequest<Bytes>,
    authority: String,
}

/// Everything a call returned.
#[derive(Debug)]
pub struct RawReply {
    /// HTTP status.
    pub http_status: u16,
    /// Response headers.
    pub headers: http::HeaderMap,
    /// The message payloads, unframed (compressed ones left as they came); for a non-gRPC
    /// response, the whole body.
    pub messages: Vec<Bytes>,
    /// Trailers, if the body ended with them.
    pub trailers: Option<http::HeaderMap>,
}

impl RawReply {
    /// The gRPC status, from the trailers or (trailers-only) the headers.
    pub fn status(&self) -> Status {
        self.trailers
            .as_ref()
            .and_then(Status::from_headers)
            .or_else(|| Status::from_headers(&self.headers))
            .unwrap_or_else(|| Status::new(Code::Unknown, "no grpc-status"))
    }

    /// The status code.
    pub fn code(&self) -> Code {
        self.status().code()
    }

    /// Decodes every message as `M`.
    pub fn decode<M: Message + Default>(&self) -> Vec<M> {
        self.messages
            .iter()
            .map(|m| M::decode(m.clone()).expect("reply decodes"))
            .collect()
    }
}

impl RawClient {
    /// Connects over plaintext HTTP/2 (prior knowledge).
    pub async fn connect(addr: SocketAddr) -> std::io::Result<RawClient> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        RawClient::over(tcp, &addr.to_string()).await
    }

    /// Speaks plaintext HTTP/2 (prior knowledge) over `io`: a Unix socket, one end of
    /// `tokio::io::duplex`; `authority` names the server in requests.
    pub async fn over<I>(io: I, authority: &str) -> std::io::Result<RawClient>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        // Large windows keep h2's small-DATA-frame budget (half the connection window) well above
        // what a test that reads a reply only after sending everything can buffer.
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(1 << 20)
            .initial_connection_window_size(16 << 20)
            .handshake(io)
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(RawClient {
            send,
            authority: authority.to_owned(),
        })
    }

    /// The connection's h2 handle (for tests that drive streams themselves).
    pub fn sender(&self) -> SendRequest<Bytes> {
        self.send.clone()
    }

    /// A POST request head for `path` with gRPC's content type and `extra` headers.
    pub fn request(&self, path: &str, extra: &[(&str, &str)]) -> http::Request<()> {
        let mut b = http::Request::post(format!("http://{}{}", self.authority, path))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        for (k, v) in extra {
            b = b.header(*k, *v);
        }
        b.body(()).expect("valid request")
    }

    /// Sends `body` (already framed, any bytes) and reads the whole reply.
    pub async fn call(
        &self,
        path: &str,
        extra: &[(&str, &str)],
        body: Vec<Bytes>,
    ) -> Result<RawReply, h2::Error> {
        let req = self.request(path, extra);
        self.send_request(req, body).await
    }

    /// Sends a prepared request head with `body` and reads the whole reply.
    pub async fn send_request(
        &self,
        req: http::Request<()>,
        body: Vec<Bytes>,
    ) -> Result<RawReply, h2::Error> {
        let mut send = self.send.clone().ready().await?;
        let (resp, mut stream) = send.send_request(req, body.is_empty())?;
        let n = body.len();
        for (i, chunk) in body.into_iter().enumerate() {
            stream.send_data(chunk, i + 1 == n)?;
        }
        read_reply(resp.await?).await
    }
}

/// Reads a response to the end: headers, unframed messages and trailers.
pub async fn read_reply(resp: http::Response<h2::RecvStream>) -> Result<RawReply, h2::Error> {
    let (parts, mut body) = resp.into_parts();
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await?;
    let mut messages = Vec::new();
    let mut buf = buf.freeze();
    let grpc = parts
        .headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        // Not gRPC: the body is kept whole, as one "message".
        messages.push(std::mem::take(&mut buf));
    }
    while buf.len() >= 5 {
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        if buf.len() < 5 + len {
            // A truncated or non-gRPC body: keep the rest whole.
            messages.push(std::mem::take(&mut buf));
            break;
        }
        let m = buf.slice(5..5 + len);
        buf = buf.slice(5 + len..);
        messages.push(m);
    }
    Ok(RawReply {
        http_status: parts.status.as_u16(),
        headers: parts.headers,
        messages,
        trailers,
    })
}
