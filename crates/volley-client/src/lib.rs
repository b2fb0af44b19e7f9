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
//! dials and owns one HTTP/2 connection on the h2 crate (no tower, no hyper).
//!
//! What only the load engine uses is in `load`: the lean per-call path (`load::call`, with
//! [`CallHead`] and [`UnaryReply`]), the bench's own HTTP/2 client for unary calls
//! (`load::fast`) and HTTP/1.1 connections for plain-HTTP load (`load::http1`).

#![deny(unreachable_pub)]

mod attempt;
pub mod channel;
pub mod codegen;
pub mod connection;
pub mod endpoint;
pub mod grpc;
pub mod load;
pub mod metrics;
mod policy;
pub mod reflect;
mod retry;
pub mod service_config;
pub mod tls;

pub use attempt::{CallHead, UnaryReply};
pub use channel::{Channel, Lease, Strategy, StrategyError};
pub use connection::{ConnectError, Connection};
pub use endpoint::{Endpoint, EndpointError, Target};
pub use grpc::{
    ClientInterceptor, DialError, Grpc, IntoStreamingRequest, Request, Response, Streaming,
};
pub use policy::{Policy, PolicyError};
pub use service_config::{ServiceConfig, ServiceConfigError};
pub use volley_wire::{Code, Status};
