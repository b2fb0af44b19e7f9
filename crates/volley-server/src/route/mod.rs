//! What every call reads: the method table, REST routes, method descriptors and limits
//! ([`Shared`]), and how a request's protocol is recognised.

mod protocol;
#[cfg(feature = "web")]
pub(crate) mod rest;
mod table;

use std::{collections::HashMap, sync::Arc};

use crate::intercept::Chain;

pub(crate) use protocol::{Envelope, Protocol, content_type, protocol};
pub(crate) use table::Router;

/// Per-call limits and switches, read on every call.
pub(crate) struct Limits {
    pub(crate) max_recv: usize,
    pub(crate) max_send: usize,
    pub(crate) send_compression: bool,
}

/// What every call of a server shares.
pub(crate) struct Shared {
    pub(crate) router: Router,
    pub(crate) limits: Limits,
    /// Method descriptors by path, for JSON transcoding (from the registered descriptor sets).
    pub(crate) descriptors: HashMap<String, prost_reflect::MethodDescriptor>,
    /// REST routes (`google.api.http`).
    #[cfg(feature = "web")]
    pub(crate) rest: Vec<rest::Route>,
    /// The server's own interceptors (calls to unknown methods see these).
    pub(crate) chain: Option<Arc<Chain>>,
    /// Whether any call has interceptors: when not, calls take the path without them.
    pub(crate) intercepted: bool,
    /// Plain HTTP endpoints served beside the calls (`/metrics`, an admin API).
    pub(crate) endpoints: Vec<Endpoint>,
    /// CORS for web pages on other origins, when configured.
    #[cfg(feature = "web")]
    pub(crate) cors: Option<crate::cors::Cors>,
}

#[cfg(test)]
impl Shared {
    /// A server with nothing registered and 1-byte limits, for tests of the call path's shape.
    pub(crate) fn empty() -> Shared {
        Shared {
            router: Router::default(),
            limits: Limits {
                max_recv: 1,
                max_send: 1,
                send_compression: false,
            },
            descriptors: HashMap::new(),
            #[cfg(feature = "web")]
            rest: Vec::new(),
            chain: None,
            intercepted: false,
            endpoints: Vec::new(),
            #[cfg(feature = "web")]
            cors: None,
        }
    }
}

/// A plain HTTP endpoint served on the calls' port: a method, a path, and what answers them.
pub(crate) struct Endpoint {
    pub(crate) method: http::Method,
    pub(crate) path: String,
    pub(crate) handle: EndpointFn,
}

/// What answers an [`Endpoint`]: the request with its whole body, to the response.
pub(crate) type EndpointFn = Arc<
    dyn Fn(http::Request<bytes::Bytes>) -> crate::handler::BoxFuture<http::Response<bytes::Bytes>>
        + Send
        + Sync,
>;
