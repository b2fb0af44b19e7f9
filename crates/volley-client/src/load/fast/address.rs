//! One address of the fast path's [`Redialing`](super::Redialing): its connection, dialled
//! again after a backoff when it stops taking calls, and under `expanding` the connections
//! opened beside it when every one is full.

use std::{
    cell::{Cell, RefCell},
    time::{Duration, Instant},
};

use volley_wire::Status;

use super::FastConnection;

/// The first wait before dialling again after a connection the server closed unanswered; it
/// doubles up to [`BACKOFF_MAX`] (the channel's backoff for failed dials).
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between such dials.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// One address and its connection.
pub(super) struct Address {
    pub(super) ep: crate::Endpoint,
    /// None: each call dials a connection of its own, closed when the call ends. Inside,
    /// `None` until the address is first dialled (or while its first dial keeps failing).
    conn: Option<RefCell<Option<FastConnection>>>,
    /// The wait before the next dial after an unanswered connection (zero: none yet).
    delay: Cell<Duration>,
    /// No dial before this (the last connection closed unanswered, or a dial failed).
    until: Cell<Option<Instant>>,
    /// Why the last dial failed, if it did: what calls fail with until the next.
    failed: RefCell<Option<Status>>,
    /// `expanding`: the connections opened beside the first when every one was full.
    grown: Option<Grown>,
}

/// The connections an address opens beyond its first under `expanding`, up to `max` in all.
struct Grown {
    /// Lowered to what is open when a dial for another fails: no dial per full call.
    max: Cell<usize>,
    extra: RefCell<Vec<FastConnection>>,
    /// A dial for another is under way: calls meanwhile wait on those open.
    dialling: Cell<bool>,
}

impl Address {
    /// An address of `ep`, not dialled yet; `kept`: it keeps a connection (else each call
    /// dials its own).
    pub(super) fn new(ep: crate::Endpoint, kept: bool, max: usize) -> Address {
        Address {
            ep,
            conn: kept.then(|| RefCell::new(None)),
            delay: Cell::new(Duration::ZERO),
            until: Cell::new(None),
            failed: RefCell::new(None),
            grown: (kept && max > 1).then(|| Grown {
                max: Cell::new(max),
                extra: RefCell::new(Vec::new()),
                dialling: Cell::new(false),
            }),
        }
    }

    /// Its connection, if one is open (never with a connection per call); under `expanding`,
    /// the least loaded of those open, or none when all are full and another may be dialled.
    pub(super) fn open(&self) -> Option<FastConnection> {
        let cell = self.conn.as_ref()?.borrow();
        let first = cell.as_ref().filter(|c| c.closed_by().is_none());
        match &self.grown {
            None => first.cloned(),
            Some(g) => g.least_loaded(first?),
        }
    }

    /// Whether the address has no open connection and may not be dialled yet.
    pub(super) fn backing_off(&self) -> bool {
        self.conn.is_some() && self.open().is_none() && self.waiting()
    }

    /// The address's open connection, or a new one (after its backoff).
    pub(super) async fn current(&self) -> Result<FastConnection, Status> {
        let Some(cell) = &self.conn else {
            return FastConnection::connect(&self.ep).await;
        };
        if let Some(open) = self.open() {
            return Ok(open);
        }
        if let Some(g) = &self.grown {
            // (The borrow ends here, before any wait.)
            let first = cell.borrow().clone().filter(|c| c.closed_by().is_none());
            if let Some(first) = first {
                // Every connection is full and there is room for another.
                return Ok(g.grow(&self.ep, first).await);
            }
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

impl Grown {
    /// The least loaded of `first` and the extra connections open; `None` when that one is
    /// full and another may be opened. Closed extras are let go.
    fn least_loaded(&self, first: &FastConnection) -> Option<FastConnection> {
        let mut extra = self.extra.borrow_mut();
        extra.retain(|c| c.closed_by().is_none());
        let (mut best, (mut calls, mut full)) = (first, first.load());
        for c in extra.iter() {
            let (n, f) = c.load();
            if n < calls {
                (best, calls, full) = (c, n, f);
            }
        }
        if full && 1 + extra.len() < self.max.get() && !self.dialling.get() {
            return None;
        }
        Some(best.clone())
    }

    /// Another connection, kept beside `first`; if it cannot be made, `first` (the call waits
    /// there for room), and no more are dialled.
    async fn grow(&self, ep: &crate::Endpoint, first: FastConnection) -> FastConnection {
        if self.dialling.replace(true) {
            return first;
        }
        let dialled = FastConnection::connect(ep).await;
        self.dialling.set(false);
        match dialled {
            Ok(c) => {
                self.extra.borrow_mut().push(c.clone());
                c
            }
            Err(_) => {
                self.max.set(1 + self.extra.borrow().len());
                first
            }
        }
    }
}
