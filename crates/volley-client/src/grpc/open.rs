//! Calls whose replies or requests are streams: server-streaming, client-streaming and
//! bidirectional, opened within the deadline, the requests sent by a task of their own with the
//! server's flow control.

use std::{pin::pin, sync::Arc};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use h2::SendStream;
use http::HeaderMap;
use prost::Message;
use tokio::time::Instant;
use volley_wire::Status;

use super::{
    Grpc, Request, Response, Streaming,
    call::{end_attempt, open, single, within},
    frame,
    intercept::SentTally,
    message::Parts,
    streaming::AbortOnDrop,
};
use crate::attempt::{failure, send_message};

impl Grpc {
    /// One request, a stream of replies.
    pub async fn server_streaming<Req, Resp>(
        &self,
        path: &'static str,
        request: Request<Req>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        Req: Message,
        Resp: Message + Default,
    {
        let (parts, message) = request.into_parts();
        let compress = parts.compress.unwrap_or(self.send_compressed);
        let one = Outgoing::<futures_util::stream::Empty<()>>::One(frame(&message, compress));
        self.open_call(path, parts, compress, one).await
    }

    /// A stream of requests, one reply.
    pub async fn client_streaming<S, Resp>(
        &self,
        path: &'static str,
        request: Request<S>,
    ) -> Result<Response<Resp>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let (headers, mut replies, _) = self.streaming(path, request).await?.into_parts();
        let reply = single(&mut replies).await?;
        Ok(Response::from_parts(
            headers,
            reply,
            replies.take_trailers(),
        ))
    }

    /// A stream of requests and a stream of replies, both open at once. The requests are sent
    /// by a task of their own, with the server's flow control, until the stream ends or the
    /// call does.
    pub async fn streaming<S, Resp>(
        &self,
        path: &'static str,
        request: Request<S>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let (parts, messages) = request.into_parts();
        let compress = parts.compress.unwrap_or(self.send_compressed);
        self.open_call(path, parts, compress, Outgoing::Many(messages))
            .await
    }

    /// Opens a call whose replies are read as a stream, sends its request(s), and waits for the
    /// response headers (all within the deadline).
    async fn open_call<S, Resp>(
        &self,
        path: &'static str,
        parts: Parts,
        compress: bool,
        outgoing: Outgoing<S>,
    ) -> Result<Response<Streaming<Resp>>, Status>
    where
        S: Stream + Send + 'static,
        S::Item: Message + 'static,
        Resp: Message + Default,
    {
        let started = Instant::now();
        let deadline = parts.timeout.map(|t| started + t);
        let (head, observed) = self.attempt(path, &parts, compress, 1, started)?;
        let tally = observed.as_ref().map(|o| o.sent_tally());
        let mut observed = Some(observed);
        let mut fail = |s: Status| end_attempt(observed.take().flatten(), s);
        let lease = self.channel.lease().await.map_err(&mut fail)?;
        let (resp, mut out) = within(deadline, open(&lease, head))
            .await
            .map_err(|f| fail(f.status))?;
        let sender = match outgoing {
            Outgoing::One(body) => {
                if let Some(t) = &tally {
                    t.frame(body.len());
                }
                out.send_data(body, true)
                    .map_err(|e| fail(failure(&e, false).status))?;
                None
            }
            Outgoing::Many(messages) => Some(AbortOnDrop(tokio::spawn(send_all(
                out, messages, compress, tally,
            )))),
        };
        let resp = within(deadline, async {
            resp.await.map_err(|e| failure(&e, false))
        })
        .await
        .map_err(|f| fail(f.status))?;
        let held = self.held(Some(lease), sender, deadline);
        let (headers, replies) = self
            .replies(resp, held, observed.flatten())
            .map_err(|(s, o)| end_attempt(o, s))?;
        Ok(Response::from_parts(headers, replies, HeaderMap::new()))
    }
}

/// What a call sends: one pre-framed request, or a stream of messages sent by a task.
enum Outgoing<S> {
    One(Bytes),
    Many(S),
}

/// Sends every message of `messages`, then ends the request stream. Stops quietly when the
/// call is gone (the reply side reports its status).
async fn send_all<S>(
    mut out: SendStream<Bytes>,
    messages: S,
    compress: bool,
    tally: Option<Arc<SentTally>>,
) where
    S: Stream + Send,
    S::Item: Message,
{
    let mut messages = pin!(messages);
    while let Some(m) = messages.next().await {
        let frame = frame(&m, compress);
        if let Some(t) = &tally {
            t.frame(frame.len());
        }
        if send_message(&mut out, frame, false).await.is_err() {
            return;
        }
    }
    let _ = out.send_data(Bytes::new(), true);
}
