//! A call's end: the guard that travels in the response body, counts what it sends and fires the
//! interceptors' `on_end` when the body is done ([`EndGuard`]), and what they are shown
//! ([`CallEnd`]).

use std::{
    any::Any,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use http::HeaderMap;
use tokio::time::Instant;
use volley_wire::{Code, Status, codec::HEADER_LEN, names::GRPC_STATUS};

use super::{CallInfo, Chain, call::Kept};

/// Request messages and their bytes, counted by the inbound stream as it reads them.
#[derive(Default, Debug)]
pub(crate) struct Tally {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    /// Counts body bytes as they arrive (frames with their 5-byte prefixes).
    pub(crate) fn bytes_in(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts one message decoded.
    pub(crate) fn message_in(&self) {
        self.messages.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a whole unprefixed message (Connect unary, REST).
    pub(crate) fn whole_message(&self, n: usize) {
        self.message_in();
        self.bytes_in(n + HEADER_LEN);
    }

    /// Messages, and their payload bytes (prefixes left out).
    fn read(&self) -> (u64, u64) {
        let m = self.messages.load(Ordering::Relaxed);
        let b = self.bytes.load(Ordering::Relaxed);
        (m, b.saturating_sub(m * HEADER_LEN as u64))
    }
}

/// How the call ended, as far as the body has told.
enum Outcome {
    /// Not yet known: a body dropped in this state was cut short (the client went away).
    Open,
    Ok,
    Failed(Status),
}

/// Rides in a call's response body; counts the messages sent and, when dropped (the body done or
/// abandoned), runs the interceptors' `on_end`.
pub(crate) struct EndGuard {
    chain: Arc<Chain>,
    info: CallInfo,
    started: Instant,
    tally: Arc<Tally>,
    kept: Kept,
    ran: usize,
    outcome: Outcome,
    sent_messages: u64,
    sent_bytes: u64,
    /// What the body's data frames are.
    frames: Frames,
}

/// What a watched body's data frames are, for the count of messages sent.
#[derive(Clone, Copy)]
enum Frames {
    /// gRPC frames, each one message with its 5-byte prefix.
    Prefixed,
    /// Whole messages without a prefix (Connect unary, REST).
    Whole,
    /// No messages at all (an error's JSON).
    NotMessages,
}

impl EndGuard {
    pub(crate) fn new(
        chain: Arc<Chain>,
        info: CallInfo,
        started: Instant,
        tally: Arc<Tally>,
        kept: Kept,
        ran: usize,
    ) -> EndGuard {
        EndGuard {
            chain,
            info,
            started,
            tally,
            kept,
            ran,
            outcome: Outcome::Open,
            sent_messages: 0,
            sent_bytes: 0,
            frames: Frames::Prefixed,
        }
    }

    /// The body's data frames are whole messages without gRPC's prefix (`true`), or not
    /// messages at all (`false`: an error's JSON).
    pub(crate) fn unprefixed(&mut self, messages: bool) {
        self.frames = if messages {
            Frames::Whole
        } else {
            Frames::NotMessages
        };
    }

    /// Records the call's status.
    pub(crate) fn set_status(&mut self, status: Option<Status>) {
        self.outcome = match status {
            Some(s) if s.code() != Code::Ok => Outcome::Failed(s),
            _ => Outcome::Ok,
        };
    }

    /// Records the status a trailer (or trailers-only header) map carries, if it carries one.
    pub(crate) fn status_from(&mut self, headers: &HeaderMap) {
        match headers.get(GRPC_STATUS).map(|v| v.as_bytes()) {
            None => {}
            // OK, the common case, without building a `Status`.
            Some(b"0") => self.outcome = Outcome::Ok,
            Some(_) => self.set_status(Status::from_headers(headers)),
        }
    }

    /// Counts one data frame sent (a message with its prefix, unless `unprefixed`).
    pub(crate) fn sent(&mut self, bytes: usize) {
        let prefix = match self.frames {
            Frames::Prefixed => HEADER_LEN,
            Frames::Whole => 0,
            Frames::NotMessages => return,
        };
        self.sent_messages += 1;
        self.sent_bytes += bytes.saturating_sub(prefix) as u64;
    }
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if let Outcome::Open = self.outcome {
            self.outcome = Outcome::Failed(Status::cancelled(
                "the call ended before its status was sent",
            ));
        }
        let status = match &self.outcome {
            Outcome::Failed(s) => Some(s),
            _ => None,
        };
        let (recv_messages, recv_bytes) = self.tally.read();
        let mut end = CallEnd {
            info: &self.info,
            status,
            elapsed: self.started.elapsed(),
            sent: (self.sent_messages, self.sent_bytes),
            received: (recv_messages, recv_bytes),
            kept: &self.kept,
            slot: 0,
        };
        self.chain.end(self.ran, &mut end);
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
