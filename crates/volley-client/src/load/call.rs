//! The lean per-call path on an h2-crate [`Connection`](crate::Connection): a request head
//! built once per run ([`CallHead`]), a pre-encoded body, and a reply read to its status without
//! decoding the message ([`UnaryReply`]). This is what the load engine runs millions of times
//! when a call cannot take the fast path (`fast`).

use bytes::{Bytes, BytesMut};
use h2::{RecvStream, client::SendRequest};
use volley_wire::Status;

pub use crate::attempt::{CallHead, Failure, UnaryReply};
use crate::attempt::{attempt_numbered, read_reply};

/// Sends one unary (or server-streaming) call with a pre-framed body and reads the reply to its
/// status. Messages are counted, not decoded.
pub async fn unary(
    send: &SendRequest<Bytes>,
    head: &CallHead,
    body: Bytes,
) -> Result<UnaryReply, Status> {
    attempt_numbered(send, head, body, None, 0)
        .await
        .map_err(|f| f.status)
}

/// [`unary`], with the failure classified for a caller that may retry elsewhere, and the
/// reply's bytes (its gRPC frames) kept in `keep` when given.
pub async fn attempt_with(
    send: &SendRequest<Bytes>,
    head: &CallHead,
    body: Bytes,
    keep: Option<&mut BytesMut>,
) -> Result<UnaryReply, Failure> {
    attempt_numbered(send, head, body, keep, 0).await
}

/// Reads a response to its status, counting message bytes.
pub async fn finish(resp: http::Response<RecvStream>) -> Result<UnaryReply, Status> {
    read_reply(resp, None).await.map_err(|(s, _)| s)
}
