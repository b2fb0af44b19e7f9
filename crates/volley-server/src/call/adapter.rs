//! The protocol adapters a request's head chose, and each one's future, boxed at its own size.

use std::sync::Arc;

use super::grpc;
#[cfg(feature = "web")]
use super::{connect, rest};
use crate::{
    body::{HttpResponse, RequestBody},
    handler::BoxFuture,
    intercept::Peer,
    route::{Envelope, Shared},
};

/// How a call is served: the protocol adapter a request's head chose.
pub(crate) enum Way {
    /// gRPC, gRPC-Web or Connect streaming (`grpc`).
    Framed { env: Envelope, json: bool },
    /// A Connect unary POST (`connect`).
    #[cfg(feature = "web")]
    ConnectPost { json: bool },
    /// A Connect unary GET (`connect`).
    #[cfg(feature = "web")]
    ConnectGet,
    /// A REST route (`rest`): its index and the path's variables.
    #[cfg(feature = "web")]
    Rest {
        route: usize,
        vars: Vec<(String, String)>,
    },
}

/// The protocol adapter's future for a call, boxed at its own size.
pub(super) fn adapter(
    shared: &Arc<Shared>,
    peer: &Arc<Peer>,
    req: http::Request<RequestBody>,
    way: Way,
) -> BoxFuture<HttpResponse> {
    match way {
        Way::Framed { env, json } => Box::pin(grpc::serve(shared, peer, req, env, json)),
        #[cfg(feature = "web")]
        Way::ConnectPost { json } => Box::pin(connect::serve_unary(
            shared.clone(),
            peer.clone(),
            req,
            json,
        )),
        #[cfg(feature = "web")]
        Way::ConnectGet => Box::pin(connect::serve_get(shared.clone(), peer.clone(), req)),
        #[cfg(feature = "web")]
        Way::Rest { route, vars } => {
            Box::pin(rest::serve(shared.clone(), peer.clone(), req, route, vars))
        }
    }
}
