//! volley's router as a `tower::Service`, for servers other than volley's own accept loop: mount
//! it in an axum `Router` (`fallback_service`, `nest_service`), serve it from your own hyper
//! loop, wrap it in tower layers (tower-http's tracing, timeouts, CORS).
//!
//! It answers what `Server::serve` answers on its own port: gRPC, gRPC-Web, Connect and REST,
//! with the builder's interceptors, limits on messages, deadlines and compression. What belongs
//! to a connection stays with the server that owns the connection: HTTP/2 settings, keepalive
//! and ping policing, connection caps and idle limits, TLS. volley's own loop (`Server::serve`)
//! remains the fast path: the router's cost per call beside it is in BENCHMARKS.md ("The router
//! as a tower::Service under axum").
//!
//! Interceptors see the caller's address when the request's extensions hold a
//! `std::net::SocketAddr` (insert it where you accept connections; axum's `ConnectInfo` is not
//! read); otherwise [`Peer::addr`](crate::intercept::Peer::addr) is `None`.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::FutureExt;

use crate::{
    Server,
    body::{BoxError, RequestBody, ResponseBody},
    handler::BoxFuture,
    intercept::Peer,
    route::Shared,
};

/// The server's routes as a `tower::Service<http::Request<B>>` for any `http_body::Body` B:
/// cheap to clone (everything is shared), always ready, never fails (an error is an HTTP or
/// gRPC answer).
#[derive(Clone)]
pub struct Router {
    shared: Arc<Shared>,
    unknown_peer: Arc<Peer>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").finish_non_exhaustive()
    }
}

impl Server {
    /// The server's routes as a `tower::Service`, to serve them from another server (axum,
    /// hyper) on a port it owns. The server's own accept loop is not needed for it.
    pub fn router(&self) -> Router {
        Router {
            shared: self.conn.shared(),
            unknown_peer: Arc::new(Peer::new(None, false, Vec::new())),
        }
    }
}

impl<B> tower_service::Service<http::Request<B>> for Router
where
    B: http_body::Body + Send + 'static,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<ResponseBody>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let peer = match req.extensions().get::<SocketAddr>() {
            Some(addr) => Arc::new(Peer::new(Some(*addr), false, Vec::new())),
            None => self.unknown_peer.clone(),
        };
        let req = req.map(RequestBody::other);
        Box::pin(crate::call::serve(&self.shared, &peer, req).map(Ok))
    }
}
