//! HTTP/2 connections served on the h2 crate directly: accept streams, run each call (first on the
//! connection's task, then in its own task if it has to wait), pipe the reply back with flow
//! control (`conn::h2_stream`), keepalive pings and graceful shutdown.
//!
//! Written by hand, not hyper's server, because the glue hyper puts between h2 and a service (its
//! IO compatibility layers, body wrapper and per-stream state) cost ~14% of a unary call here: a
//! minimal handler on h2 measured 8.6-8.9 us per call against 10.0-11.7 us on hyper
//! (docs/benchmarks-history.md, "Server: volley serve beside the stacks users pick
//! instead"). Every HTTP/2 connection comes here (h2c, TLS with ALPN "h2", TLS
//! whose first bytes are the preface); only HTTP/1.1 goes through hyper. The stream and pipe
//! logic follow hyper 1.x's `H2Stream` and `PipeToSendStream`.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, atomic::Ordering},
    task::{Context, Poll, ready},
    time::Duration,
};

use bytes::Bytes;
use h2::{
    Ping, PingPong,
    server::{Connection, Handshake},
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    time::{Instant, Sleep},
};
use tracing::{debug, warn};

use super::{
    h2_stream::CallStream,
    idle::{Activity, IdleLimit, Step as IdleStep},
    linger::Lingering,
    pings::PingPolice,
};
use crate::{body::RequestBody, call, intercept::Peer, route::Shared};

/// Default HTTP/2 stream window (grpc-go starts at 64 KiB and grows it; a larger start saves the ramp).
pub const DEFAULT_STREAM_WINDOW: u32 = 1024 * 1024;
/// Default HTTP/2 connection window. Large on purpose: h2 (0.4.16+) sends GOAWAY
/// ENHANCE_YOUR_CALM when unread small DATA frames exhaust a budget of half this window (its
/// default). A client streaming
/// tiny messages (seed 004's 38-byte orders) faster than a handler reads them can fill a 1 MiB
/// stream window with ~27k frames costing ~6 MiB of budget; 16 MiB (grpc-go's largest BDP
/// window) gives 8 MiB.
pub const DEFAULT_CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// Largest header list accepted (hyper's default, which volley served with before).
const MAX_HEADER_LIST: u32 = 16 * 1024;
/// Reply bytes buffered per stream before the handler is made to wait: grpc-go's write quota
/// (64 KiB). hyper's 400 KiB let a peer that opens its windows and never reads hold 400 KiB per
/// stream (53 MB for 100 streams in `tests/hostile_client.rs`, 400 MB at the 1,024-stream limit).
const MAX_SEND_BUFFER: usize = 64 * 1024;
/// PING ACKs for pings the server never sent that a client may send before GOAWAY
/// ENHANCE_YOUR_CALM. No well-behaved client sends one; h2 ignores each at a cost, so a client
/// sending them at wire speed (10,000 in `tests/hostile_client.rs`) is cut off.
const UNSOLICITED_ACKS: u64 = 4;
/// Streams reset by local errors before the connection is closed (hyper's default).
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Why a connection ended with an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnError {
    /// An HTTP/2 protocol or IO error.
    #[error(transparent)]
    H2(#[from] h2::Error),
    /// The peer did not answer a keepalive ping in time.
    #[error("keepalive ping not answered within {0:?}")]
    Keepalive(Duration),
}

/// The h2 settings every connection of a server uses.
pub(crate) fn builder(max_concurrent_streams: u32) -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.initial_window_size(DEFAULT_STREAM_WINDOW)
        .initial_connection_window_size(DEFAULT_CONNECTION_WINDOW)
        .max_concurrent_streams(max_concurrent_streams)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS));
    b
}

/// The per-connection limits of an HTTP/2 connection.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConnLimits {
    /// Ping the client this often; close when a ping goes unanswered for as long.
    pub(crate) keepalive: Option<Duration>,
    /// GOAWAY after this long with no call open.
    pub(crate) max_idle: Option<Duration>,
    /// Police the client's pings on a connection with no call open (`conn::pings`).
    pub(crate) ping_min_interval: Option<Duration>,
    /// How long a connection sent GOAWAY for being idle may stay open (`conn::idle`).
    pub(crate) grace: Duration,
}

