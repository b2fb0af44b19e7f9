//! Fast-path connections to a target's addresses that are dialled again when they stop taking
//! calls, and a call the server never saw sent once more on the new one. Redials after a
//! connection that closed before the server answered any call, or after a failed dial, back
//! off. An address list is balanced as gRPC's `pick_first` and `round_robin` balance it; or,
//! per call, a connection of its own (`--strategy per-request`).

use std::{
    cell::{Cell, RefCell},
    time::{Duration, Instant},
};

use bytes::Bytes;
use volley_wire::Status;

use super::{FastConnection, OpenStream, StreamReply, error::CallError, frame::HeaderBlock};
use crate::{Policy, Target, UnaryReply};

/// The first wait before dialling again after a connection the server closed unanswered; it
/// doubles up to [`BACKOFF_MAX`] (the channel's backoff for failed dials).
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between such dials.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Fast-path connections to an endpoint, one per address (an `ipv4:`/`ipv6:` list has several;
/// any other target one), each dialled again when it stops taking calls (GOAWAY, a closed
/// socket), as a channel does for the h2-crate path; a call the server never saw (past a
/// GOAWAY's last stream, or refused) is sent once more on the new connection. Each call takes
/// an address by the [`Policy`]: the first that can be reached (`pick_first`), or the next in
/// turn (`round_robin`); an address backing off is passed over while another can take the
/// call, and a call whose address cannot be dialled tries the next.
///
/// A server that closes every connection before answering a call (GOAWAY as soon as it has
/// sent its SETTINGS, a protocol error on the first reply), or one that cannot be reached, would
/// otherwise be dialled once or twice per call, as fast as calls fail (measured: 4,000
/// connections a second, each left in TIME_WAIT). So after such a connection, or a failed dial,
/// the next dial waits 100 ms, doubling to 2 s, and calls meanwhile fail at once with that
/// connection's (or dial's) status (or go to another address); a connection the server answered
/// on resets the wait.
pub struct Redialing {
    addrs: Box<[Address]>,
    policy: Policy,
    /// The address the next round-robin call starts from.
    next: Cell<usize>,
}

/// One address and its connection.
struct Address {
    ep: crate::Endpoint,
    /// None: each call dials a connection of its own, closed when the call ends. Inside,
    /// `None` until the address is first dialled (or while its first dial keeps failing).
    conn: Option<RefCell<Option<FastConnection>>>,
    /// The wait before the next dial after an unanswered connection (zero: none yet).
    delay: Cell<Duration>,
    /// No dial before this (the last connection closed unanswered, or a dial failed).
    until: Cell<Option<Instant>>,
    /// Why the last dial failed, if it did: what calls fail with until the next.
    failed: RefCell<Option<Status>>,
}

impl Redialing {
    /// Connections to `ep`'s addresses, calls spread by `policy`: `pick_first` dials the
    /// addresses in order until one answers, `round_robin` dials them all; an error only when
    /// none can be reached (the first address's). An address whose dial failed backs off.
    pub async fn balanced(ep: crate::Endpoint, policy: Policy) -> Result<Redialing, Status> {
        let r = Redialing::new(ep, policy, true);
        let mut first_err = None;
        let mut reached = false;
        for a in r.addrs.iter() {
            match a.current().await {
                Ok(_) => reached = true,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            if reached && policy == Policy::PickFirst {
                break;
            }
        }
        match first_err {
            Some(e) if !reached => Err(e),
            _ => Ok(r),
        }
    }

    /// Each call on a connection of its own, dialled for it to the address `policy` picks
    /// (none is dialled now): the connection closes once the call's last handle on it goes. A
    /// dial that fails fails its call (after every address of a list has been tried), as the
    /// h2-crate path's per-request calls do, with no backoff.
    pub fn per_call(ep: crate::Endpoint, policy: Policy) -> Redialing {
        Redialing::new(ep, policy, false)
    }

    fn new(ep: crate::Endpoint, policy: Policy, kept: bool) -> Redialing {
        let eps = match &ep.target {
            Target::List(list) => {
                let mut seen = std::collections::HashSet::new();
                list.iter()
                    .filter(|a| seen.insert(**a))
                    .map(|a| {
                        let mut one = ep.clone();
                        one.target = Target::Tcp(a.to_string());
                        one
                    })
                    .collect()
            }
            _ => vec![ep],
        };
        Redialing {
            addrs: eps
                .into_iter()
                .map(|ep| Address {
                    ep,
                    conn: kept.then(|| RefCell::new(None)),
                    delay: Cell::new(Duration::ZERO),
                    until: Cell::new(None),
                    failed: RefCell::new(None),
                })
                .collect(),
            policy,
            next: Cell::new(0),
        }
    }

    /// The open connection the policy gives the next call, and its address, without dialling;
    /// `None` when the address whose turn it is has none open (then [`Self::pick`] dials). Kept
    /// apart from `pick` so that a call's future does not carry a dial's state: with it inline,
    /// the generator paid 1.027-1.038 x instructions per unary call (callgrind). Each call
    /// method matches on the two itself: an `async fn` doing it for all three added a future
    /// level, 1.006-1.012 x.
    fn ready(&self) -> Option<(&Address, FastConnection)> {
        if let [a] = &self.addrs[..] {
            return a.open().map(|c| (a, c));
        }
        let i = self.in_turn().next()?;
        let conn = self.addrs[i].open()?;
        self.took(i);
        Some((&self.addrs[i], conn))
    }

    /// Where the next call starts looking: round robin's turn, else the first address.
    fn first_turn(&self) -> usize {
        match self.policy {
            Policy::RoundRobin => self.next.get(),
            Policy::PickFirst => 0,
        }
    }

    /// The addresses in the order the next call tries them, those backing off passed over (a
    /// single address never is: its calls fail with its status).
    fn in_turn(&self) -> impl Iterator<Item = usize> + '_ {
        let (n, start) = (self.addrs.len(), self.first_turn());
        (0..n)
            .map(move |k| (start + k) % n)
            .filter(move |&i| n == 1 || !self.addrs[i].backing_off())
    }

    /// Address `i` takes a call: round robin's turn passes to the one after it, so that
    /// addresses passed over do not hand their turns to their neighbour.
    fn took(&self, i: usize) {
        if self.policy == Policy::RoundRobin {
            self.next.set((i + 1) % self.addrs.len());
        }
    }

    /// A connection for one call, and its address: by the policy, passing over addresses that
    /// are backing off while another may take the call, and trying the next address when one
    /// cannot be dialled.
    async fn pick(&self) -> Result<(&Address, FastConnection), Status> {
        let mut first_err = None;
        for i in self.in_turn() {
            self.took(i);
            let a = &self.addrs[i];
            match a.current().await {
                Ok(conn) => return Ok((a, conn)),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        // Every address is backing off: the call fails with the first one's status.
        let a = &self.addrs[self.first_turn()];
        a.current().await.map(|c| (a, c))
    }

    /// One unary call (see [`FastConnection::unary`]).
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        let (a, conn) = match self.ready() {
            Some(picked) => picked,
            None => Box::pin(self.pick()).await?,
        };
        match conn.call(block, body.clone()).await {
            Err(e) if e.never_seen() => a.current().await?.unary(block, body).await,
            r => r.map_err(CallError::into_status),
        }
    }

    /// One server-streaming call (see [`FastConnection::server_stream`]).
    pub async fn server_stream(
        &self,
        block: &HeaderBlock,
        body: Bytes,
        limit: u64,
        deadline: Option<Instant>,
    ) -> Result<StreamReply, Status> {
        let (a, conn) = match self.ready() {
            Some(picked) => picked,
            None => Box::pin(self.pick()).await?,
        };
        match conn.stream_call(block, body.clone(), limit, deadline).await {
            Err(e) if e.never_seen() => {
                a.current()
                    .await?
                    .server_stream(block, body, limit, deadline)
                    .await
            }
            r => r.map_err(CallError::into_status),
        }
    }

    /// Opens a client or bidi stream (see [`FastConnection::open_stream`]). A stream the
    /// server refuses or a GOAWAY passes over once it is open fails as its call; only a
    /// connection already closed is dialled again first.
    pub async fn open_stream(
        &self,
        block: &HeaderBlock,
        stamp: bool,
    ) -> Result<OpenStream, Status> {
        let (a, conn) = match self.ready() {
            Some(picked) => picked,
            None => Box::pin(self.pick()).await?,
        };
        match conn.open(block, stamp).await {
            Err(e) if e.never_seen() => a.current().await?.open_stream(block, stamp).await,
            r => r.map_err(CallError::into_status),
        }
    }
}

impl Address {
    /// Its connection, if one is open (never with a connection per call).
    fn open(&self) -> Option<FastConnection> {
        let cell = self.conn.as_ref()?.borrow();
        cell.as_ref().filter(|c| c.closed_by().is_none()).cloned()
    }

    /// Whether the address has no open connection and may not be dialled yet.
    fn backing_off(&self) -> bool {
        self.conn.is_some() && self.open().is_none() && self.waiting()
    }

    /// The address's open connection, or a new one (after its backoff).
    async fn current(&self) -> Result<FastConnection, Status> {
        let Some(cell) = &self.conn else {
            return FastConnection::connect(&self.ep).await;
        };
        if let Some(open) = self.open() {
            return Ok(open);
        }
        // Closed, or never made.
        let conn = cell.borrow().clone();
        if self.waiting() {
            let failed = self.failed.borrow().clone();
            return Err(
                failed.unwrap_or_else(|| match conn.and_then(|c| c.closed_by()) {
                    Some(why) => why.into_status(),
                    None => Status::unavailable("the address has not been reached yet"),
                }),
            );
        }
        // A first dial goes at once, as a redial after a connection the server answered on.
        let answered = conn.is_none_or(|c| c.replied());
        let at_once = answered && self.failed.borrow().is_none();
        if at_once {
            // The first redial after a connection the server answered on (or a first dial).
            self.delay.set(Duration::ZERO);
        } else {
            // Set before the dial: the calls that come while it is under way fail at once.
            self.back_off();
        }
        match FastConnection::connect(&self.ep).await {
            Ok(fresh) => {
                *self.failed.borrow_mut() = None;
                *cell.borrow_mut() = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => {
                *self.failed.borrow_mut() = Some(e.clone());
                if at_once {
                    self.back_off();
                }
                Err(e)
            }
        }
    }

    /// Whether the backoff after the last failure still runs.
    fn waiting(&self) -> bool {
        self.until.get().is_some_and(|u| Instant::now() < u)
    }

    /// No dial for the next wait, which doubles.
    fn back_off(&self) {
        let delay = (self.delay.get() * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
        self.delay.set(delay);
        self.until.set(Some(Instant::now() + delay));
    }
}
