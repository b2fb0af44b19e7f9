//! `grpc.testing.TestService`: the service of gRPC's official interop suite (grpc-proto's
//! `grpc/testing/test.proto`), so that grpc-go's and grpc-java's interop clients can test volley.
//!
//! Behaviour, as the interop spec (grpc/doc/interop-test-descriptions.md) asks of a server:
//! - replies carry `response_size` zero bytes; streams send one reply per `response_parameters`
//!   entry, after its `interval_us`;
//! - `response_status` (a non-zero code) ends the call with that code and message;
//! - `x-grpc-test-echo-initial` is echoed as initial metadata and `x-grpc-test-echo-trailing-bin`
//!   as trailing metadata (also on a failed call);
//! - `expect_compressed` is checked against how the request message arrived: a mismatch is
//!   INVALID_ARGUMENT; `response_compressed` and per-reply `compressed` choose gzip (when the
//!   client accepts it) whatever the server's default;
//! - `UnimplementedCall` answers UNIMPLEMENTED, as the suite expects (worded as for a method the
//!   server lacks).
//!
//! The server's receive limit applies: `volley serve --max-recv-message-size 16MiB` takes the
//! 10 MiB requests of `very_large_request`.

use std::{collections::VecDeque, pin::Pin, time::Duration};

use futures_util::{Stream, StreamExt, stream};
use http::HeaderValue;
use volley_server::{Code, Reply, Request, Response, Status, Streaming};

use crate::pb::grpc::testing::{
    BoolValue, EchoStatus, Empty, Payload, ResponseParameters, SimpleRequest, SimpleResponse,
    StreamingInputCallRequest, StreamingInputCallResponse, StreamingOutputCallRequest,
    StreamingOutputCallResponse,
    test_service_server::{TestService, TestServiceServer},
};

/// The service name.
pub const NAME: &str = "grpc.testing.TestService";

const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
const ECHO_TRAILING: &str = "x-grpc-test-echo-trailing-bin";

/// The largest payload one reply may ask for; larger sizes are refused rather than allocated.
pub const MAX_RESPONSE_SIZE: i32 = 64 * 1024 * 1024;

/// The two echo headers of a request, kept for the reply.
#[derive(Clone, Default)]
struct Echo {
    initial: Option<HeaderValue>,
    trailing: Option<HeaderValue>,
}

impl Echo {
    fn of<T>(req: &Request<T>) -> Echo {
        Echo {
            initial: req.metadata().get(ECHO_INITIAL).cloned(),
            trailing: req.metadata().get(ECHO_TRAILING).cloned(),
        }
    }

    fn reply<T>(self, mut resp: Response<T>) -> Response<T> {
        if let Some(v) = self.initial {
            resp.metadata_mut().insert(ECHO_INITIAL, v);
        }
        if let Some(v) = self.trailing {
            resp.trailers_mut().insert(ECHO_TRAILING, v);
        }
        resp
    }

    fn status(&self, mut status: Status) -> Status {
        if let Some(v) = &self.trailing {
            status.metadata_mut().insert(ECHO_TRAILING, v.clone());
        }
        status
    }
}

/// A non-zero `response_status` as the call's status.
fn requested_status(s: Option<&EchoStatus>) -> Result<(), Status> {
    match s {
        Some(s) if s.code != 0 => Err(Status::new(Code::from_i32(s.code), s.message.clone())),
        _ => Ok(()),
    }
}

/// INVALID_ARGUMENT when the request's compression is not what `expect` says.
fn check_compressed(expect: Option<&BoolValue>, compressed: bool) -> Result<(), Status> {
    match expect.map(|b| b.value) {
        Some(true) if !compressed => Err(Status::invalid_argument(
            "expected a compressed request message, got an uncompressed one",
        )),
        Some(false) if compressed => Err(Status::invalid_argument(
            "expected an uncompressed request message, got a compressed one",
        )),
        _ => Ok(()),
    }
}

/// `size` zero bytes of the (only) COMPRESSABLE type.
fn payload(size: i32) -> Result<Payload, Status> {
    if !(0..=MAX_RESPONSE_SIZE).contains(&size) {
        return Err(Status::invalid_argument(format!(
            "response size {size} is outside 0..={MAX_RESPONSE_SIZE}"
        )));
    }
    Ok(Payload {
        r#type: 0,
        body: vec![0; size as usize],
    })
}

fn simple(req: &SimpleRequest, compressed: bool) -> Result<SimpleResponse, Status> {
    check_compressed(req.expect_compressed.as_ref(), compressed)?;
    requested_status(req.response_status.as_ref())?;
    Ok(SimpleResponse {
        payload: Some(payload(req.response_size)?),
        ..Default::default()
    })
}

async fn unary_call(req: Request<SimpleRequest>) -> Result<Response<SimpleResponse>, Status> {
    let echo = Echo::of(&req);
    let reply = simple(req.get_ref(), req.message_compressed()).map_err(|s| echo.status(s))?;
    let mut resp = Response::new(reply);
    if let Some(c) = &req.get_ref().response_compressed {
        resp.set_compressed(c.value);
    }
    Ok(echo.reply(resp))
}

