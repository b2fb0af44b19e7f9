//! volley-build: typed services and clients from `.proto` files, generated in a `build.rs`.
//!
//! ```no_run
//! // in build.rs's main:
//! volley_build::compile_protos(&["proto/helloworld.proto"], &["proto"]).unwrap();
//! ```
//!
//! The files are compiled with protox (no `protoc` needed), prost generates the message types,
//! and for each service `package.Greeter` this crate adds, beside them in the package's module:
//!
//! - `greeter_server::{Greeter, GreeterServer}`: a trait with one method per rpc (write plain
//!   `async fn`s in the impl block; server-streaming and bidi methods name their reply stream in
//!   an associated type `<Method>Stream`, as tonic's do), and a server that turns an implementation
//!   into a `volley_server::Service`, the service's descriptors attached, so that reflection,
//!   Connect/JSON and REST (`google.api.http`) work with no further line;
//! - `greeter_client::GreeterClient`: typed calls for all four kinds over a
//!   `volley_client::Channel` (`GreeterClient::connect("127.0.0.1:50051")` for the common case).
//!
//! The names are tonic-build's, so code written against tonic finds its way; see
//! docs/services.md for the path from a .proto to a running service and the differences.
//!
//! # Layout
//!
//! - `builder`: [`Builder`] (what to generate, where) and [`compile_protos`];
//! - `names`: the Rust names of services and methods, and the check that none collide;
//! - `server`, `client`: the text of the two generated modules.

mod builder;
mod client;
mod names;
mod server;

pub use builder::{Builder, Error, compile_protos, configure};
