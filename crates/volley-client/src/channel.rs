//! `Channel`: the connections that callers share, placed by a [`Strategy`] chosen at build time.
//!
//! Every strategy multiplexes: a call never holds a connection to itself (the seed's "pool with
//! expansion" leased one connection per caller and lost HTTP/2's multiplexing; see
//! docs/client.md). Connections are dialled lazily (or up front with [`Channel::warm`]); a
//! connection that fails, or whose peer sends GOAWAY, takes no new calls and is replaced on next
//! use; dials that fail back off (100 ms doubling to 2 s) and calls fail fast with UNAVAILABLE in
//! between, so a caller such as the gateway can answer 503 at once and recover by itself.
//! Calls the server never saw (refused streams, streams beyond a GOAWAY, a connection gone before
//! the stream opened) are retried transparently, up to three attempts, as grpc-go does.
//!
//! A target with several addresses (`ipv4:a:p,b:p`, or a name resolved to all its addresses under
//! round robin) gets one set of connections per address, each under the strategy, and a
//! [`Policy`] picks the address for each call (`balance`).
//!
//! With a [`ServiceConfig`] ([`Channel::with_service_config`]), unary calls are also retried or
//! hedged by their method's policy (`retry`).

use std::{
    str::FromStr,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::{Bytes, BytesMut};
use volley_wire::Status;

use crate::{
    CallHead, Connection, Endpoint, UnaryReply,
    balance::{Balanced, Policy},
    call::{Failure, attempt_numbered},
    retry,
    service_config::{CallPolicy, ServiceConfig},
};

/// How a channel spreads calls over connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Dial, call, close: every call pays for a connection (to measure that cost).
    PerRequest,
    /// One HTTP/2 connection, multiplexed.
    Single,
    /// `n` connections, each multiplexed; a call goes to the one with the fewest calls in flight.
    Pool(usize),
    /// Starts with one connection and opens another (up to `max`) when the least-loaded one has
    /// as many calls in flight as the peer's MAX_CONCURRENT_STREAMS; extra connections idle for
    /// [`IDLE_CLOSE`] are closed.
    Expanding {
        /// The most connections it opens.
        max: usize,
    },
}

/// The default maximum for `expanding`.
pub const DEFAULT_EXPANDING_MAX: usize = 8;
/// Extra `expanding` connections with no call for this long are closed.
pub const IDLE_CLOSE: Duration = Duration::from_secs(30);
/// Attempts per call when the earlier ones were never processed by the server.
pub(crate) const MAX_ATTEMPTS: usize = 3;
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Why a `--strategy` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    /// `pool:N` or `expanding:MAX` with something other than a count of at least 1.
    #[error("strategy {strategy:?}: {count:?} is not a connection count >= 1")]
    BadCount {
        /// The whole value.
        strategy: String,
        /// The count part.
        count: String,
    },
    /// No such strategy.
    #[error("unknown strategy {0:?}: use per-request, single, pool[:N] or expanding[:MAX]")]
    Unknown(String),
}

impl Strategy {
    /// Parses `per-request`, `single`, `pool[:N]` (or `pool(N)`), `expanding[:MAX]`; a bare
    /// `pool` has `default_pool` connections.
    pub fn parse(s: &str, default_pool: usize) -> Result<Strategy, StrategyError> {
        let s = s.trim();
        let (name, arg) = match s.split_once([':', '(']) {
            Some((n, a)) => (n, Some(a.trim_end_matches(')'))),
            None => (s, None),
        };
        let count = |default: usize| -> Result<usize, StrategyError> {
            match arg {
                None => Ok(default.max(1)),
                Some(a) => a.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    StrategyError::BadCount {
                        strategy: s.to_owned(),
                        count: a.to_owned(),
                    }
                }),
            }
        };
        match name {
            "per-request" if arg.is_none() => Ok(Strategy::PerRequest),
            "single" if arg.is_none() => Ok(Strategy::Single),
            "pool" => Ok(Strategy::Pool(count(default_pool)?)),
            "expanding" => Ok(Strategy::Expanding {
                max: count(DEFAULT_EXPANDING_MAX)?,
            }),
            _ => Err(StrategyError::Unknown(s.to_owned())),
        }
    }

    /// The most connections this strategy keeps open at once (per-request: unbounded, so 0).
    pub fn max_connections(self) -> usize {
        match self {
            Strategy::PerRequest => 0,
            Strategy::Single => 1,
            Strategy::Pool(n) => n,
            Strategy::Expanding { max } => max,
        }
    }
}

