//! volley-proto: schemas at run time.
//!
//! The run-time protobuf layer `volley bench` (ghz), `volley call` (grpcurl) and `volley mock`
//! (GripMock) share, in the order data flows:
//!
//! - `load` (with `editions`): one loader of `.proto` files (compiled in-process by protox, no
//!   protoc; editions lowered), folders, descriptor sets and the embedded googleapis, in each
//!   tool's dialect (ghz's, grpcurl's, GripMock's); `schema`: a `--call` in the pool;
//! - `gotemplate`: Go's `text/template`, one engine with ghz's and GripMock's function sets;
//! - `template`: ghz's call data on that engine (`{{.RequestNumber}}`), rendered per call
//!   straight into protobuf where the message allows;
//! - `message`: JSON into encoded protobuf for a method's input;
//! - `gofmt`: Go's text forms (numbers, durations, times) the three tools print;
//! - `pb`: the generated health, reflection and `google.api` types.
//!
//! All but `pb` and `gofmt` are the `runtime` feature (on by default): volley-server and
//! volley-client take this crate with default features off, so a server or client that compiles
//! no schema at run time does not link protox or the template engine.

#[cfg(feature = "runtime")]
pub mod editions;
pub mod gofmt;
#[cfg(feature = "runtime")]
pub mod gotemplate;
#[cfg(feature = "runtime")]
pub mod load;
#[cfg(feature = "runtime")]
pub mod message;
pub mod pb;
#[cfg(feature = "runtime")]
pub mod schema;
#[cfg(feature = "runtime")]
pub mod template;

#[cfg(feature = "runtime")]
pub use schema::{Method, SchemaError};
