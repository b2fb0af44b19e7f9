//! The floor: helloworld.Greeter/SayHello and api.Users/{Get,List} written directly on hyper's
//! HTTP/2 server (a match on the path), with nothing a framework adds (no routing table, limits, deadlines, compression, other protocols). One
//! current-thread runtime, as `volley serve --threads 1` runs. What a gRPC call costs at least on
//! this stack.
use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rust_greeters::{
    api::GetUserRequest,
    decode, frame, get_reply,
    helloworld::{HelloReply, HelloRequest},
    list_item,
};

type Body = StreamBody<Frames>;

/// The response body: data frames, then the trailers; no boxed stream, and no allocation for a
/// unary reply beyond its frame.
struct Frames {
    one: Option<Bytes>,
    many: std::vec::IntoIter<Bytes>,
    trailers: Option<HeaderMap>,
}

impl tokio_stream::Stream for Frames {
    type Item = Result<Frame<Bytes>, Infallible>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = match self.one.take().or_else(|| self.many.next()) {
            Some(data) => Some(Frame::data(data)),
            None => self.trailers.take().map(Frame::trailers),
        };
        std::task::Poll::Ready(next.map(Ok))
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let method = match req.uri().path() {
        "/helloworld.Greeter/SayHello" => 1,
        "/api.Users/Get" => 2,
        "/api.Users/List" => 3,
        _ => 0,
    };
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let (one, many) = match method {
        1 => {
            let name = decode::<HelloRequest>(&body).name;
            (
                Some(frame(&HelloReply {
                    message: format!("Hello {name}"),
                })),
                Vec::new(),
            )
        }
        2 => (
            Some(frame(&get_reply(decode::<GetUserRequest>(&body).id))),
            Vec::new(),
        ),
        3 => (None, (0..10).map(|i| frame(&list_item(i))).collect()),
        _ => (None, Vec::new()),
    };
    let mut trailers = HeaderMap::new();
    let status = if one.is_some() || !many.is_empty() {
        "0"
    } else {
        "12"
    };
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    let body = StreamBody::new(Frames {
        one,
        many: many.into_iter(),
        trailers: Some(trailers),
    });
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    Ok(resp)
}

fn main() {
    rust_greeters::serve_each(|tcp| async move {
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(tcp), hyper::service::service_fn(handle))
            .await;
    });
}
