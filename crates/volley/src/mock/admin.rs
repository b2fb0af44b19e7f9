//! GripMock's admin API for the stubs, on the calls' own port and on `--admin-addr`: GripMock
//! v3's paths (`GET`/`POST`/`DELETE /api/stubs`, `POST /api/stubs/search`, the health probes)
//! and v1's (`POST /add`, `POST /find`, `GET /clear`, and `GET /` on `--admin-addr` only: on the
//! calls' port `/` is volley's hello). Stubs added apply to the next call.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use volley_server::ServerBuilder;

use super::stubs::Stubs;

/// Request bodies larger than this are refused on `--admin-addr`.
const MAX_BODY: usize = 4 << 20;

/// What an admin request asks for.
#[derive(Clone, Copy)]
enum Op {
    List,
    Add,
    Find,
    Clear,
    Health,
}

/// The routes served on both ports: GripMock v3's under `/api`, and v1's but for `GET /`.
const ROUTES: &[(Method, &str, Op)] = &[
    (Method::GET, "/api/stubs", Op::List),
    (Method::POST, "/api/stubs", Op::Add),
    (Method::DELETE, "/api/stubs", Op::Clear),
    (Method::POST, "/api/stubs/search", Op::Find),
    (Method::GET, "/api/health/liveness", Op::Health),
    (Method::GET, "/api/health/readiness", Op::Health),
    (Method::POST, "/add", Op::Add),
    (Method::POST, "/find", Op::Find),
    (Method::GET, "/clear", Op::Clear),
];

fn reply(status: StatusCode, body: &Value) -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn answer(stubs: &Stubs, op: Op, body: &[u8]) -> http::Response<Bytes> {
    match op {
        Op::List => reply(StatusCode::OK, &stubs.list()),
        Op::Add => match stubs.add(body) {
            Ok(ids) => reply(StatusCode::OK, &json!(ids)),
            Err(e) => reply(StatusCode::BAD_REQUEST, &json!({"error": e})),
        },
        Op::Find => match stubs.find(body) {
            Ok(output) => reply(StatusCode::OK, &output),
            Err(e) => reply(StatusCode::NOT_FOUND, &json!({"error": e})),
        },
        Op::Clear => {
            let n = stubs.clear();
            reply(StatusCode::OK, &json!({"message": "ok", "cleared": n}))
        }
        Op::Health => reply(StatusCode::OK, &json!({"message": "ok"})),
    }
}

/// Serves the admin API on the calls' port of the server `builder` makes.
pub fn mount(mut builder: ServerBuilder, stubs: &Stubs) -> ServerBuilder {
    for (method, path, op) in ROUTES {
        let (stubs, op) = (stubs.clone(), *op);
        builder = builder.endpoint(method.clone(), *path, move |req: http::Request<Bytes>| {
            std::future::ready(answer(&stubs, op, req.body()))
        });
    }
    builder
}

async fn serve_one(stubs: Stubs, req: hyper::Request<Incoming>) -> http::Response<Full<Bytes>> {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return reply(StatusCode::BAD_REQUEST, &json!({"error": e.to_string()})).map(Full::new);
        }
    };
    let op = match (&method, path.as_str()) {
        (&Method::GET, "/") => Some(Op::List),
        (m, p) => ROUTES
            .iter()
            .find(|(rm, rp, _)| rm == m && *rp == p)
            .map(|r| r.2),
    };
    let resp = match op {
        Some(op) => answer(&stubs, op, &body),
        None => {
            let known: Vec<String> = ROUTES.iter().map(|(m, p, _)| format!("{m} {p}")).collect();
            reply(
                StatusCode::NOT_FOUND,
                &json!({"error": format!("no {method} {path} here: GET /, {}", known.join(", "))}),
            )
        }
    };
    resp.map(Full::new)
}

/// Serves the admin API on `addr` from a thread of its own, for the life of the process.
pub fn start(addr: SocketAddr, stubs: Stubs) -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on --admin-addr {addr}"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    crate::side_http::serve("volley-admin", listener, move |req| {
        serve_one(stubs.clone(), req)
    })?;
    Ok(bound)
}
