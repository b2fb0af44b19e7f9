//! `k6/net/grpc` in Rust: a VU's clients (schemas from `load`, `loadProtoset` or reflection; a
//! connection from `connect`), unary calls (`unary`: `invoke`, `healthCheck`) and streams
//! (`stream`), on volley-call's one-call layer (`volley_call::dynamic`: gRPC, gRPC-Web or
//! Connect over volley-client's HTTP/2 connection); `call` holds what both kinds need (params,
//! the method, messages in and out). Messages come in as protojson text and go back out as
//! protojson with unpopulated fields emitted, as k6's `protojson.MarshalOptions{EmitUnpopulated:
//! true}` gives them. What this module needs of the VU it runs in is the [`Host`] trait.

mod call;
mod client;
mod host;
mod stream;
mod unary;

pub(crate) use client::{close, connect, load, load_protoset, new_client};
pub(crate) use host::{Client, Event, Finished, Host, Streams};
pub(crate) use stream::{stream_end, stream_open, stream_write};
pub(crate) use unary::{async_invoke, health, invoke};