/// One reply of a stream, after its interval.
async fn streamed(p: ResponseParameters) -> Result<Reply<StreamingOutputCallResponse>, Status> {
    if p.interval_us > 0 {
        tokio::time::sleep(Duration::from_micros(p.interval_us as u64)).await;
    }
    Ok(Reply {
        message: StreamingOutputCallResponse {
            payload: Some(payload(p.size)?),
        },
        compress: p.compressed.is_none_or(|c| c.value),
    })
}

type Replies = Result<Reply<StreamingOutputCallResponse>, Status>;

/// Replies to a stream of requests as they arrive (FullDuplexCall), or all at once after the
/// client has finished (HalfDuplexCall, `buffer`).
fn duplex(
    incoming: impl Stream<Item = Result<StreamingOutputCallRequest, Status>> + Send + 'static,
    echo: Echo,
) -> impl Stream<Item = Replies> + Send {
    type Requests = Pin<Box<dyn Stream<Item = Result<StreamingOutputCallRequest, Status>> + Send>>;
    struct State {
        incoming: Option<Requests>,
        pending: VecDeque<ResponseParameters>,
        echo: Echo,
    }
    let state = State {
        incoming: Some(Box::pin(incoming)),
        pending: VecDeque::new(),
        echo,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(p) = st.pending.pop_front() {
                let r = streamed(p).await;
                if r.is_err() {
                    st.incoming = None;
                }
                return Some((r.map_err(|s| st.echo.status(s)), st));
            }
            let incoming = st.incoming.as_mut()?;
            match incoming.next().await {
                None => return None,
                Some(Ok(req)) => {
                    if let Err(s) = requested_status(req.response_status.as_ref()) {
                        st.incoming = None;
                        return Some((Err(st.echo.status(s)), st));
                    }
                    st.pending.extend(req.response_parameters);
                }
                Some(Err(s)) => {
                    st.incoming = None;
                    return Some((Err(s), st));
                }
            }
        }
    })
}

/// A stream of replies, boxed: the interop service's streams are built from closures.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Replies> + Send>>;

/// The interop suite's service, on the generated `TestService` trait.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interop;

impl TestService for Interop {
    async fn empty_call(&self, req: Request<Empty>) -> Result<Response<Empty>, Status> {
        Ok(Echo::of(&req).reply(Response::new(Empty {})))
    }

    async fn unary_call(
        &self,
        req: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        unary_call(req).await
    }

    async fn cacheable_unary_call(
        &self,
        req: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let mut resp = unary_call(req).await?;
        resp.metadata_mut().insert(
            "cache-control",
            HeaderValue::from_static("max-age=60, public"),
        );
        Ok(resp)
    }

    type StreamingOutputCallStream = ReplyStream;

    async fn streaming_output_call(
        &self,
        req: Request<StreamingOutputCallRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        let echo = Echo::of(&req);
        let r = req.into_inner();
        let any_compressed = r
            .response_parameters
            .iter()
            .any(|p| p.compressed.as_ref().is_some_and(|c| c.value));
        let status = r.response_status;
        let end = stream::once(async move { requested_status(status.as_ref()) })
            .filter_map(|r| async move { r.err().map(Err) });
        let replies = stream::iter(r.response_parameters)
            .then(streamed)
            .chain(end);
        let mut resp = Response::new(Box::pin(replies) as ReplyStream);
        if any_compressed {
            resp.set_compressed(true);
        }
        Ok(echo.reply(resp))
    }

    async fn streaming_input_call(
        &self,
        req: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let echo = Echo::of(&req);
        let mut incoming = req.into_inner();
        let mut total = 0usize;
        while let Some(m) = incoming.message().await? {
            check_compressed(m.expect_compressed.as_ref(), incoming.last_compressed())
                .map_err(|s| echo.status(s))?;
            total += m.payload.map_or(0, |p| p.body.len());
        }
        let aggregated_payload_size = i32::try_from(total).map_err(|_| {
            Status::invalid_argument(format!("aggregated payload {total} overflows int32"))
        })?;
        Ok(echo.reply(Response::new(StreamingInputCallResponse {
            aggregated_payload_size,
        })))
    }

    type FullDuplexCallStream = ReplyStream;

    async fn full_duplex_call(
        &self,
        req: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> Result<Response<ReplyStream>, Status> {
        let echo = Echo::of(&req);
        let replies = duplex(req.into_inner(), echo.clone());
        Ok(echo.reply(Response::new(Box::pin(replies) as ReplyStream)))
    }

    type HalfDuplexCallStream = ReplyStream;

    async fn half_duplex_call(
        &self,
        req: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> Result<Response<ReplyStream>, Status> {
        let echo = Echo::of(&req);
        let mut incoming = req.into_inner();
        let mut all = Vec::new();
        while let Some(m) = incoming.message().await? {
            all.push(m);
        }
        let buffered = stream::iter(all.into_iter().map(Ok));
        let replies = duplex(buffered, echo.clone());
        Ok(echo.reply(Response::new(Box::pin(replies) as ReplyStream)))
    }

    async fn unimplemented_call(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        Err(Status::unimplemented(
            "unknown method UnimplementedCall for service grpc.testing.TestService",
        ))
    }
}

/// `grpc.testing.TestService` on volley-server.
pub fn service() -> TestServiceServer<Interop> {
    TestServiceServer::new(Interop)
}
