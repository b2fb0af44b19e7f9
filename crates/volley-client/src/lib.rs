//! volley-client: reaching gRPC servers.
//!
//! `endpoint` says where and how (TCP or Unix socket, plaintext or TLS, authority, timeouts);
//! `tls` builds rustls client configs (CA, mTLS, server-name override, no verification);
//! `connection` dials and owns one HTTP/2 connection on the h2 crate (no tower, no hyper);
//! `channel` shares connections between callers under a strategy (per-request, single, pool,
//! expanding), with GOAWAY handling, transparent retry and reconnection with backoff;
//! `balance` spreads them over several addresses (pick-first, round robin, re-resolution);
//! `call` is the lean per-call path the load engine uses, and `fast` its own HTTP/2 client for
//! unary calls; `grpc` the typed calls generated
//! clients make (prost messages in and out, metadata, deadlines, compression, all four kinds),
//! with client interceptors (`grpc::ClientInterceptor`) and gRPC's A66 client metrics
//! (`metrics`); `http1` carries plain HTTP/1.1 load;
//! `service_config` reads gRPC service configs (retry and hedging policies, throttling,
//! timeouts) and `retry` runs a call's attempts by them;
//! `reflect` fetches schemas by server reflection; `codegen` is what generated clients import.

pub mod balance;
pub mod call;
pub mod channel;
pub mod codegen;
pub mod connection;
pub mod endpoint;
pub mod fast;
pub mod grpc;
pub mod http1;
pub mod metrics;
pub mod reflect;
mod retry;
pub mod service_config;
pub mod tls;

pub use balance::{Policy, PolicyError};
pub use call::{CallHead, UnaryReply};
pub use channel::{Channel, Lease, Strategy, StrategyError};
pub use connection::{ConnectError, Connection};
pub use endpoint::{Endpoint, EndpointError, Target};
pub use grpc::{
    ClientInterceptor, DialError, Grpc, IntoStreamingRequest, Request, Response, Streaming,
};
pub use service_config::{ServiceConfig, ServiceConfigError};
pub use volley_wire::{Code, Status};
