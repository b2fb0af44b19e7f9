//! Client interceptors: code that runs around every attempt of every typed call on a [`Grpc`]
//! (and so on every generated client built on it): before the attempt's head is sent
//! ([`ClientInterceptor::on_attempt`], which may add metadata or refuse the call) and when the
//! attempt has ended ([`ClientInterceptor::on_end`], with its status, duration and messages).
//!
//! ```
//! use volley_client::{Status, grpc::{Attempt, ClientInterceptor}};
//!
//! /// Sends a bearer token with every call.
//! struct Token(http::HeaderValue);
//!
//! impl ClientInterceptor for Token {
//!     fn on_attempt(&self, attempt: &mut Attempt<'_>) -> Result<(), Status> {
//!         attempt.metadata_mut().insert("authorization", self.0.clone());
//!         Ok(())
//!     }
//! }
//! ```
//!
//! [`Grpc`]: super::Grpc

use std::{
    any::Any,
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use http::HeaderMap;
use tokio::time::Instant;
use volley_wire::{Code, Status, codec::HEADER_LEN};

/// Code that runs around every attempt of a typed call: see the module documentation.
pub trait ClientInterceptor: Send + Sync + 'static {
    /// Runs before the attempt's head is sent. It may change the request metadata; `Err` fails
    /// the call with that status, with nothing sent.
    fn on_attempt(&self, attempt: &mut Attempt<'_>) -> Result<(), Status>;

    /// Runs once when the attempt has ended (its status read, or the call dropped), for every
    /// interceptor whose `on_attempt` ran, in reverse order.
    fn on_end(&self, end: &AttemptEnd<'_>) {
        let _ = end;
    }
}

/// The interceptors of a [`Grpc`](super::Grpc), in the order they run.
pub(crate) type Chain = Arc<[Arc<dyn ClientInterceptor>]>;

/// State interceptors keep for their `on_end`, by position.
type Kept = Vec<(usize, Box<dyn Any + Send + Sync>)>;

/// One attempt of a call, as interceptors see it before it is sent.
pub struct Attempt<'a> {
    path: &'a str,
    target: &'a str,
    metadata: &'a mut HeaderMap,
    deadline: Option<Instant>,
    number: u32,
    kept: Kept,
    slot: usize,
}

impl Attempt<'_> {
    /// The method's path: `/package.Service/Method`.
    pub fn path(&self) -> &str {
        self.path
    }

    /// The full method name as gRPC's metrics and traces spell it: `package.Service/Method`.
    pub fn full_method(&self) -> &str {
        self.path.strip_prefix('/').unwrap_or(self.path)
    }

    /// The channel's target (`host:port`).
    pub fn target(&self) -> &str {
        self.target
    }

    /// The request headers about to be sent (gRPC's own are set after the interceptors run).
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        self.metadata
    }

    /// The request headers about to be sent.
    pub fn metadata(&self) -> &HeaderMap {
        self.metadata
    }

    /// The call's deadline, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// 1 for the first attempt of a call, 2 for its first retry, and so on.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Keeps a value for this interceptor's [`on_end`](ClientInterceptor::on_end), which reads
    /// it with [`AttemptEnd::kept`].
    pub fn keep<T: Any + Send + Sync>(&mut self, value: T) {
        self.kept.push((self.slot, Box::new(value)));
    }
}

/// An attempt that has ended, as [`ClientInterceptor::on_end`] sees it.
pub struct AttemptEnd<'a> {
    path: &'a str,
    target: &'a str,
    status: Option<&'a Status>,
    elapsed: Duration,
    call_elapsed: Duration,
    will_retry: bool,
    sent: (u64, u64),
    received: (u64, u64),
    kept: &'a Kept,
    slot: usize,
}

impl AttemptEnd<'_> {
    /// The full method name: `package.Service/Method`.
    pub fn full_method(&self) -> &str {
        self.path.strip_prefix('/').unwrap_or(self.path)
    }

    /// The channel's target.
    pub fn target(&self) -> &str {
        self.target
    }

    /// The status code the attempt ended with (CANCELLED when the caller dropped the call).
    pub fn code(&self) -> Code {
        self.status.map_or(Code::Ok, Status::code)
    }

    /// The status it failed with; `None` for OK.
    pub fn status(&self) -> Option<&Status> {
        self.status
    }

    /// From the attempt's start to its end.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// From the call's start (its first attempt) to this attempt's end.
    pub fn call_elapsed(&self) -> Duration {
        self.call_elapsed
    }

    /// Whether the call goes on with another attempt (this one never reached the server).
    pub fn will_retry(&self) -> bool {
        self.will_retry
    }

    /// Messages sent, and their bytes as sent (compressed if they were).
    pub fn sent(&self) -> (u64, u64) {
        self.sent
    }

    /// Messages received, and their bytes as received.
    pub fn received(&self) -> (u64, u64) {
        self.received
    }

    /// The value this interceptor kept with [`Attempt::keep`], if of type `T`.
    pub fn kept<T: Any>(&self) -> Option<&T> {
        self.kept
            .iter()
            .filter(|(slot, _)| *slot == self.slot)
            .find_map(|(_, v)| v.downcast_ref())
    }
}

