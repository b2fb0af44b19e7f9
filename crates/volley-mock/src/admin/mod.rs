//! GripMock's admin API served: on `volley mock`'s admin port (and `volley serve
//! --admin-addr`), every route; on `volley serve`'s calls' port, its exact paths (no `{id}`
//! routes). Stubs added apply to the next call.

mod routes;

use std::net::SocketAddr;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::json;
use volley_server::ServerBuilder;

use crate::stubs::Stubs;

/// Request bodies larger than this are refused on the admin port.
const MAX_BODY: usize = 4 << 20;

/// Serves the admin API's exact paths on the calls' port of the server `builder` makes.
pub fn mount(mut builder: ServerBuilder, stubs: &Stubs) -> ServerBuilder {
    for (method, path) in routes::EXACT {
        let stubs = stubs.clone();
        builder = builder.endpoint(method.clone(), *path, move |req: http::Request<Bytes>| {
            let r = routes::Req {
                method: req.method(),
                path: req.uri().path(),
                query: req.uri().query().unwrap_or_default(),
                headers: req.headers(),
                body: req.body(),
            };
            let resp =
                routes::handle(&stubs, &r).unwrap_or_else(|| http::Response::new(Bytes::new()));
            std::future::ready(resp)
        });
    }
    builder
}

async fn serve_one(stubs: Stubs, req: hyper::Request<Incoming>) -> http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let mut r = http::Response::new(Full::new(Bytes::from(
                json!({"error": e.to_string()}).to_string(),
            )));
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            return r;
        }
    };
    let r = routes::Req {
        method: &parts.method,
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or_default(),
        headers: &parts.headers,
        body: &body,
    };
    let resp = routes::handle(&stubs, &r).unwrap_or_else(|| {
        let mut r = http::Response::new(Bytes::from(
            json!({"error": format!("no {} {} here", parts.method, parts.uri.path())}).to_string(),
        ));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    });
    resp.map(Full::new)
}

/// Serves the admin API on `addr` from a thread of its own, for the life of the process.
pub fn start(addr: SocketAddr, stubs: Stubs) -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on --admin-addr {addr}"))?;
    listener.set_nonblocking(true)?;
    serve(listener, stubs)
}

/// Serves the admin API on `listener` (bound, non-blocking) from a thread of its own, for the
/// life of the process; the address it listens on.
pub fn serve(listener: std::net::TcpListener, stubs: Stubs) -> Result<SocketAddr> {
    let bound = listener.local_addr()?;
    serve_http("volley-admin", listener, move |req| {
        serve_one(stubs.clone(), req)
    })?;
    Ok(bound)
}

/// Serves `listener` with `handle` over HTTP/1.1 on a thread named `name`, one current-thread
/// runtime, for the life of the process.
fn serve_http<H, F>(name: &str, listener: std::net::TcpListener, handle: H) -> std::io::Result<()>
where
    H: Fn(hyper::Request<Incoming>) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = http::Response<Full<Bytes>>> + Send + 'static,
{
    use hyper::{server::conn::http1, service::service_fn};
    use hyper_util::rt::TokioIo;
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                while let Ok((conn, _)) = listener.accept().await {
                    let handle = handle.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let reply = handle(req);
                            async move { Ok::<_, std::convert::Infallible>(reply.await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(conn), service)
                            .await;
                    });
                }
            });
        })?;
    Ok(())
}
