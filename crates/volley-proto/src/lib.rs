//! volley-proto: schemas at run time.
//!
//! `schema` loads a descriptor pool from a `.proto` (compiled in-process by protox, no protoc), a
//! protoset, or descriptors fetched by reflection, and resolves a ghz-style `--call`; `message`
//! turns JSON into encoded protobuf for a method's input; `template` renders ghz's call-data
//! templates; `gofmt` reads Go's durations; `pb` holds the generated health and reflection types.
//!
//! All but `pb` and `gofmt` are the `runtime` feature (on by default): volley-server and volley-client take
//! this crate with default features off, so a server or client that compiles no schema at run
//! time does not link protox or the template engine.

#[cfg(feature = "runtime")]
pub mod compile;
#[cfg(feature = "runtime")]
pub mod editions;
pub mod gofmt;
#[cfg(feature = "runtime")]
pub mod message;
pub mod pb;
#[cfg(feature = "runtime")]
pub mod schema;
#[cfg(feature = "runtime")]
pub mod template;

#[cfg(feature = "runtime")]
pub use schema::{Method, SchemaError};
