//! Load shedding: a bound on the calls a server has in flight at once, over every connection
//! and protocol. A call beyond it is refused with RESOURCE_EXHAUSTED as soon as its head has
//! arrived, before its body is read or a handler runs, so the calls already accepted keep their
//! latency when more arrive than the server can serve.
//!
//! ```no_run
//! # use volley_server::Server;
//! let server = Server::builder().max_in_flight(200).build();
//! ```
//!
//! It runs as the last of the server-wide interceptors: a refused call has passed the token
//! check, and the metrics count it under RESOURCE_EXHAUSTED. Health checks are never refused (a
//! busy server is not a dead one; a load balancer that takes it out of rotation for being busy
//! moves its load onto the others all at once), nor is reflection.
//!
//! RESOURCE_EXHAUSTED rather than UNAVAILABLE: retry policies commonly retry UNAVAILABLE, and a
//! refusal that every client retries at once is more load, not less. A client that wants to try
//! another backend can list RESOURCE_EXHAUSTED in its policy.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
};

use volley_wire::Status;

use crate::intercept::{Call, CallEnd, Interceptor};

/// Services never refused: health checks, and reflection (which `grpcurl` asks before any call).
const EXEMPT: [&str; 3] = [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// The server-wide count of calls in flight and its bound; cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct InFlightLimit(Arc<Counts>);

#[derive(Debug)]
struct Counts {
    max: usize,
    /// The refusal's message, made once (refusals come in floods).
    refusal: String,
    /// Calls that passed this interceptor's `on_call` (refused ones too, for the instant until
    /// their `on_end`: counting first and checking after needs no per-call state to tell them
    /// apart).
    now: AtomicUsize,
    refused: AtomicU64,
}

impl InFlightLimit {
    /// At most `max` calls in flight (at least 1).
    pub fn new(max: usize) -> InFlightLimit {
        let max = max.max(1);
        InFlightLimit(Arc::new(Counts {
            max,
            refusal: format!(
                "the server is at its limit of {max} calls in flight; try again later"
            ),
            now: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }))
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.0.max
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.0.now.load(Ordering::Relaxed)
    }

    /// Calls refused so far.
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Ordering::Relaxed)
    }

    fn admit(&self, call: &Call) -> Result<(), Status> {
        let now = self.0.now.fetch_add(1, Ordering::AcqRel) + 1;
        if now <= self.0.max || EXEMPT.contains(&call.method().service()) {
            return Ok(());
        }
        self.0.refused.fetch_add(1, Ordering::Relaxed);
        Err(Status::resource_exhausted(self.0.refusal.clone()))
    }
}

impl Interceptor for InFlightLimit {
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready(self.admit(call))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        Some(self.admit(call))
    }

    fn on_end(&self, _: &CallEnd<'_>) {
        self.0.now.fetch_sub(1, Ordering::AcqRel);
    }
}