/// Messages sent by a call's request-stream task.
#[derive(Default)]
pub(crate) struct SentTally {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl SentTally {
    pub(crate) fn frame(&self, len: usize) {
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.bytes
            .fetch_add(len.saturating_sub(HEADER_LEN) as u64, Ordering::Relaxed);
    }
}

/// An attempt under way: runs the interceptors' `on_end` when dropped.
pub(crate) struct Observed {
    chain: Chain,
    path: &'static str,
    target: Arc<str>,
    kept: Kept,
    ran: usize,
    call_started: Instant,
    started: Instant,
    status: Option<Option<Status>>,
    will_retry: bool,
    sent: Arc<SentTally>,
    received: (u64, u64),
}

impl Observed {
    /// Runs the interceptors' `on_attempt` over the attempt's metadata; `Err` when one refused
    /// (its `on_end`, and those of the ones before it, have run).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        chain: &Chain,
        path: &'static str,
        target: &Arc<str>,
        metadata: &mut HeaderMap,
        deadline: Option<Instant>,
        number: u32,
        call_started: Instant,
    ) -> Result<Observed, Status> {
        let mut attempt = Attempt {
            path,
            target,
            metadata,
            deadline,
            number,
            kept: Vec::new(),
            slot: 0,
        };
        let mut refused = None;
        let mut ran = 0;
        for (i, ic) in chain.iter().enumerate() {
            attempt.slot = i;
            ran = i + 1;
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| ic.on_attempt(&mut attempt)));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(s)) => {
                    refused = Some(s);
                    break;
                }
                Err(_) => {
                    refused = Some(Status::internal("a client interceptor panicked"));
                    break;
                }
            }
        }
        let mut observed = Observed {
            chain: chain.clone(),
            path,
            target: target.clone(),
            kept: attempt.kept,
            ran,
            call_started,
            started: Instant::now(),
            status: None,
            will_retry: false,
            sent: Arc::default(),
            received: (0, 0),
        };
        match refused {
            None => Ok(observed),
            Some(s) => {
                observed.end(Some(s.clone()));
                Err(s)
            }
        }
    }

    /// The count of messages sent, shared with a request-stream task.
    pub(crate) fn sent_tally(&self) -> Arc<SentTally> {
        self.sent.clone()
    }

    /// Counts one reply message (its payload length as received).
    pub(crate) fn received(&mut self, len: usize) {
        self.received.0 += 1;
        self.received.1 += len as u64;
    }

    /// Records how the attempt ended (`None`: OK).
    pub(crate) fn end(&mut self, status: Option<Status>) {
        if self.status.is_none() {
            self.status = Some(status.filter(|s| s.code() != Code::Ok));
        }
    }

    /// The call goes on with another attempt.
    pub(crate) fn retrying(&mut self) {
        self.will_retry = true;
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        let status = self
            .status
            .get_or_insert_with(|| {
                Some(Status::cancelled(
                    "the call was dropped before its status arrived",
                ))
            })
            .as_ref();
        let now = Instant::now();
        let mut end = AttemptEnd {
            path: self.path,
            target: &self.target,
            status,
            elapsed: now - self.started,
            call_elapsed: now - self.call_started,
            will_retry: self.will_retry,
            sent: (
                self.sent.messages.load(Ordering::Relaxed),
                self.sent.bytes.load(Ordering::Relaxed),
            ),
            received: self.received,
            kept: &self.kept,
            slot: 0,
        };
        for i in (0..self.ran.min(self.chain.len())).rev() {
            end.slot = i;
            let ic = &self.chain[i];
            if std::panic::catch_unwind(AssertUnwindSafe(|| ic.on_end(&end))).is_err() {
                tracing::error!("a client interceptor panicked in on_end");
            }
        }
    }
}
