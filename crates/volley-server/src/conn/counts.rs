//! The server's connection counts (accepted, open, refused over the cap): what
//! [`Server::connections`](crate::Server::connections) reports and, with
//! [`metrics`](crate::metrics), what `/metrics` exposes.

use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

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
