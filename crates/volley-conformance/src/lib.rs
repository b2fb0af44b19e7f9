//! The Connect conformance suite's `ConformanceService`, served by volley-server, and the start-up
//! exchange (`ServerCompatRequest` in, `ServerCompatResponse` out) its runner performs with a
//! server under test. The suite itself (`connectconformance`) is run by this crate's tests.

pub mod compat;
pub mod service;

/// Types generated from the vendored conformance protos.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/connectrpc.conformance.v1.rs"));

    /// The encoded descriptor set of the conformance protos (and their imports), for JSON.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/conformance_descriptor.bin"));
}
