//! A call's record and end: what an intercepted call keeps from its head to its end
//! ([`Record`]), counted by its request stream ([`Tally`]) and its response body, where the
//! guard that fires the interceptors' `on_end` when the body is done rides ([`EndGuard`]), and
//! what they are shown then ([`CallEnd`]).

use std::{
    any::Any,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};

use http::HeaderMap;
use volley_wire::{Code, Status, codec::HEADER_LEN, names::GRPC_STATUS};

use super::{Call, CallInfo, Chain, call::Kept};

/// One intercepted call's record, in one allocation shared by its request stream (which counts
/// what it reads, through [`Tally`]) and its response body (which counts what it sends and
/// fires the end, through [`EndGuard`]). While the interceptors run it is not yet shared, and
/// they have its [`Call`] mutably.
pub(crate) struct Record {
    chain: Arc<Chain>,
    call: Call,
    /// When the call's head was read, on the TSC clock (see [`now`]).
    started: quanta::Instant,
    received_messages: AtomicU64,
    /// Body bytes read, frame prefixes included.
    received_bytes: AtomicU64,
    sent_messages: AtomicU64,
    /// Message bytes sent, prefixes left out.
    sent_bytes: AtomicU64,
    /// What the body's data frames are: [`PREFIXED`], [`WHOLE`] or [`NOT_MESSAGES`].
    frames: AtomicU8,
    /// How the call ended, as far as the body has told: [`OPEN`], [`OK`] or [`FAILED`].
    outcome: AtomicU8,
    /// The status of a failed call.
    failure: Mutex<Option<Status>>,
}

/// The time, for a call's duration: read from the CPU's time-stamp counter by `quanta` (about
/// 9 ns here, against 23 for the system's monotonic clock, and read twice per intercepted
/// call), or from the system clock where the counter is not reliable.
pub(crate) fn now() -> quanta::Instant {
    quanta::Instant::now()
}

/// Calibrates the clock [`now`] reads (under a millisecond, at most 200), so that the first
/// call does not pay for it.
pub(crate) fn calibrate_clock() {
    let _ = now();
}

/// gRPC frames, each one message with its 5-byte prefix.
const PREFIXED: u8 = 0;
/// Whole messages without a prefix (Connect unary, REST).
const WHOLE: u8 = 1;
/// No messages at all (an error's JSON).
#[cfg(feature = "web")]
const NOT_MESSAGES: u8 = 2;

/// Not yet known: a body dropped in this state was cut short (the client went away).
const OPEN: u8 = 0;
const OK: u8 = 1;
const FAILED: u8 = 2;

impl Record {
    pub(crate) fn new(chain: Arc<Chain>, call: Call, started: quanta::Instant) -> Record {
        Record {
            chain,
            call,
            started,
            received_messages: AtomicU64::new(0),
            received_bytes: AtomicU64::new(0),
            sent_messages: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            frames: AtomicU8::new(PREFIXED),
            outcome: AtomicU8::new(OPEN),
            failure: Mutex::new(None),
        }
    }

    /// The chain and the call of a record not yet shared (while the interceptors' `on_call`
    /// run, and the handler's part of the call is taken back).
    pub(crate) fn unshared(record: &mut Arc<Record>) -> (&Chain, &mut Call) {
        let r = Arc::get_mut(record).expect("a call's record is shared only once admitted");
        (&r.chain, &mut r.call)
    }
}

/// Adds to a count that only one side of the call writes (the request stream its counts, the
/// response body its own): a load and a store, not a locked read-modify-write, which at several
/// per call was a measurable part of what interceptors cost.
fn bump(count: &AtomicU64, n: u64) {
    count.store(count.load(Relaxed) + n, Relaxed);
}

/// The request side of a [`Record`]: counts messages and bytes as the inbound stream reads them.
/// `Clone` only to travel in `http::Extensions` to the adapter that reads a whole body (which
/// requires it): whatever reads the request body is the counts' only writer.
#[derive(Clone)]
pub(crate) struct Tally(Arc<Record>);

impl Tally {
    /// Counts body bytes as they arrive (frames with their 5-byte prefixes).
    pub(crate) fn bytes_in(&self, n: usize) {
        bump(&self.0.received_bytes, n as u64);
    }

    /// Counts one message decoded.
    pub(crate) fn message_in(&self) {
        bump(&self.0.received_messages, 1);
    }

    /// Counts a whole unprefixed message (Connect unary, REST).
    #[cfg(feature = "web")]
    pub(crate) fn whole_message(&self, n: usize) {
        self.message_in();
        self.bytes_in(n + HEADER_LEN);
    }
}

/// The response side of a [`Record`]: rides in the call's response body, counts the messages
/// sent and, when dropped (the body done or abandoned), runs the interceptors' `on_end`.
pub(crate) struct EndGuard(Arc<Record>);

