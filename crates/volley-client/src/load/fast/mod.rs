//! The load engine's fast path for unary and streaming calls: an HTTP/2 client written for
//! one job, where the h2 crate's per-stream machinery (a stream store behind a lock, a task wake
//! per frame, HPACK encoding per call) was most of `volley bench`'s cost per call
//! (docs/benchmarks-history.md, "The generator at the limit: where `volley bench`'s CPU went").
//! Written here, not taken from a crate, because that cost is the point.
//!
//! One connection is two local tasks on the caller's thread (a `LocalSet`): the reader parses
//! frames in place and settles calls, the writer sends what calls appended to one buffer, once
//! per wake (`io`). A call appends its HEADERS (a block encoded once per call head:
//! `frame::HeaderBlock`) and its DATA, and waits on its slot (`state`). Handled: SETTINGS
//! (concurrency, windows, frame size, ACK), PING (ACK; with keepalive, PINGs of our own:
//! `keepalive`), GOAWAY (calls past its last stream fail as never seen, no new calls),
//! RST_STREAM, CONTINUATION, padding, flow control both ways (request bodies wait for the
//! server's windows; receive windows are opened wide and topped up). Reply header blocks are
//! decoded by `hpack` (our own, keeping the connection's dynamic table). Server streams have their messages counted
//! as they come (`stream`); client and bidi streams send their messages one DATA frame each as
//! the caller gives them (`client_stream`). Not handled: server push (refused by SETTINGS). A
//! call the server never saw is sent once more on a new connection (`redial`).

mod address;
mod client_stream;
mod count;
mod error;
pub mod frame;
mod headers;
mod hpack;
mod io;
mod keepalive;
mod redial;
mod state;
mod stream;

use std::{cell::RefCell, future::poll_fn, rc::Rc};

use bytes::Bytes;
use tokio::sync::Notify;
use volley_wire::Status;

pub use client_stream::OpenStream;
pub use count::StreamReply;
pub use redial::Redialing;

use self::{error::CallError, frame::HeaderBlock, state::Inner};
use crate::UnaryReply;

/// One HTTP/2 connection on the fast path (single-threaded: use it on the thread that made it).
/// When its last clone is dropped, its socket is shut once its calls are settled.
#[derive(Clone)]
pub struct FastConnection {
    inner: Rc<RefCell<Inner>>,
    write: Rc<Notify>,
    _owner: Rc<Owner>,
}

/// Closes the connection when the last handle goes.
struct Owner {
    inner: Rc<RefCell<Inner>>,
    write: Rc<Notify>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.inner
            .borrow_mut()
            .refuse_new(CallError::Failed(Status::unavailable(
                "the client closed the connection",
            )));
        self.write.notify_one();
    }
}

impl FastConnection {
    /// A handle on a fresh connection's state (its tasks are started by the handshake).
    fn new() -> FastConnection {
        let inner = Rc::new(RefCell::new(Inner::new()));
        let write = Rc::new(Notify::new());
        FastConnection {
            inner: inner.clone(),
            write: write.clone(),
            _owner: Rc::new(Owner { inner, write }),
        }
    }

    /// Whether it takes no new calls (GOAWAY, a closed socket, a protocol error).
    pub fn is_closed(&self) -> bool {
        self.inner.borrow().is_closed()
    }

    /// Whether the server has answered a call on it (a reply ended, whatever its status).
    pub(crate) fn replied(&self) -> bool {
        self.inner.borrow().replied()
    }

    /// Calls open or waiting for room on it, and whether they fill the server's
    /// MAX_CONCURRENT_STREAMS.
    pub(crate) fn load(&self) -> (usize, bool) {
        self.inner.borrow().load()
    }

    /// Why it takes no new calls, if it does not.
    pub(crate) fn closed_by(&self) -> Option<CallError> {
        self.inner.borrow().closed_by()
    }

