//! volley-lab: the experiment harness behind `volley lab`, apart from the product (`serve`,
//! `bench`, `call`, `mock`, `report`). The five write-ups volley grew out of (the "seeds",
//! `docs/seeds.md`) ran experiments with ghz, wrk and their own clients; this crate reruns them.
//!
//! # Layout
//!
//! - [`seeds`]: `volley lab`: every seed experiment rerun against volley's own server (or
//!   `--target`) through child `volley` processes, with report.md, report.html and results.json
//!   laying our figures beside the published ones.
//! - [`orders`]: `volley lab orders`, the order study of seed 004 (unary vs bidi streams, many
//!   clients, plaintext vs TLS, one host vs two network namespaces) on the bench engine.
//! - [`gateway`]: `volley lab gateway`, seed 002's HTTP gateway in front of a gRPC backend with
//!   a chosen connection strategy, on the product (`volley-gateway`).
//! - [`link`]: `volley lab link`, a TCP relay with delay, jitter and a rate cap (for kernels
//!   without netem).
//! - [`netns`], [`child`]: two network namespaces joined by a veth pair, and child `volley`
//!   processes found by their "listening on" log line.
//!
//! Signals are the binary's: commands that run until interrupted take a [`Signals`] function.

pub mod child;
pub mod gateway;
pub mod link;
pub mod netns;
pub mod orders;
pub mod seeds;

use std::{future::Future, pin::Pin};

/// Waits for the next SIGINT or SIGTERM and names it (`"SIGINT"`): how a long-running harness
/// command learns to stop. The binary passes its one signal handler (`volley::signal::next`).
pub type Signals = fn() -> Pin<Box<dyn Future<Output = &'static str> + Send>>;
