//! volley-server: a gRPC server framework on tokio, h2 (HTTP/2) and hyper (HTTP/1.1).
//!
//! Register [`Service`]s built from typed handlers, then [`Server::serve`] them on a listener you
//! bound. One handler answers every call kind; the server adds deadlines, gzip, health, reflection,
//! message limits, TLS and a graceful drain.
//!
//! # Where to start
//!
//! Generate a service from your `.proto` with `volley-build` in `build.rs`, bring it in with
//! [`include_proto!`], implement its trait, then
//! `Server::builder().add_service(GreeterServer::new(svc)).serve(addr).await` (tonic's shape;
//! [`ServerBuilder::serve`]). The repository's `examples/greeter` is the crate to copy, and
//! `docs/services.md` the guide (coming from tonic, volley in axum).
//!
//! # Features
//!
//! The default is every battery. With `default-features = false` volley-server is a gRPC
//! server on h2c with gzip, deadlines, interceptors, message and concurrency limits, the
//! graceful drain and the [`Router`] for tower; each feature adds one thing:
//!
//! | feature | adds |
//! |---|---|
//! | `tls` | [`tls`] and [`ServerBuilder::tls`] (rustls, ALPN, mutual TLS, rcgen's self-signed) |
//! | `reflection` | [`reflection`] and [`ServerBuilder::reflection`] |
//! | `health` | [`health`], [`Server::health`] and [`ServerBuilder::health`] |
//! | `web` | gRPC-Web, Connect, REST from `google.api.http`, [`openapi`] and [`cors`] (a build without it answers their content types 415) |
//! | `dynamic` | services from run-time descriptors: [`Service::dynamic`], [`DynamicHandler`] |
//! | `metrics` | [`metrics`] (gRPC's A66 on a Prometheus page) and [`ServerBuilder::metrics`] |
//!
//! Traces (OpenTelemetry) are the `volley-telemetry` crate's: it depends on this crate and on
//! `volley-client`, so it is a crate beside them rather than a feature of either. An item used
//! without its feature is an unresolved name; rustc's note names the feature it is gated
//! behind, and each gated item's documentation says which.
//!
//! # Layout
//!
//! In the order a request flows through it; every module imports only from those below it.
//!
//! - `builder`, `server`, `threads`: [`ServerBuilder`] turns services and settings into a
//!   [`Server`], whose [`serve`](Server::serve) runs the accept loop and the graceful drain, and
//!   [`serve_on_threads`](Server::serve_on_threads) runs it thread per core.
//! - `conn`: one connection: TLS or h2c told apart by the first byte, the handshake deadline,
//!   HTTP/2 served on h2 directly (`conn::h2`) and HTTP/1.1 through hyper, maximum age, lingering
//!   close.
//! - `call`: one call: picks the protocol's adapter (gRPC, gRPC-Web and Connect streams in
//!   `call::grpc`, Connect unary, REST) or refuses the request.
//! - `route`: what calls read: the method table, REST routes, descriptors, limits, and the
//!   protocol a content type names.
//! - `handler`: [`Service`]s of typed handlers, erased to byte handlers, and what a handler
//!   receives and returns ([`Request`], [`Response`]).
//! - `body`: request bodies (drained on HTTP/1.1), the inbound message stream ([`Streaming`]),
//!   response bodies, and the envelopes of gRPC-Web and Connect.
//! - `deadline`, `transcode`: a call's deadline; JSON <-> protobuf and Connect's error words.
//! - [`intercept`]: interceptors and the facts of a call ([`intercept::CallInfo`]), which every
//!   stage above may read; it reads from none of them.
//! - [`tls`], [`health`], [`reflection`], [`metrics`], [`auth`], [`cors`], [`limit`]: the
//!   batteries.
//! - [`listen`], [`fds`]: what a server binary does before `serve`: bind TCP or Unix sockets
//!   with a deep backlog, and raise the open-file limit as Go's runtime does.
//! - [`side`]: the HTTP/1.1 side server for an admin API or a metrics page on a port of its
//!   own, under the same access policy as the calls.
//! - [`codegen`]: what the services `volley-build` generates use.
//! - `tower`: the routes as a `tower::Service` ([`Router`], from [`Server::router`]), for axum
//!   and hyper servers.
//!
//! The wire vocabulary (status codes, framing, compression, `grpc-timeout`) is `volley-wire`'s,
//! shared with the client and the load generator; its [`Status`], [`Code`], [`IntoFrame`] and
//! [`Reply`] are re-exported here.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod accept;
pub mod auth;
mod body;
mod builder;
mod call;
pub mod codegen;
mod conn;
#[cfg(feature = "web")]
#[cfg_attr(docsrs, doc(cfg(feature = "web")))]
pub mod cors;
mod deadline;
mod error;
pub mod fds;
mod handler;
#[cfg(feature = "health")]
#[cfg_attr(docsrs, doc(cfg(feature = "health")))]
pub mod health;
pub mod intercept;
pub mod limit;
pub mod listen;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
#[cfg(feature = "web")]
#[cfg_attr(docsrs, doc(cfg(feature = "web")))]
pub mod openapi;
#[cfg(feature = "reflection")]
#[cfg_attr(docsrs, doc(cfg(feature = "reflection")))]
pub mod reflection;
mod route;
mod server;
pub mod side;
mod threads;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub mod tls;
mod tower;
pub mod transcode;

pub use body::{ResponseBody, Streaming};
pub use builder::ServerBuilder;
#[cfg(feature = "web")]
#[cfg_attr(docsrs, doc(cfg(feature = "web")))]
pub use call::ConnectGetQuery;
pub use error::ServeError;
#[cfg(feature = "dynamic")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic")))]
pub use handler::{DynamicFuture, DynamicHandler, DynamicStream};
pub use handler::{Request, Response, Service, ServiceBuilder};
#[cfg(feature = "web")]
#[doc(hidden)]
pub use route::rest::fuzz_match_template;
pub use server::{ConnectionCounts, Server};
pub use tower::Router;
/// Generated health and reflection types (from `volley-proto`).
pub use volley_proto::pb;
pub use volley_wire::{ALL_CODES, Code, IntoFrame, Reply, Status};

/// The server's documented defaults.
pub mod server_defaults {
    pub use crate::builder::{
        DEFAULT_GRACE_PERIOD as GRACE_PERIOD, DEFAULT_HANDSHAKE_TIMEOUT as HANDSHAKE_TIMEOUT,
        DEFAULT_MAX_CONCURRENT_STREAMS as MAX_CONCURRENT_STREAMS,
    };
    pub use crate::conn::h2::{
        DEFAULT_CONNECTION_WINDOW as CONNECTION_WINDOW, DEFAULT_STREAM_WINDOW as STREAM_WINDOW,
    };
}
