//! The connections to one address under a strategy: a slot per connection with its calls in
//! flight, lazy dials that back off after failed dials and after connections that closed before
//! the server answered a call (100 ms doubling to 2 s; calls fail fast with UNAVAILABLE
//! meanwhile), the least-loaded pick, `expanding`'s growth and its idle close.

use std::{
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use volley_wire::Status;

use super::strategy::Strategy;
use crate::{Connection, Endpoint, connection::unavailable};

/// The first wait before dialling a slot again after a failed dial or a connection the server
/// closed unanswered; it doubles up to [`BACKOFF_MAX`] (as the fast path's `Redialing`).
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between such dials.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// What calls fail with while a slot waits to dial again after a connection that closed before
/// the server answered a call.
const UNANSWERED: &str = "the server closed the connection before answering a call";

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
    /// with 500 connections, measured; see docs/benchmarks-history.md, "Pooled channels: many
    /// connections").
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

/// When a slot may be dialled again.
///
/// A server that closes every connection before answering a call (GOAWAY as soon as it has
/// sent its SETTINGS, or on the first call), or one that cannot be reached, would otherwise be
/// dialled up to three times per call (the transparent retries), as fast as calls fail
/// (measured: 57 connections for 36 calls in a second, with two callers). So after such a
/// connection, or a failed dial, the next dial waits 100 ms, doubling to 2 s, and calls
/// meanwhile fail at once with UNAVAILABLE and the connection's (or dial's) error; a connection
/// the server answered on resets the wait. The first dial after an unanswered connection is
/// not delayed; the wait bounds the one after it.
#[derive(Default)]
struct Backoff {
    /// No dial before this instant (unless the connection since dialled was answered on);
    /// calls until then fail with `error`.
    until: Option<Instant>,
    /// The wait set by the last back-off (zero: none since the last answered connection).
    delay: Duration,
    error: String,
    /// The last dial failed.
    dial_failed: bool,
}

impl Backoff {
    /// No dial for the next wait, which doubles; returns when it ends.
    fn back_off(&mut self) -> Instant {
        self.delay = (self.delay * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
        let until = Instant::now() + self.delay;
        self.until = Some(until);
        until
    }
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
        // A call that ended while its connection still took calls was answered, or at least
        // did not see the connection die (a call that did retires it first): the server is not
        // closing connections unanswered. Unary calls through the channel also say so when
        // their reply comes.
        if self.conn.is_usable() {
            self.conn.mark_replied();
        }
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
            && max > 1
        {
            rt.spawn(close_idle(Arc::downgrade(&inner), idle));
        }
        inner
    }

    /// Where its connections are dialled.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// Its strategy.
    pub(crate) fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Connections dialled since it was built.
    pub(crate) fn dials(&self) -> u64 {
        self.dials.load(Ordering::Relaxed)
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

    /// True while every connection slot is backing off after failed dials or connections that
    /// closed unanswered (so another address should take the call).
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

    /// The slot's connection, dialling it if it is missing or unusable (unless backing off: see
    /// [`Backoff`]).
    async fn ready(&self, i: usize) -> Result<Connection, Status> {
        let slot = &self.slots[i];
        if let Some(c) = slot.usable() {
            return Ok(c);
        }
        if let Some(e) = slot.backoff_error(self.epoch) {
            return Err(e);
        }
        let _dialing = slot.dialing.lock().await;
        if let Some(c) = slot.usable() {
            return Ok(c);
        }
        if let Some(e) = slot.backoff_error(self.epoch) {
            return Err(e);
        }
        // No connection yet (or one closed as idle) counts as answered.
        let answered = slot
            .conn
            .lock()
            .unwrap()
            .as_ref()
            .is_none_or(Connection::replied);
        let at_once = {
            let mut b = slot.backoff.lock().unwrap();
            let at_once = answered && !b.dial_failed;
            if at_once {
                // The first redial after a connection the server answered on.
                b.delay = Duration::ZERO;
                b.until = None;
            } else {
                // Set before the dial: the calls that come while it is under way fail at once,
                // and if this connection too closes unanswered, the next dial waits.
                b.back_off();
                if !b.dial_failed {
                    b.error = UNANSWERED.to_owned();
                }
            }
            at_once
        };
        match Connection::connect(&self.ep).await {
            Ok(c) => {
                self.dials.fetch_add(1, Ordering::Relaxed);
                self.peer_limit.store(c.max_streams(), Ordering::Relaxed);
                *slot.conn.lock().unwrap() = Some(c.clone());
                let mut b = slot.backoff.lock().unwrap();
                b.dial_failed = false;
                b.error = UNANSWERED.to_owned();
                // The slot has a connection: picks stop avoiding it (`until` still holds back
                // the next dial, should this connection close unanswered).
                slot.backoff_until_ms.store(0, Ordering::Relaxed);
                Ok(c)
            }
            Err(e) => {
                let mut b = slot.backoff.lock().unwrap();
                let until = if at_once {
                    b.back_off()
                } else {
                    b.until.unwrap_or_else(Instant::now)
                };
                b.dial_failed = true;
                b.error = e.to_string();
                slot.refuse_until(self.epoch, until);
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

    /// True while a backoff lasts and the slot has no connection; the clock is read only for a
    /// slot that has one (rare), not once per call.
    fn backing_off(&self, now: &mut LazyNow) -> bool {
        let until = self.backoff_until_ms.load(Ordering::Relaxed);
        until != 0 && now.ms() < until
    }

    /// Marks the slot as backing off for picks until `until`.
    fn refuse_until(&self, epoch: Instant, until: Instant) {
        let ms = until.saturating_duration_since(epoch).as_millis() as u64;
        self.backoff_until_ms.store(ms.max(1), Ordering::Relaxed);
    }

    /// The status calls fail with while the slot (which has no usable connection) may not be
    /// dialled yet; none once the wait is over, or if its last connection was answered on.
    fn backoff_error(&self, epoch: Instant) -> Option<Status> {
        let b = self.backoff.lock().unwrap();
        let until = b.until.filter(|u| Instant::now() < *u)?;
        if !b.dial_failed
            && self
                .conn
                .lock()
                .unwrap()
                .as_ref()
                .is_some_and(Connection::replied)
        {
            return None;
        }
        self.refuse_until(epoch, until);
        Some(unavailable(&b.error))
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
