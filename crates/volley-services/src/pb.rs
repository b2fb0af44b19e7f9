//! Generated message types, servers and clients of the seed protos (volley-build), and their
//! encoded descriptor set.
#![allow(missing_docs, clippy::all)]

/// The encoded `FileDescriptorSet` of every built-in service (with its imports): one compile
/// call made them all, so each package's generated constant holds the whole set.
pub const FILE_DESCRIPTOR_SET: &[u8] = api::FILE_DESCRIPTOR_SET;

/// Package `api` (seed 000).
pub mod api {
    volley_server::include_proto!("api");
}

/// Package `helloworld` (seed 003).
pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

/// Package `grpc` (seed 001).
pub mod grpc {
    include!(concat!(env!("OUT_DIR"), "/grpc.rs"));

    /// Package `grpc.testing` (the interop suite's protos).
    pub mod testing {
        include!(concat!(env!("OUT_DIR"), "/grpc.testing.rs"));
    }
}

/// Package `orders` (seed 004).
pub mod orders {
    include!(concat!(env!("OUT_DIR"), "/orders.rs"));
}