impl FromStr for Strategy {
    type Err = StrategyError;
    fn from_str(s: &str) -> Result<Self, StrategyError> {
        Strategy::parse(s, 1)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::PerRequest => f.write_str("per-request"),
            Strategy::Single => f.write_str("single"),
            Strategy::Pool(n) => write!(f, "pool:{n}"),
            Strategy::Expanding { max } => write!(f, "expanding:{max}"),
        }
    }
}

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

/// The connections to one address, under the strategy.
pub(crate) struct Inner {
    ep: Endpoint,
    strategy: Strategy,
    slots: Box<[Slot]>,
    /// `expanding`: slots in use (the first `active`).
    active: AtomicUsize,
    /// Rotates where the least-loaded search starts, so ties spread.
    turn: AtomicUsize,
    /// Connections opened so far.
    dials: AtomicU64,
    /// The peer's MAX_CONCURRENT_STREAMS as last seen (100, a common server default, until a
    /// connection is up): `expanding` compares against it while a slot is still dialling.
    peer_limit: AtomicUsize,
    epoch: Instant,
}

#[derive(Default)]
struct Slot {
    conn: Mutex<Option<Connection>>,
    in_flight: AtomicUsize,
    /// Serialises dials of this slot.
    dialing: tokio::sync::Mutex<()>,
    backoff: Mutex<Backoff>,
    /// `backoff.until` as milliseconds since the channel's epoch, 0 when not backing off: read by
    /// every pick, which scans all slots (a lock and a clock read per slot cost ~15 us per call
    /// with 500 connections, measured; see BENCHMARKS.md, "Pooled channels").
    backoff_until_ms: AtomicU64,
    /// Milliseconds since the channel's epoch when the last call on this slot ended; kept only
    /// under `expanding`, whose idle extra connections close (a clock read per call otherwise
    /// spent for nothing).
    last_used_ms: AtomicU64,
}

/// Milliseconds since a channel's epoch, read at most once, and only if asked.
struct LazyNow {
    epoch: Instant,
    ms: Option<u64>,
}

impl LazyNow {
    fn new(epoch: Instant) -> LazyNow {
        LazyNow { epoch, ms: None }
    }

    fn ms(&mut self) -> u64 {
        *self
            .ms
            .get_or_insert_with(|| self.epoch.elapsed().as_millis() as u64)
    }
}

#[derive(Default)]
struct Backoff {
    /// No dial before this instant; calls until then fail with `error`.
    until: Option<Instant>,
    delay: Duration,
    error: String,
}

/// One call's hold on a connection: counted as in flight until dropped.
pub struct Lease {
    conn: Connection,
    slot: Option<(Arc<Inner>, usize)>,
}

impl Lease {
    /// The connection to open the call's stream on.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some((inner, i)) = &self.slot {
            let slot = &inner.slots[*i];
            slot.in_flight.fetch_sub(1, Ordering::AcqRel);
            if matches!(inner.strategy, Strategy::Expanding { .. }) {
                slot.last_used_ms
                    .store(inner.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
        }
    }
}

pub(crate) fn unavailable(e: impl std::fmt::Display) -> Status {
    Status::unavailable(format!("connection error: {e}"))
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
            Kind::One(inner) => &inner.ep,
            Kind::Many(b) => b.endpoint(),
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        match &self.kind {
            Kind::One(inner) => inner.strategy,
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
            Kind::One(inner) => inner.dials.load(Ordering::Relaxed),
            Kind::Many(b) => b.sum(|i| i.dials.load(Ordering::Relaxed)),
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
                Ok(r) => return Ok((r, kept.freeze())),
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

/// Undoes an in-flight count if a lease is abandoned before it exists (dial failed or the
/// caller's future was dropped mid-dial).
struct SlotCount<'a>(&'a Inner, usize);

impl Drop for SlotCount<'_> {
    fn drop(&mut self) {
        self.0.slots[self.1]
            .in_flight
            .fetch_sub(1, Ordering::AcqRel);
    }
}