    /// One unary call: `block` then `body` (a framed message, sent in as many DATA frames as it needs), and
    /// the reply read to its status.
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        self.call(block, body).await.map_err(CallError::into_status)
    }

    /// [`Self::unary`], saying with a failure whether the server never saw the call.
    pub(crate) async fn call(
        &self,
        block: &HeaderBlock,
        body: Bytes,
    ) -> Result<UnaryReply, CallError> {
        // Wait for room under the server's concurrency limit.
        poll_fn(|cx| self.inner.borrow_mut().poll_room(cx)).await?;
        let id = self.inner.borrow_mut().start(block, body, None)?;
        self.write.notify_one();
        // The slot is given up if the call is dropped (a deadline): its stream is reset.
        let guard = SlotGuard { conn: self, id };
        let result = poll_fn(|cx| self.inner.borrow_mut().poll_settled(id, cx)).await;
        std::mem::forget(guard);
        result
    }
}

/// Gives a call's slot up when its future is dropped before the reply (a deadline, the end of
/// `-z`): the stream is reset with CANCEL, as grpc-go and the h2 crate do.
struct SlotGuard<'a> {
    conn: &'a FastConnection,
    id: u32,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let reset = self.conn.inner.borrow_mut().abandon(self.id);
        if reset {
            self.conn.write.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    //! Frame-level checks against a scripted server on an in-memory pipe.
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use volley_wire::{
        Code,
        h2::{Head, PREFACE, flag, kind, setting, write},
    };

    /// The server's end: reads the client's frames, writes crafted ones.
    pub(super) struct Server {
        io: DuplexStream,
        enc: fluke_hpack::Encoder<'static>,
    }

    impl Server {
        pub(super) async fn frame(&mut self) -> (Head, Vec<u8>) {
            let mut h = [0u8; 9];
            self.io.read_exact(&mut h).await.unwrap();
            let head = Head::read(&h);
            let mut p = vec![0u8; head.len];
            self.io.read_exact(&mut p).await.unwrap();
            (head, p)
        }

        /// The next frame of `kind`, skipping others (SETTINGS ACKs, WINDOW_UPDATEs).
        pub(super) async fn next(&mut self, want: u8) -> (Head, Vec<u8>) {
            loop {
                let f = self.frame().await;
                if f.0.kind == want {
                    return f;
                }
            }
        }

        pub(super) async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
            let mut out = Vec::new();
            write(&mut out, kind, flags, stream, payload);
            self.io.write_all(&out).await.unwrap();
        }

        pub(super) fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
            self.enc
                .encode(fields.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())))
        }

        /// A whole OK reply on `stream`: headers, one message, trailers.
        pub(super) async fn ok(&mut self, stream: u32) {
            let h = self.block(&[(":status", "200"), ("content-type", "application/grpc")]);
            self.send(kind::HEADERS, flag::END_HEADERS, stream, &h)
                .await;
            self.send(kind::DATA, 0, stream, &[0, 0, 0, 0, 1, 7]).await;
            let t = self.block(&[("grpc-status", "0")]);
            self.send(
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                stream,
                &t,
            )
            .await;
        }
    }

    /// A connection and its server, with the preface read and `settings` sent.
    pub(super) async fn pair(settings: &[(u16, u32)]) -> (FastConnection, Server) {
        let (client, server) = tokio::io::duplex(1 << 20);
        let mut s = Server {
            io: server,
            enc: fluke_hpack::Encoder::new(),
        };
        // The server's SETTINGS first: the handshake waits for them.
        let mut p = Vec::new();
        for (id, v) in settings {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        s.send(kind::SETTINGS, 0, 0, &p).await;
        let conn = FastConnection::handshake(client).await.unwrap();
        let mut preface = [0u8; 24];
        s.io.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface, PREFACE);
        (conn, s)
    }

    #[tokio::test]
    async fn a_server_that_does_not_answer_with_settings_is_refused() {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        server
            .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap();
        let e = FastConnection::handshake(client).await.err().unwrap();
        assert_eq!(
            e.message(),
            "connection error: the server's first frame is not SETTINGS"
        );
    }

    pub(super) fn block() -> HeaderBlock {
        HeaderBlock::of(&crate::CallHead::new("http", "x:1", "/a.B/C", &[], None, false).unwrap())
    }

    pub(super) fn body() -> Bytes {
        Bytes::from_static(&[0, 0, 0, 0, 0])
    }

    pub(super) async fn local<F: std::future::Future>(f: F) -> F::Output {
        tokio::task::LocalSet::new().run_until(f).await
    }

    #[tokio::test]
    async fn a_header_block_over_the_frame_size_goes_out_with_continuation() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            // 40 KB of metadata: HEADERS and two CONTINUATION frames of at most 16 KiB each.
            let big = "v".repeat(40_000);
            let block = block().with_metadata(&[(
                http::HeaderName::from_static("x-big"),
                http::HeaderValue::from_str(&big).unwrap(),
            )]);
            let want = block.0.clone();
            let call = tokio::task::spawn_local(async move { conn.unary(&block, body()).await });
            let (h, first) = s.next(kind::HEADERS).await;
            assert_eq!(h.flags & flag::END_HEADERS, 0);
            assert_eq!(first.len(), 16_384);
            let mut got = first;
            loop {
                let (c, part) = s.frame().await;
                assert_eq!(c.kind, kind::CONTINUATION);
                assert_eq!(c.stream, h.stream);
                assert!(part.len() <= 16_384);
                got.extend_from_slice(&part);
                if c.flags & flag::END_HEADERS != 0 {
                    break;
                }
            }
            assert_eq!(got, want);
            let fields = fluke_hpack::Decoder::new().decode(&got).unwrap();
            assert!(
                fields
                    .iter()
                    .any(|(k, v)| k == b"x-big" && v.len() == 40_000)
            );
            s.ok(h.stream).await;
            assert_eq!(call.await.unwrap().unwrap().bytes, 6);
        })
        .await;
    }

    #[tokio::test]
    async fn the_servers_concurrency_limit_holds_calls_back() {
        local(async {
            let (conn, mut s) = pair(&[(setting::MAX_CONCURRENT_STREAMS, 1)]).await;
            // Let the SETTINGS be read before the calls go.
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let calls: Vec<_> = (0..3)
                .map(|_| {
                    let c = conn.clone();
                    tokio::task::spawn_local(async move { c.unary(&block(), body()).await })
                })
                .collect();
            for id in [1, 3, 5] {
                let (h, _) = s.next(kind::HEADERS).await;
                assert_eq!(h.stream, id, "one call at a time, in order");
                // Nothing else comes before this call is answered.
                let quiet = tokio::time::timeout(
                    std::time::Duration::from_millis(50),
                    s.next(kind::HEADERS),
                )
                .await;
                assert!(quiet.is_err(), "a second call went past the limit");
                s.ok(id).await;
            }
            for c in calls {
                assert_eq!(c.await.unwrap().unwrap().bytes, 6);
            }
        })
        .await;
    }

    #[tokio::test]
    async fn goaway_fails_the_calls_past_its_last_stream_and_new_ones() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let a = {
                let c = conn.clone();
                tokio::task::spawn_local(async move { c.unary(&block(), body()).await })
            };
            let b = {
                let c = conn.clone();
                tokio::task::spawn_local(async move { c.unary(&block(), body()).await })
            };
            s.next(kind::HEADERS).await;
            s.next(kind::HEADERS).await;
            s.send(kind::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]).await;
            let e = b.await.unwrap().unwrap_err();
            assert_eq!(e.code(), Code::Unavailable);
            assert_eq!(e.message(), "transport is closing");
            s.ok(1).await;
            assert!(a.await.unwrap().is_ok(), "stream 1 was let through");
            let e = conn.unary(&block(), body()).await.unwrap_err();
            assert_eq!(e.message(), "transport is closing");
        })
        .await;
    }

    #[tokio::test]
    async fn split_padded_and_reset_replies_and_a_ping() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let calls: Vec<_> = (0..3)
                .map(|_| {
                    let c = conn.clone();
                    tokio::task::spawn_local(async move { c.unary(&block(), body()).await })
                })
                .collect();
            for _ in 0..3 {
                s.next(kind::HEADERS).await;
            }
            // Stream 1: trailers-only, split over HEADERS and CONTINUATION, with a status.
            let t = s.block(&[
                (":status", "200"),
                ("grpc-status", "5"),
                ("grpc-message", "no such user"),
            ]);
            let (x, y) = t.split_at(t.len() / 2);
            s.send(kind::HEADERS, flag::END_STREAM, 1, x).await;
            s.send(kind::CONTINUATION, flag::END_HEADERS, 1, y).await;
            // Stream 3: padded DATA.
            let h = s.block(&[(":status", "200")]);
            s.send(kind::HEADERS, flag::END_HEADERS, 3, &h).await;
            s.send(kind::DATA, flag::PADDED, 3, &[3, 0, 0, 0, 0, 1, 9, 0, 0, 0])
                .await;
            let t = s.block(&[("grpc-status", "0")]);
            s.send(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &t)
                .await;
            // Stream 5: refused.
            s.send(kind::RST_STREAM, 0, 5, &7u32.to_be_bytes()).await;
            s.send(kind::PING, 0, 0, b"12345678").await;
            let (h, p) = s.next(kind::PING).await;
            assert_eq!((h.flags, p.as_slice()), (flag::ACK, &b"12345678"[..]));
            let mut results = Vec::new();
            for c in calls {
                results.push(c.await.unwrap());
            }
            let e = results[0].as_ref().unwrap_err();
            assert_eq!((e.code(), e.message()), (Code::NotFound, "no such user"));
            assert_eq!(results[1].as_ref().unwrap().bytes, 6);
            let e = results[2].as_ref().unwrap_err();
            assert_eq!(e.code(), Code::Unavailable);
            assert!(e.message().contains("REFUSED_STREAM"), "{e}");
        })
        .await;
    }

    #[tokio::test]
    async fn a_protocol_error_fails_every_call_in_one_status() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let a = {
                let c = conn.clone();
                tokio::task::spawn_local(async move { c.unary(&block(), body()).await })
            };
            s.next(kind::HEADERS).await;
            s.send(kind::CONTINUATION, flag::END_HEADERS, 1, &[0x82])
                .await;
            // A connection error: UNAVAILABLE, as grpc-go and the h2-crate path say it.
            let e = a.await.unwrap().unwrap_err();
            assert_eq!(e.code(), Code::Unavailable);
            assert_eq!(
                e.message(),
                "connection error: a CONTINUATION frame without HEADERS"
            );
            assert_eq!(
                conn.unary(&block(), body()).await.unwrap_err().message(),
                "connection error: a CONTINUATION frame without HEADERS"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn data_waits_for_the_connections_window() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let big = Bytes::from(vec![0u8; 16_000]);
            let calls: Vec<_> = (0..5)
                .map(|_| {
                    let (c, b) = (conn.clone(), big.clone());
                    tokio::task::spawn_local(async move { c.unary(&block(), b).await })
                })
                .collect();
            // 65,535 bytes of window: four DATA frames of 16,000 go, then the window's last
            // 1,535 bytes of the fifth, not ending its stream; the rest waits.
            let mut sent = 0;
            for _ in 0..4 {
                sent += s.next(kind::DATA).await.0.len;
            }
            assert_eq!(sent, 64_000);
            let (h, _) = s.next(kind::DATA).await;
            assert_eq!((h.len, h.flags & flag::END_STREAM), (1_535, 0));
            let early =
                tokio::time::timeout(std::time::Duration::from_millis(50), s.next(kind::DATA))
                    .await;
            assert!(early.is_err(), "DATA past the window");
            s.send(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes())
                .await;
            let (h, _) = s.next(kind::DATA).await;
            assert_eq!(
                (h.len, h.flags & flag::END_STREAM),
                (14_465, flag::END_STREAM)
            );
            for id in [1, 3, 5, 7, 9] {
                s.ok(id).await;
            }
            for c in calls {
                assert!(c.await.unwrap().is_ok());
            }
        })
        .await;
    }

    #[tokio::test]
    async fn a_body_over_the_frame_size_and_the_streams_window_goes_in_parts() {
        local(async {
            let (conn, mut s) = pair(&[(setting::INITIAL_WINDOW_SIZE, 40_000)]).await;
            s.send(kind::WINDOW_UPDATE, 0, 0, &1_000_000u32.to_be_bytes())
                .await;
            let big: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
            let body = Bytes::from(big.clone());
            let call = tokio::task::spawn_local(async move { conn.unary(&block(), body).await });
            // Frames of at most 16,384 bytes, up to the stream's 40,000, no END_STREAM.
            let mut got = Vec::new();
            while got.len() < 40_000 {
                let (h, p) = s.next(kind::DATA).await;
                assert!(h.len <= 16_384 && h.flags & flag::END_STREAM == 0);
                got.extend_from_slice(&p);
            }
            assert_eq!(got.len(), 40_000);
            let early =
                tokio::time::timeout(std::time::Duration::from_millis(50), s.next(kind::DATA))
                    .await;
            assert!(early.is_err(), "DATA past the stream's window");
            // A larger initial window opens the stream by the difference (RFC 9113 §6.9.2),
            // then its own WINDOW_UPDATE the rest.
            let mut p = Vec::new();
            p.extend_from_slice(&setting::INITIAL_WINDOW_SIZE.to_be_bytes());
            p.extend_from_slice(&50_000u32.to_be_bytes());
            s.send(kind::SETTINGS, 0, 0, &p).await;
            while got.len() < 50_000 {
                got.extend_from_slice(&s.next(kind::DATA).await.1);
            }
            s.send(kind::WINDOW_UPDATE, 0, 1, &50_000u32.to_be_bytes())
                .await;
            loop {
                let (h, p) = s.next(kind::DATA).await;
                got.extend_from_slice(&p);
                if h.flags & flag::END_STREAM != 0 {
                    break;
                }
            }
            assert_eq!(got, big);
            s.ok(1).await;
            assert!(call.await.unwrap().is_ok());
        })
        .await;
    }

    #[tokio::test]
    async fn keepalive_pings_and_an_unanswered_one_fails_the_connection() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let every = std::time::Duration::from_millis(50);
            tokio::task::spawn_local(keepalive::keepalive(
                std::rc::Rc::downgrade(&conn.inner),
                conn.write.clone(),
                every,
            ));
            // Answered PINGs keep it open, calls go on.
            for _ in 0..2 {
                let (h, p) = s.next(kind::PING).await;
                assert_eq!((h.flags, p.as_slice()), (0, &b"vly-keep"[..]));
                s.send(kind::PING, flag::ACK, 0, &p).await;
            }
            let c = conn.clone();
            let call = tokio::task::spawn_local(async move { c.unary(&block(), body()).await });
            let (h, _) = s.next(kind::HEADERS).await;
            s.ok(h.stream).await;
            assert_eq!(call.await.unwrap().unwrap().bytes, 6);
            assert!(!conn.is_closed());
            // An ACK with another payload answers nothing; the call waiting then fails, and the
            // connection takes no more.
            let c = conn.clone();
            let call = tokio::task::spawn_local(async move { c.unary(&block(), body()).await });
            let (_, p) = s.next(kind::PING).await;
            assert_eq!(p.as_slice(), b"vly-keep");
            s.send(kind::PING, flag::ACK, 0, b"12345678").await;
            let e = call.await.unwrap().unwrap_err();
            assert_eq!(e.code(), Code::Unavailable);
            assert_eq!(
                e.message(),
                "connection error: keepalive ping not answered within 50ms"
            );
            assert!(conn.is_closed());
        })
        .await;
    }

    /// A server-streaming call on `conn`, running on the test's `LocalSet`.
    fn stream(
        conn: &FastConnection,
        limit: u64,
        deadline: Option<std::time::Instant>,
    ) -> tokio::task::JoinHandle<Result<StreamReply, Status>> {
        let c = conn.clone();
        tokio::task::spawn_local(
            async move { c.server_stream(&block(), body(), limit, deadline).await },
        )
    }

    #[tokio::test]
    async fn a_server_stream_counts_messages_across_frames_and_stops_where_asked() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            // Three messages: the first split over two DATA frames, two in one frame.
            let call = stream(&conn, 0, None);
            let (h, _) = s.next(kind::HEADERS).await;
            let head = s.block(&[(":status", "200"), ("content-type", "application/grpc")]);
            s.send(kind::HEADERS, flag::END_HEADERS, h.stream, &head)
                .await;
            s.send(kind::DATA, 0, h.stream, &[0, 0, 0, 0, 2, 1]).await;
            s.send(
                kind::DATA,
                0,
                h.stream,
                &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9],
            )
            .await;
            let t = s.block(&[("grpc-status", "0")]);
            s.send(
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                h.stream,
                &t,
            )
            .await;
            let r = call.await.unwrap().unwrap();
            assert_eq!(r.messages, 3);
            assert!(r.first_message.is_some());

            // A limit of two: OK after the second, the stream reset.
            let call = stream(&conn, 2, None);
            let (h, _) = s.next(kind::HEADERS).await;
            s.send(kind::HEADERS, flag::END_HEADERS, h.stream, &head)
                .await;
            s.send(kind::DATA, 0, h.stream, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 5])
                .await;
            assert_eq!(call.await.unwrap().unwrap().messages, 2);
            let (rst, p) = s.next(kind::RST_STREAM).await;
            assert_eq!(
                (rst.stream, p.as_slice()),
                (h.stream, &8u32.to_be_bytes()[..])
            );

            // A deadline: OK with what came, the stream reset.
            let at = std::time::Instant::now() + std::time::Duration::from_millis(50);
            let call = stream(&conn, 0, Some(at));
            let (h, _) = s.next(kind::HEADERS).await;
            s.send(kind::HEADERS, flag::END_HEADERS, h.stream, &head)
                .await;
            s.send(kind::DATA, 0, h.stream, &[0, 0, 0, 0, 0]).await;
            assert_eq!(call.await.unwrap().unwrap().messages, 1);
            let (rst, _) = s.next(kind::RST_STREAM).await;
            assert_eq!(rst.stream, h.stream);

            // A failed stream is the server's status, not a count.
            let call = stream(&conn, 0, None);
            let (h, _) = s.next(kind::HEADERS).await;
            let t = s.block(&[(":status", "200"), ("grpc-status", "5")]);
            s.send(
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                h.stream,
                &t,
            )
            .await;
            assert_eq!(call.await.unwrap().unwrap_err().code(), Code::NotFound);
        })
        .await;
    }

    #[tokio::test]
    async fn a_reply_larger_than_the_first_read_buffer_is_read_whole() {
        // Sixteen full frames in one write: the reader's buffer (32 KiB at first) grows as
        // reads fill it, and every frame is parsed.
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let c = conn.clone();
            let call = tokio::task::spawn_local(async move { c.unary(&block(), body()).await });
            let (h, _) = s.next(kind::HEADERS).await;
            let head = s.block(&[(":status", "200")]);
            let trailers = s.block(&[("grpc-status", "0")]);
            let mut all = Vec::new();
            write(&mut all, kind::HEADERS, flag::END_HEADERS, h.stream, &head);
            for _ in 0..16 {
                write(&mut all, kind::DATA, 0, h.stream, &[7; 16_384]);
            }
            write(
                &mut all,
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                h.stream,
                &trailers,
            );
            s.io.write_all(&all).await.unwrap();
            assert_eq!(call.await.unwrap().unwrap().bytes, 16 * 16_384);
        })
        .await;
    }
}
