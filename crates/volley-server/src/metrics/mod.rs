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
//! Beside them, the server's connections (not in A66): `volley_server_connections_open`,
//! `volley_server_connections_accepted_total` and `volley_server_connections_refused_total`
//! (over [`max_connections`](crate::ServerBuilder::max_connections)).
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
    sync::{Arc, OnceLock},
};

use bytes::Bytes;
use http::HeaderValue;
use prometheus_client::{
    encoding::{EncodeLabelSet, LabelSetEncoder, text::encode},
    metrics::{counter::Counter, family::Family},
    registry::{Registry, Unit},
};
use volley_wire::{Code, Status};

use crate::{
    conn::ConnCounts,
    intercept::{Call, CallEnd, CallInfo, Interceptor, MethodInfo},
};

mod histogram;

use histogram::AtomicHistogram;

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

type Histograms = Family<MethodStatus, AtomicHistogram, fn() -> AtomicHistogram>;

/// The server's A66 metrics: an [`Interceptor`] that records every call, and the exposition.
/// Cheap to clone (the instruments are shared).
#[derive(Clone)]
pub struct Metrics {
    started: Family<MethodLabel, Counter>,
    duration: Histograms,
    sent: Histograms,
    received: Histograms,
    connections: ConnCounts,
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
            // Durations are recorded in nanoseconds, sizes in bytes.
            duration: Family::new_with_constructor(|| AtomicHistogram::new(&LATENCY_BUCKETS, 1e9)),
            sent: Family::new_with_constructor(|| AtomicHistogram::new(&SIZE_BUCKETS, 1.0)),
            received: Family::new_with_constructor(|| AtomicHistogram::new(&SIZE_BUCKETS, 1.0)),
            connections: ConnCounts::default(),
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
        self.connections.register(registry);
    }

    /// The connection counts a server built with these metrics keeps.
    pub(crate) fn connections(&self) -> &ConnCounts {
        &self.connections
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

/// A method's instruments, resolved from the families once per method (and per status), so a
/// call costs no label hashing or family lookup (docs/benchmarks-history.md, "Interceptors,
/// metrics and traces", measures both).
struct PerMethod {
    label: MethodLabel,
    started: Counter,
    statuses: [OnceLock<Histograms3>; 17],
}

/// A method's three histograms for one status.
struct Histograms3 {
    duration: AtomicHistogram,
    sent: AtomicHistogram,
    received: AtomicHistogram,
}

impl Metrics {
    fn per_method(&self, info: &CallInfo) -> PerMethod {
        let label = MethodLabel::of(info);
        PerMethod {
            started: self.started.get_or_create(&label).clone(),
            label,
            statuses: Default::default(),
        }
    }

    fn histograms(&self, labels: &MethodStatus) -> Histograms3 {
        Histograms3 {
            duration: self.duration.get_or_create(labels).clone(),
            sent: self.sent.get_or_create(labels).clone(),
            received: self.received.get_or_create(labels).clone(),
        }
    }
}

impl Interceptor for Metrics {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready(self.on_call_now(call).unwrap_or(Ok(())))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        match call.method_local(|| self.per_method(call.info())) {
            Some(m) => m.started.inc(),
            None => self
                .started
                .get_or_create(&MethodLabel::of(call.info()))
                .inc(),
        };
        Some(Ok(()))
    }

    fn on_end(&self, end: &CallEnd<'_>) {
        let code = end.code();
        let make = |method: MethodLabel| {
            self.histograms(&MethodStatus {
                method,
                status: code,
            })
        };
        let once;
        let h = match end.method_local::<PerMethod>() {
            Some(m) => m.statuses[code as usize].get_or_init(|| make(m.label.clone())),
            None => {
                once = make(MethodLabel::of(end.info()));
                &once
            }
        };
        h.duration
            .observe(u64::try_from(end.elapsed().as_nanos()).unwrap_or(u64::MAX));
        h.sent.observe(end.sent().1);
        h.received.observe(end.received().1);
    }
}
