//! GripMock's admin API served: on `volley mock`'s admin port (and `volley serve
//! --admin-addr`), every route, on volley-server's side server; on `volley serve`'s calls' port,
//! its exact paths (no `{id}` routes), under that port's interceptors (`--require-token`).
//! Stubs added apply to the next call. The admin port also serves the mock's page (`page`,
//! `GET /ui`), which reads and changes the stubs through this API, under the same token.

mod page;
mod routes;

use std::net::SocketAddr;

use bytes::Bytes;
use http::StatusCode;
use serde_json::json;
use volley_server::{ServerBuilder, auth::BearerToken, side::SideServer};

use crate::{MockError, stubs::Stubs};

/// Request bodies larger than this are refused on the admin port.
const MAX_BODY: usize = 4 << 20;

/// Serves the admin API's exact paths on the calls' port of the server `builder` makes.
pub fn mount(mut builder: ServerBuilder, stubs: &Stubs) -> ServerBuilder {
    for (method, path) in routes::EXACT {
        let stubs = stubs.clone();
        builder = builder.endpoint(method.clone(), *path, move |req: http::Request<Bytes>| {
            let resp = answer(&stubs, &req).unwrap_or_else(|| http::Response::new(Bytes::new()));
            std::future::ready(resp)
        });
    }
    builder
}

/// The admin API's answer to `req`, or `None` for a route it does not have.
fn answer(stubs: &Stubs, req: &http::Request<Bytes>) -> Option<http::Response<Bytes>> {
    routes::handle(
        stubs,
        &routes::Req {
            method: req.method(),
            path: req.uri().path(),
            query: req.uri().query().unwrap_or_default(),
            headers: req.headers(),
            body: req.body(),
        },
    )
}

/// Binds `addr` and serves the admin API there: see [`serve`].
pub fn start(addr: SocketAddr, stubs: Stubs, token: Option<&str>) -> Result<SocketAddr, MockError> {
    let listener = std::net::TcpListener::bind(addr).map_err(|reason| MockError::Listen {
        at: format!("--admin-addr {addr}"),
        reason,
    })?;
    serve(listener, stubs, token)
}

/// Serves the admin API on `listener` (bound) from a thread of its own, for the life of the
/// process; every request bears `authorization: Bearer TOKEN` when `token` is given (401
/// otherwise). The address it listens on.
pub fn serve(
    listener: std::net::TcpListener,
    stubs: Stubs,
    token: Option<&str>,
) -> Result<SocketAddr, MockError> {
    let mut side = SideServer::new("volley-admin").max_body(MAX_BODY);
    if let Some(t) = token {
        // The page checks the token itself: a browser opening it sends the link's `?token=`,
        // not a header (the page then sends the header on every API request).
        side = side.guard(BearerToken::new(t).open_endpoint(page::PATH));
    }
    let token: Option<std::sync::Arc<str>> = token.map(Into::into);
    let bound = side.spawn(listener, move |req| {
        std::future::ready(match req.uri().path() == page::PATH {
            true => page::respond(&req, token.as_deref()),
            false => respond(&stubs, &req),
        })
    })?;
    Ok(bound)
}

/// The admin API's answer to `req` (its body read), on any of its routes, `{id}` ones too: 404
/// for a path it does not have. What its own port serves, for mounting it elsewhere.
pub fn respond(stubs: &Stubs, req: &http::Request<Bytes>) -> http::Response<Bytes> {
    answer(stubs, req).unwrap_or_else(|| {
        let mut r = http::Response::new(Bytes::from(
            json!({"error": format!("no {} {} here", req.method(), req.uri().path())}).to_string(),
        ));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    })
}

/// The line `volley mock` and `volley serve` log when the admin API on `addr` can be reached
/// from other hosts with no token: anyone who can reach it can add stubs and read the calls'
/// history. `None` when it cannot (loopback, or a token).
pub fn exposure_warning(addr: SocketAddr, token: bool, close_with: &str) -> Option<String> {
    (!token && !addr.ip().is_loopback()).then(|| {
        format!(
            "the admin API on {addr} needs no token and other hosts can reach it: anyone who \
             can connect may add stubs and read the calls' history; {close_with} closes it"
        )
    })
}
