//! `Channel`: the connections that callers share, placed by a [`Strategy`] chosen at build time.
//!
//! Every strategy multiplexes: a call never holds a connection to itself (the seed's "pool with
//! expansion" leased one connection per caller and lost HTTP/2's multiplexing; see
//! docs/client.md). Connections are dialled lazily (or up front with [`Channel::warm`]); a
//! connection that fails, or whose peer sends GOAWAY, takes no new calls and is replaced on next
//! use; dials that fail, and connections that close before the server answered a call, back off
//! (100 ms doubling to 2 s; a connection answered on resets the wait) and calls fail fast with
//! UNAVAILABLE in between, so a caller such as the gateway can answer 503 at once and recover by
//! itself, and a server that closes every connection unanswered is not redialled per call.
//! Calls the server never saw (refused streams, streams beyond a GOAWAY, a connection gone before
//! the stream opened) are retried transparently, up to three attempts, as grpc-go does.
//!
//! A target with several addresses (`ipv4:a:p,b:p`, or a name resolved to all its addresses under
//! round robin) gets one set of connections per address, each under the strategy, and a
//! [`Policy`] picks the address for each call (`balance`). The connections to
//! one address, under the strategy, are `pool`'s.
//!
//! With a [`ServiceConfig`] ([`Channel::with_service_config`]), unary calls are also retried or
//! hedged by their method's policy (`retry`).

mod balance;
mod pool;
mod strategy;

use std::{sync::Arc, time::Duration};

use bytes::{Bytes, BytesMut};
use volley_wire::Status;

pub use pool::Lease;
pub use strategy::{DEFAULT_EXPANDING_MAX, IDLE_CLOSE, Strategy, StrategyError};

use self::{balance::Balanced, pool::Inner};
use crate::{
    CallHead, Endpoint, UnaryReply,
    attempt::{Failure, attempt_numbered},
    policy::Policy,
    retry,
    service_config::{CallPolicy, ServiceConfig},
};

/// Attempts per call when the earlier ones were never processed by the server.
pub(crate) const MAX_ATTEMPTS: usize = 3;

/// Connections shared by every caller; cheap to clone.
#[derive(Clone)]
pub struct Channel {
    kind: Kind,
    /// Retry and hedging policies, timeouts.
    config: Option<Arc<ServiceConfig>>,
}

/// One address (or a name resolved at each dial), or several balanced.
#[derive(Clone)]
enum Kind {
    One(Arc<Inner>),
    Many(Arc<Balanced>),
}

impl Channel {
    /// A channel to `ep`; nothing is dialled until the first call (or [`Channel::warm`]).
    /// `expanding` spawns a task that closes idle extra connections, when built on a runtime.
    pub fn new(ep: Endpoint, strategy: Strategy) -> Channel {
        Channel::with_idle_close(ep, strategy, IDLE_CLOSE)
    }

    /// [`Channel::new`], with `expanding`'s extra connections closed after `idle` instead of
    /// [`IDLE_CLOSE`].
    pub fn with_idle_close(ep: Endpoint, strategy: Strategy, idle: Duration) -> Channel {
        Channel::build(ep, strategy, Policy::PickFirst, idle)
    }

    /// A channel that spreads calls over every address of `ep`'s target by `policy`: the
    /// addresses of an `ipv4:`/`ipv6:` list, or, under round robin, all those a name resolves to
    /// (resolved again every 30 s and when every address fails). Each address gets its own
    /// connections under `strategy`; an address whose dials fail is skipped while it backs off.
    /// With pick-first a name stays one address, resolved at each dial (as [`Channel::new`]).
    pub fn balanced(ep: Endpoint, strategy: Strategy, policy: Policy) -> Channel {
        Channel::build(ep, strategy, policy, IDLE_CLOSE)
    }

    /// A list, or a name under round robin, is several addresses; anything else is one.
    fn build(ep: Endpoint, strategy: Strategy, policy: Policy, idle: Duration) -> Channel {
        let kind = match (&ep.target, policy) {
            (crate::Target::List(_), _) | (crate::Target::Tcp(_), Policy::RoundRobin) => {
                Kind::Many(Balanced::new(ep, strategy, policy, idle))
            }
            _ => Kind::One(Inner::new(ep, strategy, idle)),
        };
        Channel { kind, config: None }
    }

    /// Retries and hedges unary calls (here and on typed clients built on this channel) by the
    /// policies of `config`, and gives typed calls without a deadline their method's timeout.
    /// Share one `Arc` between channels to share its retry throttle.
    #[must_use]
    pub fn with_service_config(mut self, config: Arc<ServiceConfig>) -> Channel {
        self.config = Some(config);
        self
    }

