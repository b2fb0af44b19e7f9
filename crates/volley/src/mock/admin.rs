//! GripMock's admin API over HTTP/1.1 on `--admin-addr`: `GET /` lists the stubs in force,
//! `POST /add` adds a stub (or a list), `POST /find` answers `{service, method, data}` as a call
//! would. The stubs added apply to the next call.

use std::{convert::Infallible, net::SocketAddr};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, StatusCode, body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::stubs::Stubs;

/// Request bodies larger than this are refused.
const MAX_BODY: usize = 4 << 20;

fn reply(status: StatusCode, body: &Value) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn answer(stubs: Stubs, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return reply(StatusCode::BAD_REQUEST, &json!({"error": e.to_string()})),
    };
    match (method, path.as_str()) {
        (Method::GET, "/") => reply(StatusCode::OK, &stubs.list()),
        (Method::POST, "/add") => match stubs.add(&body) {
            Ok(ids) => reply(StatusCode::OK, &json!(ids)),
            Err(e) => reply(StatusCode::BAD_REQUEST, &json!({"error": e})),
        },
        (Method::POST, "/find") => match stubs.find(&body) {
            Ok(output) => reply(StatusCode::OK, &output),
            Err(e) => reply(StatusCode::NOT_FOUND, &json!({"error": e})),
        },
        (_, p) => reply(
            StatusCode::NOT_FOUND,
            &json!({"error": format!("no {p} here: GET /, POST /add, POST /find")}),
        ),
    }
}

/// Serves the admin API on `addr` from a thread of its own, for the life of the process.
pub fn start(addr: SocketAddr, stubs: Stubs) -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on --admin-addr {addr}"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("volley-admin".into())
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
                    let stubs = stubs.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let stubs = stubs.clone();
                            async move { Ok::<_, Infallible>(answer(stubs, req).await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(conn), service)
                            .await;
                    });
                }
            });
        })?;
    Ok(bound)
}