/// One HTTP/2 connection: a future that ends when the connection does.
pub(crate) struct H2Connection<I> {
    state: State<I>,
    shared: Arc<Shared>,
    peer: Arc<Peer>,
    keepalive: Option<Keepalive>,
    /// A graceful shutdown asked for during the handshake, applied once it is done.
    shutdown: bool,
    /// Run each new call's first poll on this task (true on a current-thread runtime, where a
    /// task of its own runs on the same thread anyway): a call that completes then, as most
    /// unary calls do, costs no task. On a multi-thread runtime every call gets a task at once,
    /// so one connection's handlers can run in parallel.
    inline: bool,
    /// Calls accepted in this poll, waiting for their first poll (inline mode).
    fresh: Vec<CallStream>,
    calm: Calm,
    /// GOAWAY after this long with no call open (`max_connection_idle`).
    idle: Option<IdleLimit>,
    /// GOAWAY ENHANCE_YOUR_CALM to a client that pings an idle connection too often.
    pings: Option<PingPolice>,
    /// The client sent too many PING ACKs for pings never sent, and was told so.
    acks_cut_off: bool,
}

/// Rapid reset (CVE-2023-44487) guard: streams a client opens and resets at once make the server
/// start calls it then throws away. h2 closes a connection whose reset streams pile up unaccepted
/// (20), but a server that keeps up accepts them all; so, per block of [`CALM_BLOCK`] streams,
/// a connection where the client reset more than half before their reply is closed with GOAWAY
/// ENHANCE_YOUR_CALM. A client cancelling the odd call (deadlines, hedging) is far from it.
struct Calm {
    accepted: u32,
    /// The calls' counts: resets before the reply among them.
    activity: Arc<Activity>,
}

/// Streams per rapid-reset check.
const CALM_BLOCK: u32 = 1000;

impl Calm {
    /// Counts an accepted stream; true when the block just ended and most of it was reset.
    fn too_many_resets(&mut self) -> bool {
        self.accepted += 1;
        if self.accepted < CALM_BLOCK {
            return false;
        }
        self.accepted = 0;
        self.activity.early_resets.swap(0, Ordering::Relaxed) > CALM_BLOCK / 2
    }
}

enum State<I> {
    Handshaking(Handshake<Lingering<I>, Bytes>),
    Serving(Connection<Lingering<I>, Bytes>),
}

