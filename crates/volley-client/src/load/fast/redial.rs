//! A fast-path connection that is dialled again when it stops taking calls, and a call the
//! server never saw sent once more on the new one. Redials after a connection that closed
//! before the server answered any call, or after a failed dial, back off. Or, per call, a
//! connection of its own (`--strategy per-request`).

use std::{
    cell::{Cell, RefCell},
    time::{Duration, Instant},
};

use bytes::Bytes;
use volley_wire::Status;

use super::{FastConnection, OpenStream, StreamReply, error::CallError, frame::HeaderBlock};
use crate::UnaryReply;

/// The first wait before dialling again after a connection the server closed unanswered; it
/// doubles up to [`BACKOFF_MAX`] (the channel's backoff for failed dials).
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between such dials.
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// A fast-path connection to an endpoint that is dialled again when it stops taking calls
/// (GOAWAY, a closed socket), as a channel does for the h2-crate path; a call the server never
/// saw (past a GOAWAY's last stream, or refused) is sent once more on the new connection.
///
/// A server that closes every connection before answering a call (GOAWAY as soon as it has
/// sent its SETTINGS, a protocol error on the first reply), or one that cannot be reached, would
/// otherwise be dialled once or twice per call, as fast as calls fail (measured: 4,000
/// connections a second, each left in TIME_WAIT). So after such a connection, or a failed dial,
/// the next dial waits 100 ms, doubling to 2 s, and calls meanwhile fail at once with that
/// connection's (or dial's) status; a connection the server answered on resets the wait.
pub struct Redialing {
    ep: crate::Endpoint,
    /// None: each call dials a connection of its own, closed when the call ends.
    conn: Option<RefCell<FastConnection>>,
    /// The wait before the next dial after an unanswered connection (zero: none yet).
    delay: Cell<Duration>,
    /// No dial before this (the last connection closed unanswered, or a dial failed).
    until: Cell<Option<Instant>>,
    /// Why the last dial failed, if it did: what calls fail with until the next.
    failed: RefCell<Option<Status>>,
}

impl Redialing {
    /// A first connection to `ep`.
    pub async fn connect(ep: crate::Endpoint) -> Result<Redialing, Status> {
        let conn = FastConnection::connect(&ep).await?;
        Ok(Redialing {
            ep,
            conn: Some(RefCell::new(conn)),
            delay: Cell::new(Duration::ZERO),
            until: Cell::new(None),
            failed: RefCell::new(None),
        })
    }

    /// Each call on a connection of its own, dialled for it (none is dialled now): the
    /// connection closes once the call's last handle on it goes. A dial that fails fails its
    /// call, as the h2-crate path's per-request calls do, with no backoff.
    pub fn per_call(ep: crate::Endpoint) -> Redialing {
        Redialing {
            ep,
            conn: None,
            delay: Cell::new(Duration::ZERO),
            until: Cell::new(None),
            failed: RefCell::new(None),
        }
    }

    async fn current(&self) -> Result<FastConnection, Status> {
        let Some(cell) = &self.conn else {
            return FastConnection::connect(&self.ep).await;
        };
        let conn = cell.borrow().clone();
        let Some(why) = conn.closed_by() else {
            return Ok(conn);
        };
        if self.until.get().is_some_and(|u| Instant::now() < u) {
            let failed = self.failed.borrow().clone();
            return Err(failed.unwrap_or_else(|| why.into_status()));
        }
        let at_once = conn.replied() && self.failed.borrow().is_none();
        if at_once {
            // The first redial after a connection the server answered on.
            self.delay.set(Duration::ZERO);
        } else {
            // Set before the dial: the calls that come while it is under way fail at once.
            self.back_off();
        }
        match FastConnection::connect(&self.ep).await {
            Ok(fresh) => {
                *self.failed.borrow_mut() = None;
                *cell.borrow_mut() = fresh.clone();
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

    /// No dial for the next wait, which doubles.
    fn back_off(&self) {
        let delay = (self.delay.get() * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
        self.delay.set(delay);
        self.until.set(Some(Instant::now() + delay));
    }

    /// One unary call (see [`FastConnection::unary`]).
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        let conn = self.current().await?;
        match conn.call(block, body.clone()).await {
            Err(e) if e.never_seen() => self.current().await?.unary(block, body).await,
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
        let conn = self.current().await?;
        match conn.stream_call(block, body.clone(), limit, deadline).await {
            Err(e) if e.never_seen() => {
                self.current()
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
        let conn = self.current().await?;
        match conn.open(block, stamp).await {
            Err(e) if e.never_seen() => self.current().await?.open_stream(block, stamp).await,
            r => r.map_err(CallError::into_status),
        }
    }
}
