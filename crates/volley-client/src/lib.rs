//! volley-client: reaching gRPC servers, from an application and from the load engine.
//!
//! What an application uses: `endpoint` says where and how (TCP or Unix socket, plaintext or
//! TLS, authority, timeouts); `tls` builds rustls client configs (CA, mTLS, server-name
//! override, no verification); `channel` shares connections between callers under a
//! [`Strategy`] (per-request, single, pool, expanding), with GOAWAY handling, transparent retry
//! and reconnection with backoff, and spreads them over several addresses by a [`Policy`]
//! (pick-first, round robin, re-resolution); `grpc` makes the typed calls generated clients make
//! (prost messages in and out, metadata, deadlines, compression, all four kinds), with client
//! interceptors ([`ClientInterceptor`]) and gRPC's A66 client metrics (`metrics`);
//! `service_config` reads gRPC service configs (retry and hedging policies, throttling,
//! timeouts) and `retry` runs a call's attempts by them; `reflect` fetches schemas by server
//! reflection; `codegen` is what generated clients import. Under both audiences, `connection`
//! dials (through an HTTP proxy when `HTTPS_PROXY` or the endpoint names one: [`proxy`]) and
//! owns one HTTP/2 connection on the h2 crate (no tower, no hyper); a caller that
//! drives its own streams on one (`volley call`'s dynamic calls) sends with [`send_message`]
//! and words an h2 failure with [`transport_status`].
//!
//! What only the load engine uses is in `load`: the lean per-call path (`load::call`, with
//! [`CallHead`] and [`UnaryReply`]), the bench's own HTTP/2 client for unary calls
//! (`load::fast`) and HTTP/1.1 connections for plain-HTTP load (`load::http1`).
//!
//! # Where to start
//!
//! A generated client (`volley-build`, brought in with [`include_proto!`]):
//! `GreeterClient::connect("http://127.0.0.1:50051").await?` takes what tonic's takes (`&str`,
//! `String`, an `http::Uri` or an [`Endpoint`], with or without `http://`), then one method per
//! rpc. For several connections or addresses build a [`Channel`] from an [`Endpoint`] and a
//! [`Strategy`], and hand it to `GreeterClient::new`. The guide is `docs/client.md`.
//!
//! # Features
//!
//! The default is all of them. With `default-features = false` the client speaks gRPC on h2c with
//! gzip, deadlines, interceptors, channels, balancing, retries, hedging and service configs;
//! `tls` adds rustls (`https://` endpoints, CAs, mutual TLS), `reflection` the [`reflect`]
//! module, `metrics` gRPC's A66 client metrics, `load` the load generator's own paths. An item
//! used without its feature does not resolve, and rustc's note names the feature.

#![deny(unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attempt;
pub mod channel;
pub mod codegen;
pub mod connection;
pub mod endpoint;
pub mod grpc;
#[cfg(feature = "load")]
#[cfg_attr(docsrs, doc(cfg(feature = "load")))]
pub mod load;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod policy;
pub mod proxy;
#[cfg(feature = "reflection")]
#[cfg_attr(docsrs, doc(cfg(feature = "reflection")))]
pub mod reflect;
mod retry;
pub mod service_config;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub mod tls;

pub use attempt::{CallHead, UnaryReply, send_message, transport_status};
pub use channel::{Channel, Lease, Strategy, StrategyError};
pub use connection::{ConnectError, Connection};
pub use endpoint::{Dialer, Endpoint, EndpointError, Target};
pub use grpc::{
    ClientInterceptor, DialError, Grpc, IntoStreamingRequest, Request, Response, Streaming,
};
pub use policy::{Policy, PolicyError};
pub use service_config::{ServiceConfig, ServiceConfigError};
pub use volley_wire::{Code, Status};