impl Inner {
    /// The connections to `ep` under `strategy`; `expanding` spawns a task that closes idle
    /// extra connections, when built on a runtime.
    pub(crate) fn new(ep: Endpoint, strategy: Strategy, idle: Duration) -> Arc<Inner> {
        let slots = (0..strategy.max_connections())
            .map(|_| Slot::default())
            .collect();
        let inner = Arc::new(Inner {
            ep,
            strategy,
            slots,
            active: AtomicUsize::new(1),
            turn: AtomicUsize::new(0),
            dials: AtomicU64::new(0),
            peer_limit: AtomicUsize::new(100),
            epoch: Instant::now(),
        });
        if let (Strategy::Expanding { max }, Ok(rt)) =
            (strategy, tokio::runtime::Handle::try_current())
        {
            if max > 1 {
                rt.spawn(close_idle(Arc::downgrade(&inner), idle));
            }
        }
        inner
    }

    /// Dials what the strategy keeps open from the start, failing on the first error.
    pub(crate) async fn warm(&self) -> Result<(), Status> {
        let n = match self.strategy {
            Strategy::Pool(n) => n,
            Strategy::PerRequest => 0,
            _ => 1,
        };
        for i in 0..n {
            self.ready(i).await?;
        }
        Ok(())
    }

    /// Connections open now.
    pub(crate) fn open_connections(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                s.conn
                    .lock()
                    .unwrap()
                    .as_ref()
                    .is_some_and(Connection::is_usable)
            })
            .count()
    }

    /// True while every connection slot is backing off after failed dials (so another address
    /// should take the call).
    pub(crate) fn backing_off(&self) -> bool {
        let mut now = LazyNow::new(self.epoch);
        !self.slots.is_empty() && self.slots.iter().all(|s| s.backing_off(&mut now))
    }

    /// A connection for one call, counted in flight until the lease is dropped.
    pub(crate) async fn lease(inner: &Arc<Inner>) -> Result<Lease, Status> {
        if inner.strategy == Strategy::PerRequest {
            let conn = Connection::connect(&inner.ep).await.map_err(unavailable)?;
            inner.dials.fetch_add(1, Ordering::Relaxed);
            return Ok(Lease { conn, slot: None });
        }
        let i = inner.pick();
        inner.slots[i].in_flight.fetch_add(1, Ordering::AcqRel);
        let conn = match inner.slots[i].usable() {
            Some(c) => c,
            None => {
                // Undoes the count if the dial fails or the caller gives up mid-dial.
                let count = SlotCount(inner, i);
                let c = inner.ready(i).await?;
                std::mem::forget(count);
                c
            }
        };
        // From here the lease's drop undoes the count.
        Ok(Lease {
            conn,
            slot: Some((inner.clone(), i)),
        })
    }

    /// The slot for the next call: the least loaded of those in use, skipping slots in dial
    /// backoff when another is available; `expanding` grows when even that one is full.
    fn pick(&self) -> usize {
        let n = match self.strategy {
            Strategy::Expanding { .. } => self.active.load(Ordering::Acquire),
            _ => self.slots.len(),
        };
        let start = if n > 1 {
            self.turn.fetch_add(1, Ordering::Relaxed) % n
        } else {
            0
        };
        let mut now = LazyNow::new(self.epoch);
        let mut best = start;
        let mut best_key = (true, usize::MAX);
        for k in 0..n {
            let i = (start + k) % n;
            let slot = &self.slots[i];
            let key = (
                slot.backing_off(&mut now),
                slot.in_flight.load(Ordering::Acquire),
            );
            if key < best_key {
                best = i;
                best_key = key;
                if key == (false, 0) {
                    break; // an idle connection: none can be better
                }
            }
        }
        if let Strategy::Expanding { max } = self.strategy {
            let limit = self.slots[best].conn.lock().unwrap().as_ref().map_or_else(
                || self.peer_limit.load(Ordering::Relaxed),
                Connection::max_streams,
            );
            if n < max
                && best_key.1 >= limit
                && self
                    .active
                    .compare_exchange(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                return n;
            }
        }
        best
    }

    /// The slot's connection, dialling it if it is missing or unusable (unless backing off).
    async fn ready(&self, i: usize) -> Result<Connection, Status> {
        let slot = &self.slots[i];
        if let Some(c) = slot.usable() {
            return Ok(c);
        }
        if let Some(e) = slot.backoff_error() {
            return Err(e);
        }
        let _dialing = slot.dialing.lock().await;
        if let Some(c) = slot.usable() {
            return Ok(c);
        }
        if let Some(e) = slot.backoff_error() {
            return Err(e);
        }
        match Connection::connect(&self.ep).await {
            Ok(c) => {
                self.dials.fetch_add(1, Ordering::Relaxed);
                self.peer_limit.store(c.max_streams(), Ordering::Relaxed);
                *slot.conn.lock().unwrap() = Some(c.clone());
                *slot.backoff.lock().unwrap() = Backoff::default();
                slot.backoff_until_ms.store(0, Ordering::Relaxed);
                Ok(c)
            }
            Err(e) => {
                let mut b = slot.backoff.lock().unwrap();
                b.delay = (b.delay * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
                b.until = Some(Instant::now() + b.delay);
                b.error = e.to_string();
                let until = self.epoch.elapsed() + b.delay;
                slot.backoff_until_ms
                    .store((until.as_millis() as u64).max(1), Ordering::Relaxed);
                *slot.conn.lock().unwrap() = None;
                Err(unavailable(e))
            }
        }
    }
}

