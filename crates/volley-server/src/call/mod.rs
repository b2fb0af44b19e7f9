//! One call: pick the protocol's adapter for a request (gRPC, gRPC-Web and Connect streams in
//! `grpc`, Connect unary in `connect`, REST in `rest`) or refuse it with a plain HTTP answer.

mod connect;
mod grpc;
mod rest;

use std::sync::Arc;

use crate::{
    body::{HttpResponse, RequestBody, discard, plain},
    handler::BoxFuture,
    route::{Envelope, Protocol, Shared, protocol},
};

pub use connect::ConnectGetQuery;

/// Picks the protocol for a request: gRPC, gRPC-Web, Connect, or the plain `GET /` answer.
///
/// Not an `async fn`: the choice is made before any await, and the answer is one boxed future
/// sized to its own protocol. hyper moves the per-call future by value into its stream task and
/// tokio again into the task cell; a pointer moves for free where a ~3 KiB union of every
/// protocol's future cost several memcpys per call (BENCHMARKS.md, "Profiles").
pub(crate) fn serve(
    shared: Arc<Shared>,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    let proto = protocol(req.headers());
    let grpc = matches!(
        proto,
        Protocol::Framed {
            env: Envelope::Grpc,
            ..
        }
    );
    if !grpc && !shared.rest.is_empty() {
        if let Some((route, vars)) =
            crate::route::rest::find(&shared.rest, req.method(), req.uri().path())
        {
            return Box::pin(rest::serve(shared, req, route, vars));
        }
    }
    match proto {
        Protocol::Framed { env, json } => Box::pin(grpc::serve(&shared, req, env, json)),
        Protocol::ConnectUnary { json } if req.method() == http::Method::POST => {
            Box::pin(connect::serve_unary(shared, req, json))
        }
        Protocol::ConnectUnary { .. } if req.method() != http::Method::GET => refuse(
            req,
            http::StatusCode::METHOD_NOT_ALLOWED,
            "volley: Connect unary calls are POST (or GET for side-effect-free methods)\n",
        ),
        Protocol::UnknownCodec => refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "volley: unsupported codec; this server speaks proto and json\n",
        ),
        _ if req.method() == http::Method::GET && req.uri().path() == "/" => {
            refuse(req, http::StatusCode::OK, HELLO)
        }
        _ if req.method() == http::Method::GET && shared.router.get(req.uri().path()).is_some() => {
            Box::pin(connect::serve_get(shared, req))
        }
        Protocol::Other if req.method() == http::Method::GET => refuse(
            req,
            http::StatusCode::NOT_FOUND,
            "volley: no route for this path\n",
        ),
        _ => refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "volley: unsupported content-type; this port speaks gRPC, gRPC-Web and Connect\n",
        ),
    }
}

/// A plain-text answer once the request's body (if any) has been read: see `drain::discard`.
fn refuse(
    req: http::Request<RequestBody>,
    code: http::StatusCode,
    text: &'static str,
) -> BoxFuture<HttpResponse> {
    let mut body = req.into_body();
    Box::pin(async move {
        discard(&mut body).await;
        plain(code, text)
    })
}

/// The body of `GET /`, a short text like the seed's Hyperf hello endpoint (for wrk).
pub const HELLO: &str = "Hello from volley.\n";
