//! gRPC's OpenTelemetry client metrics (gRFC A66) as a [`ClientInterceptor`], exposed in the
//! OpenMetrics text format: `grpc_client_attempt_started_total{grpc_method,grpc_target}`,
//! `grpc_client_attempt_duration_seconds`, `grpc_client_attempt_sent_total_compressed_message_size_bytes`,
//! `grpc_client_attempt_rcvd_total_compressed_message_size_bytes` and
//! `grpc_client_call_duration_seconds` (each `{grpc_method,grpc_target,grpc_status}`), with
//! A66's bucket boundaries.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use volley_client::{grpc::Grpc, metrics::ClientMetrics};
//! let metrics = ClientMetrics::new();
//! let grpc = Grpc::connect("127.0.0.1:9090").await?.intercept(metrics.clone());
//! // ... calls ...
//! print!("{}", metrics.render());
//! # Ok(()) }
//! ```

use std::sync::Arc;

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::{Registry, Unit},
};
use volley_wire::Status;

use crate::grpc::{Attempt, AttemptEnd, ClientInterceptor};

use volley_wire::a66::{LATENCY_BUCKETS, SIZE_BUCKETS};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodTarget {
    grpc_method: String,
    grpc_target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Ended {
    grpc_method: String,
    grpc_target: String,
    grpc_status: &'static str,
}

type Histograms = Family<Ended, Histogram, fn() -> Histogram>;

/// The client's A66 metrics; cheap to clone (the instruments are shared).
#[derive(Clone)]
pub struct ClientMetrics {
    started: Family<MethodTarget, Counter>,
    attempt_duration: Histograms,
    sent: Histograms,
    received: Histograms,
    call_duration: Histograms,
    registry: Arc<Registry>,
}

impl Default for ClientMetrics {
    fn default() -> Self {
        ClientMetrics::new()
    }
}

impl ClientMetrics {
    /// New instruments in a registry of their own.
    pub fn new() -> ClientMetrics {
        let mut m = ClientMetrics {
            started: Family::default(),
            attempt_duration: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
            sent: Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS)),
            received: Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS)),
            call_duration: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
            registry: Arc::new(Registry::default()),
        };
        let mut registry = Registry::default();
        m.register(&mut registry);
        m.registry = Arc::new(registry);
        m
    }

    /// Registers the instruments in `registry` too.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "grpc_client_attempt_started",
            "Number of client call attempts started",
            self.started.clone(),
        );
        registry.register_with_unit(
            "grpc_client_attempt_duration",
            "End-to-end time taken to complete a client call attempt",
            Unit::Seconds,
            self.attempt_duration.clone(),
        );
        registry.register_with_unit(
            "grpc_client_attempt_sent_total_compressed_message_size",
            "Compressed message bytes sent per client call attempt",
            Unit::Bytes,
            self.sent.clone(),
        );
        registry.register_with_unit(
            "grpc_client_attempt_rcvd_total_compressed_message_size",
            "Compressed message bytes received per call attempt",
            Unit::Bytes,
            self.received.clone(),
        );
        registry.register_with_unit(
            "grpc_client_call_duration",
            "Time taken by gRPC to complete an RPC from application's perspective",
            Unit::Seconds,
            self.call_duration.clone(),
        );
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out = "# EOF\n".to_owned();
        }
        out
    }
}

impl ClientInterceptor for ClientMetrics {
    fn on_attempt(&self, attempt: &mut Attempt<'_>) -> Result<(), Status> {
        self.started
            .get_or_create(&MethodTarget {
                grpc_method: attempt.full_method().to_owned(),
                grpc_target: attempt.target().to_owned(),
            })
            .inc();
        Ok(())
    }

    fn on_end(&self, end: &AttemptEnd<'_>) {
        let labels = Ended {
            grpc_method: end.full_method().to_owned(),
            grpc_target: end.target().to_owned(),
            grpc_status: end.code().name(),
        };
        self.attempt_duration
            .get_or_create(&labels)
            .observe(end.elapsed().as_secs_f64());
        self.sent
            .get_or_create(&labels)
            .observe(end.sent().1 as f64);
        self.received
            .get_or_create(&labels)
            .observe(end.received().1 as f64);
        if !end.will_retry() {
            self.call_duration
                .get_or_create(&labels)
                .observe(end.call_elapsed().as_secs_f64());
        }
    }
}
