//! The server's connection counts (accepted, open, refused over the cap): what
//! [`Server::connections`](crate::Server::connections) reports and, with the `metrics` feature,
//! what `/metrics` exposes (the same atomics, as Prometheus' counter and gauge types).

#[cfg(feature = "metrics")]
use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

#[cfg(not(feature = "metrics"))]
use plain::{Counter, Gauge};

/// Connection counts, shared by the accept loop, every connection's task and the metrics page.
/// Each is one atomic behind an `Arc`: a connection costs two increments and a decrement.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnCounts {
    pub(crate) accepted: Counter,
    pub(crate) open: Gauge,
    pub(crate) refused: Counter,
}

impl ConnCounts {
    /// Registers the three, as `volley_server_connections_*` (they are not in gRPC's A66).
    #[cfg(feature = "metrics")]
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "volley_server_connections_accepted",
            "Connections accepted since the server was built",
            self.accepted.clone(),
        );
        registry.register(
            "volley_server_connections_open",
            "Connections open now",
            self.open.clone(),
        );
        registry.register(
            "volley_server_connections_refused",
            "Connections refused over the server's connection cap",
            self.refused.clone(),
        );
    }

    /// Counts a new connection as accepted and open; it is counted closed when the guard drops.
    pub(crate) fn opened(&self) -> OpenGuard<'_> {
        self.accepted.inc();
        self.open.inc();
        OpenGuard(&self.open)
    }

    /// Connections open now.
    pub(crate) fn open_now(&self) -> usize {
        self.open.get().max(0) as usize
    }
}

/// Counts a connection as open for as long as it lives.
pub(crate) struct OpenGuard<'a>(&'a Gauge);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Prometheus' counter and gauge as a server without the `metrics` feature keeps them: the same
/// shared atomics and the same calls, without prometheus-client.
#[cfg(not(feature = "metrics"))]
mod plain {
    use std::sync::{
        Arc,
        atomic::{AtomicI64, AtomicU64, Ordering::Relaxed},
    };

    #[derive(Clone, Debug, Default)]
    pub(crate) struct Counter(Arc<AtomicU64>);

    impl Counter {
        pub(crate) fn inc(&self) {
            self.0.fetch_add(1, Relaxed);
        }

        pub(crate) fn get(&self) -> u64 {
            self.0.load(Relaxed)
        }
    }

    #[derive(Clone, Debug, Default)]
    pub(crate) struct Gauge(Arc<AtomicI64>);

    impl Gauge {
        pub(crate) fn inc(&self) {
            self.0.fetch_add(1, Relaxed);
        }

        pub(crate) fn dec(&self) {
            self.0.fetch_sub(1, Relaxed);
        }

        pub(crate) fn get(&self) -> i64 {
            self.0.load(Relaxed)
        }
    }
}
