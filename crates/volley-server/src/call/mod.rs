//! One call: pick the protocol's adapter for a request (gRPC, gRPC-Web and Connect streams in
//! `grpc`, Connect unary in `connect`, REST in `rest`, with grpc-gateway's shapes in `rest_shape`) or refuse it with a plain HTTP answer;
//! on a server with interceptors, `intercepted` runs them around the adapter (`adapter`).

mod adapter;
#[cfg(feature = "web")]
mod connect;
mod grpc;
mod intercepted;
#[cfg(feature = "web")]
mod rest;
#[cfg(feature = "web")]
mod rest_shape;

use std::sync::Arc;

use crate::{
    body::{HttpResponse, RequestBody, ResponseBody, discard, plain, read_limited},
    handler::BoxFuture,
    intercept::Peer,
    route::{Envelope, Protocol, Shared, protocol},
};

pub(crate) use adapter::Way;
use adapter::adapter;
#[cfg(feature = "web")]
pub use connect::ConnectGetQuery;

/// Picks the protocol for a request: gRPC, gRPC-Web, Connect, REST, a page, or a plain refusal.
///
/// Not an `async fn`: the choice is made before any await, and the answer is one boxed future
/// sized to its own protocol. hyper moves the per-call future by value into its stream task and
/// tokio again into the task cell; a pointer moves for free where a ~3 KiB union of every
/// protocol's future cost several memcpys per call (docs/benchmarks-history.md, "Server: volley
/// serve beside the stacks users pick instead").
///
/// The server's shared state is lent, not cloned: a gRPC call's future takes only its route's
/// handler and method from it, and the protocols whose futures keep it clone it themselves (a
/// per-call reference count is two atomic read-modify-writes).
pub(crate) fn serve(
    shared: &Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    #[cfg(feature = "web")]
    return with_cors(shared, peer, req);
    #[cfg(not(feature = "web"))]
    route(shared, peer, req)
}

/// [`serve`] on a server with the `web` feature: CORS preflights answered, CORS headers added.
#[cfg(feature = "web")]
fn with_cors(
    shared: &Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    let Some(cors) = &shared.cors else {
        return route(shared, peer, req);
    };
    let (parts, body) = req.into_parts();
    if crate::cors::is_preflight(&parts) {
        // Answered here whatever the path: a preflight never runs a call.
        let resp = match cors.preflight(&parts.headers) {
            Some(headers) => {
                let mut r = plain(http::StatusCode::NO_CONTENT, "");
                *r.headers_mut() = headers;
                r
            }
            None => plain(
                http::StatusCode::FORBIDDEN,
                "volley: this origin may not call this server (CORS)\n",
            ),
        };
        return Box::pin(std::future::ready(resp));
    }
    use futures_util::FutureExt;
    let extra = cors.reply_headers(&parts.headers);
    let call = route(shared, peer, http::Request::from_parts(parts, body));
    match extra {
        None => call,
        Some(headers) => Box::pin(call.map(move |mut r| {
            r.headers_mut().extend(headers);
            r
        })),
    }
}

/// Serves a request that is not a CORS preflight.
fn route(
    shared: &Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    let (way, req) = match choose(shared, req) {
        Ok(chosen) => chosen,
        Err(answer) => return answer,
    };
    if shared.intercepted {
        return intercepted::serve(shared.clone(), peer, req, way);
    }
    adapter(shared, peer, req, way)
}

