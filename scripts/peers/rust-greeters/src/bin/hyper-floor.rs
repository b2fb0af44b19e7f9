//! The floor: helloworld.Greeter/SayHello written directly on hyper's HTTP/2 server, with nothing
//! a framework adds (no routing table, limits, deadlines, compression, other protocols). One
//! current-thread runtime, as `volley serve --threads 1` runs. What a gRPC call costs at least on
//! this stack.
use std::convert::Infallible;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use rust_greeters::helloworld::{HelloReply, HelloRequest};

type Body = StreamBody<futures_stream::Iter>;

mod futures_stream {
    //! A two-frame body (data, trailers) without a boxed stream.
    use super::*;
    pub struct Iter(pub Option<Frame<Bytes>>, pub Option<Frame<Bytes>>);
    impl tokio_stream::Stream for Iter {
        type Item = Result<Frame<Bytes>, Infallible>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.take().or_else(|| self.1.take()).map(Ok))
        }
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let name = body
        .get(5..)
        .and_then(|m| HelloRequest::decode(m).ok())
        .map(|r| r.name)
        .unwrap_or_default();
    let reply = HelloReply { message: format!("Hello {name}") };
    let mut frame = BytesMut::with_capacity(5 + reply.encoded_len());
    frame.put_u8(0);
    frame.put_u32(reply.encoded_len() as u32);
    reply.encode_raw(&mut frame);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let body = StreamBody::new(futures_stream::Iter(
        Some(Frame::data(frame.freeze())),
        Some(Frame::trailers(trailers)),
    ));
    let mut resp = Response::new(body);
    resp.headers_mut().insert("content-type", HeaderValue::from_static("application/grpc"));
    Ok(resp)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let listener = rust_greeters::listen().await;
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), hyper::service::service_fn(handle))
                    .await;
            });
        }
    });
}
