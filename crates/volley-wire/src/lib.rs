//! volley-wire: gRPC's wire vocabulary, shared by volley's server, client and bench.
//!
//! Nothing here opens a socket. `status` holds the codes and [`Status`] a call ends with;
//! `codec` the length-prefixed framing (encode one frame, split a byte stream into messages);
//! `compression` the `grpc-encoding` values volley speaks; `timeout` the `grpc-timeout` header;
//! `names` the header names of the call path as constants; `h2` HTTP/2's own vocabulary (the
//! preface, frame types, flags, error codes, SETTINGS, the frame header) for the server and the
//! load engine's HTTP/2 client.
//!
//! The server, the client and the load generator all use it, so none of them depends on another
//! for the words they share (tonic keeps the same pieces in its `codec` and `status` modules).

#![deny(unreachable_pub)]

pub mod a66;
pub mod codec;
pub mod compression;
pub mod h2;
pub mod names;
pub mod status;
pub mod timeout;

pub use codec::{Encoded, IntoFrame, Reply, ReplyItem};
pub use status::{ALL_CODES, Code, Status};