/// The way a request is served, or the answer that refuses it (or serves a page).
#[allow(clippy::type_complexity)]
fn choose(
    shared: &Shared,
    req: http::Request<RequestBody>,
) -> Result<(Way, http::Request<RequestBody>), BoxFuture<HttpResponse>> {
    let proto = protocol(req.headers());
    let grpc = matches!(
        proto,
        Protocol::Framed {
            env: Envelope::Grpc,
            ..
        }
    );
    if !grpc && !shared.endpoints.is_empty() {
        let path = req.uri().path();
        if let Some(e) = shared
            .endpoints
            .iter()
            .find(|e| e.path == path && e.method == req.method())
        {
            if let Some(no) = page_refused(shared, &req) {
                return Err(page(req, no));
            }
            return Err(endpoint(shared, e.handle.clone(), req));
        }
        if shared.endpoints.iter().any(|e| e.path == path) {
            return Err(refuse(
                req,
                http::StatusCode::METHOD_NOT_ALLOWED,
                "volley: this path does not take this method\n",
            ));
        }
    }
    #[cfg(feature = "web")]
    if !grpc
        && !shared.rest.is_empty()
        && let Some((route, vars)) =
            crate::route::rest::find(&shared.rest, req.method(), req.uri().path())
    {
        return Ok((Way::Rest { route, vars }, req));
    }
    match proto {
        Protocol::Framed { env, json } => Ok((Way::Framed { env, json }, req)),
        #[cfg(feature = "web")]
        Protocol::ConnectUnary { json } if req.method() == http::Method::POST => {
            Ok((Way::ConnectPost { json }, req))
        }
        #[cfg(feature = "web")]
        Protocol::ConnectUnary { .. } if req.method() != http::Method::GET => Err(refuse(
            req,
            http::StatusCode::METHOD_NOT_ALLOWED,
            "volley: Connect unary calls are POST (or GET for side-effect-free methods)\n",
        )),
        Protocol::UnknownCodec => Err(refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "volley: unsupported codec; this server speaks proto and json\n",
        )),
        _ if req.method() == http::Method::GET && req.uri().path() == "/" => {
            match page_refused(shared, &req) {
                Some(no) => Err(page(req, no)),
                None => Err(refuse(req, http::StatusCode::OK, HELLO)),
            }
        }
        #[cfg(feature = "web")]
        _ if req.method() == http::Method::GET && shared.router.get(req.uri().path()).is_some() => {
            Ok((Way::ConnectGet, req))
        }
        Protocol::Other if req.method() == http::Method::GET => Err(refuse(
            req,
            http::StatusCode::NOT_FOUND,
            "volley: no route for this path\n",
        )),
        _ => Err(refuse(
            req,
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            UNSUPPORTED,
        )),
    }
}

/// The server's interceptors' answer to a page (an endpoint, `GET /`) one of them refuses
/// ([`Interceptor::on_endpoint`](crate::intercept::Interceptor::on_endpoint)).
fn page_refused(
    shared: &Shared,
    req: &http::Request<RequestBody>,
) -> Option<http::Response<bytes::Bytes>> {
    let chain = shared.chain.as_ref()?;
    let page = crate::intercept::Page {
        method: req.method(),
        path: req.uri().path(),
        headers: req.headers(),
    };
    let status = chain.admit_page(&page).err()?;
    tracing::debug!(
        "refused {} {}: {}",
        req.method(),
        req.uri().path(),
        status.message()
    );
    Some(crate::auth::refused_page(&status))
}

/// `resp` once the request's body (if any) has been read: see `drain::discard`.
fn page(
    req: http::Request<RequestBody>,
    resp: http::Response<bytes::Bytes>,
) -> BoxFuture<HttpResponse> {
    let mut body = req.into_body();
    Box::pin(async move {
        discard(&mut body).await;
        let (head, body) = resp.into_parts();
        http::Response::from_parts(head, ResponseBody::other(http_body_util::Full::new(body)))
    })
}

/// An endpoint registered with `ServerBuilder::endpoint`, answered once the body is read.
fn endpoint(
    shared: &Shared,
    handle: crate::route::EndpointFn,
    req: http::Request<RequestBody>,
) -> BoxFuture<HttpResponse> {
    let max = shared.limits.max_recv;
    let (parts, body) = req.into_parts();
    Box::pin(async move {
        let body = match read_limited(body, max).await {
            Ok(b) => b,
            Err((status, http)) => {
                let code = http.unwrap_or(http::StatusCode::BAD_REQUEST);
                return plain(code, format!("volley: {}\n", status.message()));
            }
        };
        let (head, body) = handle(http::Request::from_parts(parts, body))
            .await
            .into_parts();
        http::Response::from_parts(head, ResponseBody::other(http_body_util::Full::new(body)))
    })
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

/// The answer to a request in no protocol the server speaks.
#[cfg(feature = "web")]
const UNSUPPORTED: &str =
    "volley: unsupported content-type; this port speaks gRPC, gRPC-Web and Connect\n";
/// The answer to a request in no protocol the server speaks (built without `web`).
#[cfg(not(feature = "web"))]
const UNSUPPORTED: &str = "volley: unsupported content-type; this port speaks gRPC (gRPC-Web and \
                           Connect are volley-server's `web` feature)\n";

/// The body of `GET /`, a short text like the seed's Hyperf hello endpoint (for wrk).
pub(crate) const HELLO: &str = "Hello from volley.\n";
