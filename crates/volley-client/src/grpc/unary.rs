//! One request, one reply: [`Grpc::unary`](super::Grpc::unary), whose attempts are sent again
//! at once while the server never saw them, and retried or hedged by the method's service-config
//! policy.

use bytes::Bytes;
use http::HeaderValue;
use prost::Message;
use tokio::time::Instant;
use volley_wire::{Status, names::GRPC_PREVIOUS_RPC_ATTEMPTS};

use super::{
    Grpc, Request, Response,
    call::{end_attempt, open, single, within},
    frame,
    intercept::Observed,
    message::Parts,
};
use crate::{
    attempt::failure,
    channel::MAX_ATTEMPTS,
    retry::{self, Failed as _},
    service_config::CallPolicy,
};

impl Grpc {
    /// One request, one reply. A call the server never saw (refused stream, GOAWAY, connection
    /// gone before the stream opened) is sent again, up to three attempts; with a service
    /// config on the channel
    /// ([`Channel::with_service_config`](crate::Channel::with_service_config)), the method's
    /// retry or hedging policy applies too, and its timeout when the request sets none.
    pub async fn unary<Req, Resp>(
        &self,
        path: &'static str,
        request: Request<Req>,
    ) -> Result<Response<Resp>, Status>
    where
        Req: Message,
        Resp: Message + Default,
    {
        let (mut parts, message) = request.into_parts();
        let config = self.channel.service_config().map(|c| &**c);
        let method = config.and_then(|c| c.method(path));
        if parts.timeout.is_none() {
            parts.timeout = method.and_then(|m| m.timeout);
        }
        let compress = parts.compress.unwrap_or(self.send_compressed);
        let body = frame(&message, compress);
        let started = Instant::now();
        let deadline = parts.timeout.map(|t| started + t);
        let attempt = |n| self.unary_attempt(path, &parts, compress, &body, (started, deadline), n);
        match (method.and_then(|m| m.policy.as_ref()), config) {
            (Some(CallPolicy::Retry(p)), Some(c)) => {
                retry::retry(p, c.throttle(), deadline, attempt).await
            }
            (Some(CallPolicy::Hedge(p)), Some(c)) => retry::hedge(p, c.throttle(), attempt).await,
            _ => attempt(1).await.map_err(|f| f.finish(false)),
        }
    }

    /// Attempt `n` of a unary call (sent again at once while the server never saw it), read to
    /// its one reply.
    async fn unary_attempt<Resp: Message + Default>(
        &self,
        path: &'static str,
        parts: &Parts,
        compress: bool,
        body: &Bytes,
        (started, deadline): (Instant, Option<Instant>),
        n: u32,
    ) -> Result<Response<Resp>, AttemptFailed> {
        let fatal = |status| AttemptFailed {
            status,
            committed: true,
            observed: None,
        };
        let mut tries: u32 = 0;
        let (headers, mut replies) = loop {
            tries += 1;
            let (mut head, mut observed) = self
                .attempt(path, parts, compress, n + tries - 1, started)
                .map_err(fatal)?;
            if n > 1 {
                head.headers_mut()
                    .insert(GRPC_PREVIOUS_RPC_ATTEMPTS, HeaderValue::from(n - 1));
            }
            if let Some(o) = &observed {
                o.sent_tally().frame(body.len());
            }
            let lease = match self.channel.lease().await {
                Ok(l) => l,
                Err(status) => {
                    return Err(AttemptFailed {
                        status,
                        committed: false,
                        observed,
                    });
                }
            };
            let sent = async {
                let (resp, mut out) = open(&lease, head).await?;
                out.send_data(body.clone(), true)
                    .map_err(|e| failure(&e, false))?;
                resp.await.map_err(|e| failure(&e, false))
            };
            match within(deadline, sent).await {
                Ok(resp) => {
                    let held = self.held(Some(lease), None, deadline);
                    match self.replies::<Resp>(resp, held, observed) {
                        Ok(r) => break r,
                        Err((status, observed)) => {
                            return Err(AttemptFailed {
                                status,
                                committed: false,
                                observed,
                            });
                        }
                    }
                }
                Err(f) => {
                    if f.retire {
                        lease.connection().retire();
                    }
                    if !f.unprocessed || tries as usize >= MAX_ATTEMPTS {
                        return Err(AttemptFailed {
                            status: f.status,
                            committed: f.committed,
                            observed,
                        });
                    }
                    if let Some(o) = &mut observed {
                        o.retrying();
                    }
                    drop(end_attempt(observed, f.status));
                }
            }
        };
        replies.keep_observed();
        match single(&mut replies).await {
            Ok(reply) => Ok(Response::from_parts(
                headers,
                reply,
                replies.take_trailers(),
            )),
            Err(status) => Err(AttemptFailed {
                status,
                committed: true,
                observed: replies.take_observed(),
            }),
        }
    }
}

/// A unary attempt that failed, its interceptors' watch not yet ended: the retry decides
/// whether they are told another attempt follows.
struct AttemptFailed {
    status: Status,
    committed: bool,
    observed: Option<Box<Observed>>,
}

impl retry::Failed for AttemptFailed {
    fn status(&self) -> &Status {
        &self.status
    }
    fn committed(&self) -> bool {
        self.committed
    }
    fn finish(mut self, retrying: bool) -> Status {
        if let Some(o) = self.observed.as_mut().filter(|_| retrying) {
            o.retrying();
        }
        end_attempt(self.observed, self.status)
    }
}
