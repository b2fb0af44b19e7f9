//! Test support shared by volley's crates: [`RawClient`] speaks gRPC on the h2 crate with full
//! control of headers and bytes (for protocol tests), [`VolleyProcess`] runs the real binary on a
//! free port, [`tool`] finds the third-party peers (grpcurl, ghz) the test script installed, and [`fuzz`]
//! holds the fuzz targets' bodies.

pub mod fuzz;
mod process;
mod raw;
mod tools;

pub use process::{VolleyProcess, fails_in_one_line, ok_stdout, rss_kib};
pub use raw::{RawClient, RawReply, frame, read_reply};
pub use tools::tool;
