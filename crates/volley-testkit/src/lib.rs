//! Test support shared by volley's crates: [`RawClient`] speaks gRPC on the h2 crate with full
//! control of headers and bytes (for protocol tests), [`Volley`] and [`VolleyProcess`] run the
//! real binary on a free port, [`tool`] finds the third-party peers (grpcurl, ghz) the test script
//! installed, [`report_shape`] reads ghz's report layouts (to compare volley's with ghz's, live
//! or from the golden files), [`peers`] holds what several tests ask of the same peers, and
//! [`fuzz`] holds the fuzz targets' bodies.

mod cli;
mod client_path;
pub mod fuzz;
pub mod hostile;
pub mod otlp;
pub mod pages;
pub mod peers;
mod process;
mod prometheus;
mod raw;
pub mod report_shape;
mod tools;

pub use cli::{Volley, workspace, workspace_file};
pub use client_path::{client_path, h2_forced};
pub use process::{
    VolleyProcess, fails_in_one_line, json_report, latency_ms, ok_stdout, output_with_stdin,
    rss_kib,
};
pub use prometheus::{Exposition, prometheus_samples, sample};
pub use raw::{RawClient, RawReply, frame, read_reply};
pub use tools::tool;
