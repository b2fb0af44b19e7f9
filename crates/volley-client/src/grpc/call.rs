//! What every typed call does with its stream: open it on a leased connection within the
//! deadline, hold what it needs until it ends, and turn the response headers into a reply
//! stream, or into the call's status (an HTTP error, a trailers-only answer).

use bytes::Bytes;
use h2::{SendStream, client::ResponseFuture};
use http::HeaderMap;
use prost::Message;
use tokio::time::Instant;
use volley_wire::{Code, Status, codec::FrameDecoder, compression::Encoding, names::GRPC_ENCODING};

use super::{
    Grpc,
    intercept::Observed,
    streaming::{self, AbortOnDrop, Held, Streaming},
};
use crate::{
    Lease,
    attempt::{Failure, http_status},
};

impl Grpc {
    pub(super) fn held(
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

    /// The response headers and the reply stream, or the call's status when the server answered
    /// with an HTTP error or a trailers-only response (with the attempt's watch, not yet
    /// ended).
    #[allow(clippy::type_complexity)]
    pub(super) fn replies<Resp: Message + Default>(
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

/// Tells an attempt's interceptors it failed with `status`, and gives the status back.
pub(super) fn end_attempt(observed: Option<Box<Observed>>, status: Status) -> Status {
    if let Some(mut o) = observed {
        o.end(Some(status.clone()));
    }
    status
}

/// Opens the call's stream on the leased connection; a failure here is one the server never saw.
pub(super) async fn open(
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
pub(super) async fn within<T>(
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
pub(super) async fn single<T: Message + Default>(replies: &mut Streaming<T>) -> Result<T, Status> {
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
