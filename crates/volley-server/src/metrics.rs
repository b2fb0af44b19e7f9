//! gRPC's OpenTelemetry server metrics (gRFC A66) as an interceptor, exposed in the OpenMetrics
//! text format that Prometheus scrapes.
//!
//! | A66 instrument | exposed as |
//! |---|---|
//! | `grpc.server.call.started` | `grpc_server_call_started_total{grpc_method}` |
//! | `grpc.server.call.duration` | `grpc_server_call_duration_seconds{grpc_method,grpc_status}` |
//! | `grpc.server.call.sent_total_compressed_message_size` | `grpc_server_call_sent_total_compressed_message_size_bytes{grpc_method,grpc_status}` |
//! | `grpc.server.call.rcvd_total_compressed_message_size` | `grpc_server_call_rcvd_total_compressed_message_size_bytes{grpc_method,grpc_status}` |
//!
//! The histograms use A66's bucket boundaries. Methods the server does not have are recorded as
//! `other` (A66's rule against unbounded label values). One builder call adds the interceptor
//! and `GET /metrics` on the calls' port:
//!
//! ```no_run
//! # use volley_server::{Server, metrics::Metrics};
//! let server = Server::builder().metrics(Metrics::new()).build();
//! ```
//!
//! [`Metrics::register`] puts the same instruments in a `prometheus_client` registry of your own.

use std::{
    fmt::Write as _,
    hash::{Hash, Hasher},
    sync::Arc,
};

use bytes::Bytes;
use http::HeaderValue;
use prometheus_client::{
    encoding::{EncodeLabelSet, LabelSetEncoder, text::encode},
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::{Registry, Unit},
};
use volley_wire::{Code, Status};

use crate::intercept::{Call, CallEnd, CallInfo, Interceptor, MethodInfo};

pub use volley_wire::a66::{LATENCY_BUCKETS, SIZE_BUCKETS};

/// The OpenMetrics text content type `GET /metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `grpc_method` label: a registered method's full name, or `other`. Compared by path; the
/// method's name is shared with the server's method table, not copied per call.
#[derive(Clone, Debug)]
enum MethodLabel {
    Known(Arc<MethodInfo>),
    Other,
}

impl MethodLabel {
    fn of(info: &CallInfo) -> MethodLabel {
        match info.method_shared() {
            Some(m) if m.is_registered() => MethodLabel::Known(m.clone()),
            _ => MethodLabel::Other,
        }
    }

    fn as_str(&self) -> &str {
        match self {
            MethodLabel::Known(m) => m.full_name(),
            MethodLabel::Other => "other",
        }
    }
}

impl PartialEq for MethodLabel {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for MethodLabel {}

impl Hash for MethodLabel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl EncodeLabelSet for MethodLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        [("grpc_method", self.as_str())].encode(encoder)
    }
}

/// The `grpc_method` and `grpc_status` labels.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct MethodStatus {
    method: MethodLabel,
    status: Code,
}

impl EncodeLabelSet for MethodStatus {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        [
            ("grpc_method", self.method.as_str()),
            ("grpc_status", self.status.name()),
        ]
        .encode(encoder)
    }
}

type Histograms = Family<MethodStatus, Histogram, fn() -> Histogram>;

/// The server's A66 metrics: an [`Interceptor`] that records every call, and the exposition.
/// Cheap to clone (the instruments are shared).
#[derive(Clone)]
pub struct Metrics {
    started: Family<MethodLabel, Counter>,
    duration: Histograms,
    sent: Histograms,
    received: Histograms,
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// New instruments, registered in a registry of their own (what [`Metrics::render`] writes).
    pub fn new() -> Metrics {
        let mut m = Metrics {
            started: Family::default(),
            duration: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
            sent: Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS)),
            received: Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS)),
            registry: Arc::new(Registry::default()),
        };
        let mut registry = Registry::default();
        m.register(&mut registry);
        m.registry = Arc::new(registry);
        m
    }

    /// Registers the instruments in `registry` too (they stay shared with this value).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "grpc_server_call_started",
            "The total number of RPCs started, including those that have not completed",
            self.started.clone(),
        );
        registry.register_with_unit(
            "grpc_server_call_duration",
            "End-to-end time taken to complete a call from server transport's perspective",
            Unit::Seconds,
            self.duration.clone(),
        );
        registry.register_with_unit(
            "grpc_server_call_sent_total_compressed_message_size",
            "Compressed message bytes sent per server call",
            Unit::Bytes,
            self.sent.clone(),
        );
        registry.register_with_unit(
            "grpc_server_call_rcvd_total_compressed_message_size",
            "Compressed message bytes received per server call",
            Unit::Bytes,
            self.received.clone(),
        );
    }

    /// The OpenMetrics text exposition of this value's own registry.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
            let _ = writeln!(out, "# EOF");
        }
        out
    }

    /// `GET /metrics`'s answer: the content type and the exposition.
    pub fn page(&self) -> (HeaderValue, Bytes) {
        (
            HeaderValue::from_static(CONTENT_TYPE),
            Bytes::from(self.render()),
        )
    }
}

impl Interceptor for Metrics {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        self.started
            .get_or_create(&MethodLabel::of(call.info()))
            .inc();
        std::future::ready(Ok(()))
    }

    fn on_end(&self, end: &CallEnd<'_>) {
        let labels = MethodStatus {
            method: MethodLabel::of(end.info()),
            status: end.code(),
        };
        self.duration
            .get_or_create(&labels)
            .observe(end.elapsed().as_secs_f64());
        self.sent
            .get_or_create(&labels)
            .observe(end.sent().1 as f64);
        self.received
            .get_or_create(&labels)
            .observe(end.received().1 as f64);
    }
}
