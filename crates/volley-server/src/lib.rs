//! volley-server: a gRPC server framework on tokio, h2 (HTTP/2) and hyper (HTTP/1.1).
//!
//! Register [`Service`]s built from typed handlers, then [`Server::serve`] them on a listener you
//! bound. One handler answers every call kind; the server adds deadlines, gzip, health, reflection,
//! message limits, TLS and a graceful drain.
//!
//! Layout: `status`/`timeout`/`codec`/`compression` are the wire pieces; `service` and `router`
//! hold handlers; `call` runs one call and `body` writes its response; `server` owns listeners
//! and connections, `http2` serves HTTP/2 ones on h2 (`linger` closes them so the last GOAWAY is
//! read) and hyper the rest; `tls`, `health` and `reflection` are the batteries.

mod body;
mod call;
pub mod codec;
pub mod compression;
pub mod connect;
mod drain;
mod envelope;
pub mod health;
mod http2;
mod linger;
mod names;
pub mod reflection;
mod request;
pub mod rest;
mod router;
mod server;
mod service;
mod status;
mod streaming;
pub mod timeout;
pub mod tls;

pub use body::ResponseBody;
pub use codec::{IntoFrame, Reply};
pub use request::{Request, Response};
pub use server::{ConnectionCounts, ServeError, Server, ServerBuilder};
/// Generated health and reflection types (from `volley-proto`).
pub use volley_proto::pb;

/// The server's documented defaults.
pub mod server_defaults {
    pub use crate::server::{
        DEFAULT_CONNECTION_WINDOW as CONNECTION_WINDOW, DEFAULT_GRACE_PERIOD as GRACE_PERIOD,
        DEFAULT_HANDSHAKE_TIMEOUT as HANDSHAKE_TIMEOUT,
        DEFAULT_MAX_CONCURRENT_STREAMS as MAX_CONCURRENT_STREAMS,
        DEFAULT_STREAM_WINDOW as STREAM_WINDOW,
    };
}
pub use service::{Service, ServiceBuilder};
pub use status::{ALL_CODES, Code, Status};
pub use streaming::Streaming;
