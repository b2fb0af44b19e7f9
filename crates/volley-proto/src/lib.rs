//! volley-proto: schemas at run time.
//!
//! `schema` loads a descriptor pool from a `.proto` (compiled in-process by protox, no protoc), a
//! protoset, or descriptors fetched by reflection, and resolves a ghz-style `--call`; `message`
//! turns JSON into encoded protobuf for a method's input; `template` renders ghz's call-data
//! templates; `pb` holds the generated health and reflection types.

pub mod compile;
pub mod editions;
pub mod message;
pub mod pb;
pub mod schema;
pub mod template;

pub use schema::{Method, SchemaError};
