//! What only the load engine (`volley-bench`) uses, apart from what applications use: the lean
//! per-call path on an h2-crate connection (`call`), the bench's own HTTP/2 client for gRPC
//! calls of every kind (`fast`), and HTTP/1.1 connections for plain-HTTP load (`http1`).
//! None of it decodes a reply message: calls and messages are counted (`messages`) and timed.

pub mod call;
pub mod fast;
pub mod http1;
mod messages;

pub use messages::MessageCounter;