impl<I: AsyncRead + AsyncWrite + Unpin> H2Connection<I> {
    /// Starts the handshake; `keepalive` pings the peer that often and closes the connection
    /// when a ping goes unanswered for as long; `max_idle` sends GOAWAY after that long with no
    /// call open; `ping_min_interval` polices the client's pings (`conn::pings`).
    pub(crate) fn new(
        io: I,
        builder: &h2::server::Builder,
        shared: Arc<Shared>,
        peer: Arc<Peer>,
        limits: ConnLimits,
    ) -> Self {
        let ConnLimits {
            keepalive,
            max_idle,
            ping_min_interval,
            grace,
        } = limits;
        H2Connection {
            state: State::Handshaking(builder.handshake(Lingering::new(io))),
            shared,
            peer,
            keepalive: keepalive.map(Keepalive::new),
            shutdown: false,
            inline: tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread),
            fresh: Vec::new(),
            calm: Calm {
                accepted: 0,
                activity: Arc::new(Activity::new(max_idle.is_some())),
            },
            idle: max_idle.map(|limit| IdleLimit::new(limit, grace)),
            pings: ping_min_interval.map(PingPolice::new),
            acks_cut_off: false,
        }
    }

    /// Sends GOAWAY; the connection ends once the calls it has accepted finish.
    pub(crate) fn graceful_shutdown(self: Pin<&mut Self>) {
        let this = self.get_mut();
        match &mut this.state {
            State::Serving(conn) => conn.graceful_shutdown(),
            State::Handshaking(_) => this.shutdown = true,
        }
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> Future for H2Connection<I> {
    type Output = Result<(), ConnError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            let conn = match &mut this.state {
                State::Handshaking(h) => {
                    let mut conn = ready!(Pin::new(h).poll(cx))?;
                    if this.shutdown {
                        conn.graceful_shutdown();
                    }
                    if let Some(k) = &mut this.keepalive {
                        k.ping = conn.ping_pong();
                    }
                    this.state = State::Serving(conn);
                    continue;
                }
                State::Serving(conn) => conn,
            };
            if let Some(k) = &mut this.keepalive
                && let Poll::Ready(e) = k.poll(cx)
            {
                return Poll::Ready(Err(e));
            }
            if let Some(idle) = &mut this.idle
                && let Poll::Ready(step) = idle.poll(cx, &this.calm.activity)
            {
                if step == IdleStep::GoAway {
                    debug!("connection idle for its limit; sending GOAWAY");
                    conn.graceful_shutdown();
                } else {
                    debug!("connection still open a grace period after its idle GOAWAY; closing");
                    conn.abrupt_shutdown(h2::Reason::NO_ERROR);
                }
            }
            loop {
                match conn.poll_accept(cx) {
                    Poll::Ready(Some(Ok((req, reply)))) => {
                        if let Some(p) = &mut this.pings {
                            p.call_started();
                        }
                        if this.calm.too_many_resets() {
                            debug!("most calls reset by the client before their reply; closing");
                            conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                        }
                        let call = CallStream::new(
                            call::serve(&this.shared, &this.peer, req.map(RequestBody::h2)),
                            reply,
                            this.calm.activity.clone(),
                        );
                        if this.inline {
                            this.fresh.push(call);
                        } else {
                            tokio::spawn(call);
                        }
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e.into())),
                    Poll::Ready(None) => return Poll::Ready(Ok(())),
                    Poll::Pending if this.fresh.is_empty() => {
                        if !this.acks_cut_off && conn.pongs_unsolicited() > UNSOLICITED_ACKS {
                            this.acks_cut_off = true;
                            debug!("PING ACKs for pings never sent; sending ENHANCE_YOUR_CALM");
                            conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                            continue;
                        }
                        let pings = this.pings.as_mut();
                        if pings
                            .is_some_and(|p| p.cut_off(conn.pings_received(), conn.has_streams()))
                        {
                            debug!("too many pings with no call open; sending ENHANCE_YOUR_CALM");
                            conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                            continue;
                        }
                        return Poll::Pending;
                    }
                    // Everything read so far is processed, so these calls' requests are as
                    // complete as they will be for now: run each once here, and give a task
                    // only to those that wait. The next poll_accept flushes the replies
                    // queued meanwhile in one write.
                    Poll::Pending => {
                        for mut call in this.fresh.drain(..) {
                            // A panicking handler must cost its own call only, as it would in
                            // a task of its own: not this connection and its other calls.
                            let first =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    Pin::new(&mut call).poll(cx)
                                }));
                            match first {
                                Ok(Poll::Ready(())) => {}
                                Ok(Poll::Pending) => {
                                    tokio::spawn(call);
                                }
                                Err(_) => {
                                    warn!("a handler panicked; its stream is reset");
                                    call.reset(h2::Reason::INTERNAL_ERROR);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Server-side keepalive: a PING every interval; no PONG within the interval closes the connection.
struct Keepalive {
    interval: Duration,
    ping: Option<PingPong>,
    timer: Pin<Box<Sleep>>,
    waiting: bool,
}

impl Keepalive {
    fn new(interval: Duration) -> Self {
        Keepalive {
            interval,
            ping: None,
            timer: Box::pin(tokio::time::sleep(interval)),
            waiting: false,
        }
    }

    /// Ready with an error when the peer stopped answering.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<ConnError> {
        let Some(ping) = &mut self.ping else {
            return Poll::Pending;
        };
        loop {
            if self.waiting {
                match ping.poll_pong(cx) {
                    Poll::Ready(Ok(_)) => {
                        self.waiting = false;
                        self.timer.as_mut().reset(Instant::now() + self.interval);
                    }
                    // The connection itself failed; poll_accept reports it.
                    Poll::Ready(Err(_)) => return Poll::Pending,
                    Poll::Pending => {
                        ready!(self.timer.as_mut().poll(cx));
                        return Poll::Ready(ConnError::Keepalive(self.interval));
                    }
                }
            }
            ready!(self.timer.as_mut().poll(cx));
            if ping.send_ping(Ping::opaque()).is_err() {
                return Poll::Pending;
            }
            self.waiting = true;
            self.timer.as_mut().reset(Instant::now() + self.interval);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calm_closes_only_a_block_mostly_reset() {
        let mut calm = Calm {
            accepted: 0,
            activity: Arc::new(Activity::new(false)),
        };
        // A block where most streams were reset before their reply: judged at its end.
        calm.activity
            .early_resets
            .store(CALM_BLOCK / 2 + 1, Ordering::Relaxed);
        assert!((1..CALM_BLOCK).all(|_| !calm.too_many_resets()));
        assert!(calm.too_many_resets());
        // The count starts again: a block with a few cancellations passes.
        calm.activity
            .early_resets
            .store(CALM_BLOCK / 10, Ordering::Relaxed);
        assert!((0..CALM_BLOCK).all(|_| !calm.too_many_resets()));
        // Exactly half is not "most".
        calm.activity
            .early_resets
            .store(CALM_BLOCK / 2, Ordering::Relaxed);
        assert!((0..CALM_BLOCK).all(|_| !calm.too_many_resets()));
    }
}