    /// The service config calls follow, if any.
    pub fn service_config(&self) -> Option<&Arc<ServiceConfig>> {
        self.config.as_ref()
    }

    /// Where and how connections are dialled.
    pub fn endpoint(&self) -> &Endpoint {
        match &self.kind {
            Kind::One(inner) => inner.endpoint(),
            Kind::Many(b) => b.endpoint(),
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        match &self.kind {
            Kind::One(inner) => inner.strategy(),
            Kind::Many(b) => b.strategy(),
        }
    }

    /// Dials what the strategy keeps open from the start (every pool connection; the first for
    /// `single` and `expanding`; nothing for `per-request`), failing on the first error; with
    /// several addresses, on each, failing only when none can be reached.
    pub async fn warm(&self) -> Result<(), Status> {
        match &self.kind {
            Kind::One(inner) => inner.warm().await,
            Kind::Many(b) => b.warm().await,
        }
    }

    /// Connections open now (per-request: those of calls in flight are not counted).
    pub fn open_connections(&self) -> usize {
        match &self.kind {
            Kind::One(inner) => inner.open_connections(),
            Kind::Many(b) => b.sum(Inner::open_connections),
        }
    }

    /// Connections dialled since the channel was built.
    pub fn dials(&self) -> u64 {
        match &self.kind {
            Kind::One(inner) => inner.dials(),
            Kind::Many(b) => b.sum(Inner::dials),
        }
    }

    /// A connection for one call, counted in flight until the lease is dropped.
    pub async fn lease(&self) -> Result<Lease, Status> {
        match &self.kind {
            Kind::One(inner) => Inner::lease(inner).await,
            Kind::Many(b) => b.lease().await,
        }
    }

    /// One unary (or server-streaming, replies counted) call with a pre-framed body, retried on
    /// another connection when the server never processed it, and retried or hedged by the
    /// method's policy when the channel has a service config.
    pub async fn unary(&self, head: &CallHead, body: Bytes) -> Result<UnaryReply, Status> {
        self.retrying(head, body, false).await.map(|(r, _)| r)
    }

    /// A unary call that returns the reply's first message (its payload, undecoded).
    pub async fn unary_message(&self, head: &CallHead, body: Bytes) -> Result<Bytes, Status> {
        let (_, frames) = self.retrying(head, body, true).await?;
        volley_wire::codec::first_message(&frames)
            .ok_or_else(|| Status::internal("the reply held no whole message"))
    }

    async fn retrying(
        &self,
        head: &CallHead,
        body: Bytes,
        keep: bool,
    ) -> Result<(UnaryReply, Bytes), Status> {
        let policy = self
            .config
            .as_deref()
            .and_then(|c| Some((c, c.method(head.path())?.policy.as_ref()?)));
        let Some((config, policy)) = policy else {
            return self
                .transparent(head, body, keep, 0)
                .await
                .map_err(|f| f.status);
        };
        let attempt = |n: u32| self.transparent(head, body.clone(), keep, n - 1);
        // The policies' futures are boxed: held inline they would make every call's future
        // larger, policy or not, and the engine moves it by value.
        match policy {
            CallPolicy::Retry(p) => {
                Box::pin(retry::retry(p, config.throttle(), None, attempt)).await
            }
            CallPolicy::Hedge(p) => Box::pin(retry::hedge(p, config.throttle(), attempt)).await,
        }
    }

    /// One attempt, sent again on another connection while the server never saw it.
    async fn transparent(
        &self,
        head: &CallHead,
        body: Bytes,
        keep: bool,
        previous: u32,
    ) -> Result<(UnaryReply, Bytes), Failure> {
        let mut tries = 0;
        loop {
            tries += 1;
            let lease = self.lease().await.map_err(|status| Failure {
                status,
                unprocessed: true,
                retire: false,
                committed: false,
            })?;
            let mut kept = BytesMut::new();
            let sender = lease.connection().sender();
            let keep = keep.then_some(&mut kept);
            match attempt_numbered(sender, head, body.clone(), keep, previous).await {
                Ok(r) => {
                    lease.connection().mark_replied();
                    return Ok((r, kept.freeze()));
                }
                Err(f) => {
                    if f.retire {
                        lease.connection().retire();
                    }
                    if !f.unprocessed || tries >= MAX_ATTEMPTS {
                        return Err(f);
                    }
                }
            }
        }
    }
}