impl Slot {
    fn usable(&self) -> Option<Connection> {
        self.conn
            .lock()
            .unwrap()
            .as_ref()
            .filter(|c| c.is_usable())
            .cloned()
    }

    /// True while a failed dial's backoff lasts; the clock is read only for a slot that has
    /// one (rare), not once per call.
    fn backing_off(&self, now: &mut LazyNow) -> bool {
        let until = self.backoff_until_ms.load(Ordering::Relaxed);
        until != 0 && now.ms() < until
    }

    fn backoff_error(&self) -> Option<Status> {
        let b = self.backoff.lock().unwrap();
        b.until
            .filter(|u| Instant::now() < *u)
            .map(|_| unavailable(&b.error))
    }
}

/// `expanding`: closes the highest extra connection once it has been idle for `idle`.
async fn close_idle(inner: Weak<Inner>, idle: Duration) {
    let tick = (idle / 4).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let n = inner.active.load(Ordering::Acquire);
        if n <= 1 {
            continue;
        }
        let slot = &inner.slots[n - 1];
        let now_ms = inner.epoch.elapsed().as_millis() as u64;
        let idle_ms = now_ms.saturating_sub(slot.last_used_ms.load(Ordering::Relaxed));
        if slot.in_flight.load(Ordering::Acquire) == 0
            && idle_ms >= idle.as_millis() as u64
            && inner
                .active
                .compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // Dropping our handle closes the connection once its last stream ends.
            slot.conn.lock().unwrap().take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_and_print() {
        assert_eq!(Strategy::parse("per-request", 4), Ok(Strategy::PerRequest));
        assert_eq!(Strategy::parse("single", 4), Ok(Strategy::Single));
        assert_eq!(Strategy::parse("pool", 4), Ok(Strategy::Pool(4)));
        assert_eq!(Strategy::parse("pool:3", 4), Ok(Strategy::Pool(3)));
        assert_eq!(Strategy::parse("pool(5)", 4), Ok(Strategy::Pool(5)));
        assert_eq!(
            Strategy::parse("expanding", 4),
            Ok(Strategy::Expanding {
                max: DEFAULT_EXPANDING_MAX
            })
        );
        assert_eq!(
            Strategy::parse("expanding:2", 4),
            Ok(Strategy::Expanding { max: 2 })
        );
        for bad in ["bogus", "pool:0", "pool:x", "single:2", ""] {
            let e = Strategy::parse(bad, 4).unwrap_err();
            assert!(e.to_string().contains("strategy"), "{bad}: {e}");
        }
        for s in ["per-request", "single", "pool:3", "expanding:2"] {
            assert_eq!(Strategy::parse(s, 1).unwrap().to_string(), s);
        }
    }
}
