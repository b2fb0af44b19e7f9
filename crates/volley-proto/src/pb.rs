//! Generated types of the framework's own protos (health, reflection) and their descriptor set.
#![allow(missing_docs, clippy::all)]

/// The encoded `FileDescriptorSet` of the health and reflection protos.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/framework_descriptor.bin"));

/// `grpc.health.v1`.
pub mod health {
    include!(concat!(env!("OUT_DIR"), "/grpc.health.v1.rs"));
}

/// `grpc.reflection.v1`; v1alpha has the same messages, so one set of types serves both.
pub mod reflection {
    include!(concat!(env!("OUT_DIR"), "/grpc.reflection.v1.rs"));
}

/// `google.api` (the HTTP mapping of methods, for REST routes).
pub mod google_api {
    include!(concat!(env!("OUT_DIR"), "/google.api.rs"));
}