impl EndGuard {
    /// The call's peer, for the adapter that serves it.
    pub(crate) fn peer(&self) -> &Arc<super::Peer> {
        self.0
            .call
            .info()
            .peer_shared()
            .expect("a served call has a peer")
    }
}

/// Shares a record between the request stream's [`Tally`] and the response's [`EndGuard`].
pub(crate) fn share(record: Arc<Record>) -> (Tally, EndGuard) {
    (Tally(record.clone()), EndGuard(record))
}

impl EndGuard {
    /// The body's data frames are whole messages without gRPC's prefix (`true`), or not
    /// messages at all (`false`: an error's JSON).
    #[cfg(feature = "web")]
    pub(crate) fn unprefixed(&self, messages: bool) {
        let frames = if messages { WHOLE } else { NOT_MESSAGES };
        self.0.frames.store(frames, Relaxed);
    }

    /// Records the call's status.
    pub(crate) fn set_status(&self, status: Option<Status>) {
        match status {
            Some(s) if s.code() != Code::Ok => {
                if let Ok(mut f) = self.0.failure.lock() {
                    *f = Some(s);
                }
                self.0.outcome.store(FAILED, Relaxed);
            }
            _ => self.0.outcome.store(OK, Relaxed),
        }
    }

    /// Records the status a trailer (or trailers-only header) map carries, if it carries one.
    pub(crate) fn status_from(&self, headers: &HeaderMap) {
        match headers.get(GRPC_STATUS).map(|v| v.as_bytes()) {
            None => {}
            // OK, the common case, without building a `Status`.
            Some(b"0") => self.0.outcome.store(OK, Relaxed),
            Some(_) => self.set_status(Status::from_headers(headers)),
        }
    }

    /// Counts one data frame sent (a message with its prefix, unless `unprefixed`).
    pub(crate) fn sent(&self, bytes: usize) {
        let prefix = match self.0.frames.load(Relaxed) {
            PREFIXED => HEADER_LEN,
            WHOLE => 0,
            _ => return,
        };
        bump(&self.0.sent_messages, 1);
        bump(&self.0.sent_bytes, bytes.saturating_sub(prefix) as u64);
    }
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        let r = &*self.0;
        let failure = match r.outcome.load(Relaxed) {
            OK => None,
            FAILED => r.failure.lock().ok().and_then(|mut f| f.take()),
            _ => Some(Status::cancelled(
                "the call ended before its status was sent",
            )),
        };
        let messages = r.received_messages.load(Relaxed);
        let bytes = r.received_bytes.load(Relaxed);
        let mut end = CallEnd {
            info: r.call.info(),
            status: failure.as_ref(),
            elapsed: r.started.elapsed(),
            sent: (r.sent_messages.load(Relaxed), r.sent_bytes.load(Relaxed)),
            received: (messages, bytes.saturating_sub(messages * HEADER_LEN as u64)),
            kept: r.call.kept(),
            slot: 0,
        };
        r.chain.end(r.call.ran, &mut end);
    }
}

/// A call that has ended, as [`Interceptor::on_end`](super::Interceptor::on_end) sees it.
pub struct CallEnd<'a> {
    info: &'a CallInfo,
    status: Option<&'a Status>,
    elapsed: Duration,
    sent: (u64, u64),
    received: (u64, u64),
    kept: &'a Kept,
    pub(super) slot: usize,
}

impl CallEnd<'_> {
    /// The call's facts.
    pub fn info(&self) -> &CallInfo {
        self.info
    }

    /// The status code it ended with (CANCELLED when the client went away before it).
    pub fn code(&self) -> Code {
        self.status.map_or(Code::Ok, Status::code)
    }

    /// The status it failed with; `None` for OK.
    pub fn status(&self) -> Option<&Status> {
        self.status
    }

    /// From the moment its head was read to its end.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Messages sent, and their total size in bytes as sent (compressed if they were).
    pub fn sent(&self) -> (u64, u64) {
        self.sent
    }

    /// Messages received, and their total size in bytes as received (compressed if they were).
    pub fn received(&self) -> (u64, u64) {
        self.received
    }

    /// This interceptor's per-method state, made by
    /// [`Call::method_local`](super::Call::method_local).
    pub fn method_local<T: Any>(&self) -> Option<&T> {
        self.info.method().local_if_made(self.slot)
    }

    /// The value this interceptor kept with [`Call::keep`](super::Call::keep), if it kept one
    /// of type `T`.
    pub fn kept<T: Any>(&self) -> Option<&T> {
        self.kept
            .iter()
            .filter(|(slot, _)| *slot == self.slot)
            .find_map(|(_, v)| v.downcast_ref())
    }
}
