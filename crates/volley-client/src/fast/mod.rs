//! The load engine's fast path for unary calls: an HTTP/2 client written for one job, where the
//! h2 crate's per-stream machinery (a stream store behind a lock, a task wake per frame, HPACK
//! encoding per call) was most of `volley bench`'s cost per call (BENCHMARKS.md, "The generator
//! at the limit"). Written here, not taken from a crate, because that cost is the point.
//!
//! One connection is two local tasks on the caller's thread (a `LocalSet`): the reader parses
//! frames in place and settles calls, the writer sends what calls appended to one buffer, once
//! per wake. A call appends its HEADERS (a block encoded once per call head: `frame::HeaderBlock`)
//! and its DATA, and waits on its slot. Handled: SETTINGS (concurrency, windows, frame size, ACK),
//! PING (ACK), GOAWAY (calls past its last stream fail as never seen, no new calls), RST_STREAM,
//! CONTINUATION, padding, flow control both ways (the connection's send window is respected;
//! receive windows are opened wide and topped up). Reply header blocks are decoded by
//! fluke-hpack, keeping its dynamic table. Not handled, and left to the h2-crate path: streams,
//! request bodies over one frame, server push (refused by SETTINGS).

pub mod frame;

use std::{
    cell::RefCell,
    collections::VecDeque,
    future::poll_fn,
    rc::Rc,
    task::{Poll, Waker},
};

use bytes::Bytes;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    sync::Notify,
};
use volley_wire::{Code, Status};

use crate::UnaryReply;
use frame::{Head, HeaderBlock, MAX_WINDOW, PREFACE, flag, kind, setting};

/// Receive-window bytes consumed before the connection's window is topped up.
const TOP_UP: u32 = 1 << 30;

/// The largest frame the server may send us (we do not raise SETTINGS_MAX_FRAME_SIZE).
const MAX_FRAME_IN: usize = 16_384;

/// What a call's slot holds.
enum Slot {
    /// Sent; the reply is coming.
    Waiting {
        waker: Option<Waker>,
        http_status: u16,
        grpc: Option<(Code, String)>,
        bytes: usize,
    },
    /// Settled.
    Done(Result<UnaryReply, Status>),
    /// Its caller has the result (or went away).
    Gone,
}

struct Inner {
    /// Frames to send.
    out: Vec<u8>,
    /// Slots of streams `first_id`, `first_id + 2`, ...
    slots: VecDeque<Slot>,
    first_id: u32,
    next_id: u32,
    /// Calls sent and not settled.
    open: u32,
    max_open: u32,
    /// Calls waiting for `open < max_open`.
    waiting_room: VecDeque<Waker>,
    /// The server's windows for what we send.
    send_window: i64,
    stream_window: i64,
    max_frame: usize,
    /// DATA frames waiting for the connection's send window: stream, body.
    blocked: VecDeque<(u32, Bytes)>,
    /// Received DATA bytes not yet returned to the server by WINDOW_UPDATE.
    consumed: u32,
    /// A header block being read (HEADERS, then CONTINUATION), and its stream and flags.
    partial: Option<(u32, u8, Vec<u8>)>,
    decoder: fluke_hpack::Decoder<'static>,
    /// Set when the connection cannot take new calls, with why.
    closed: Option<Status>,
    /// The highest stream a GOAWAY let through.
    goaway_last: Option<u32>,
}

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
            .closed
            .get_or_insert(Status::unavailable("the client closed the connection"));
        self.write.notify_one();
    }
}

fn stream_status(code: u32) -> Status {
    match code {
        0x8 => Status::cancelled("grpc: the server cancelled the stream"),
        0x7 => Status::unavailable("the server refused the stream (REFUSED_STREAM)"),
        c => Status::internal(format!(
            "stream terminated by RST_STREAM with error code: {}",
            h2::Reason::from(c).description()
        )),
    }
}

impl Inner {
    fn slot(&mut self, id: u32) -> Option<&mut Slot> {
        if id < self.first_id || id % 2 == 0 {
            return None;
        }
        self.slots.get_mut(((id - self.first_id) / 2) as usize)
    }

    fn settle(&mut self, id: u32, result: Result<UnaryReply, Status>) {
        let Some(slot) = self.slot(id) else { return };
        if let Slot::Waiting { waker, .. } = slot {
            let waker = waker.take();
            *slot = Slot::Done(result);
            self.open -= 1;
            if let Some(w) = waker {
                w.wake();
            }
            if let Some(w) = self.waiting_room.pop_front() {
                w.wake();
            }
        }
    }

    /// Drops settled slots from the front.
    fn trim(&mut self) {
        while matches!(self.slots.front(), Some(Slot::Gone)) {
            self.slots.pop_front();
            self.first_id += 2;
        }
    }

    /// Fails every open call, and every later one, with `status`.
    fn close(&mut self, status: Status) {
        let ids: Vec<u32> = (0..self.slots.len() as u32)
            .map(|k| self.first_id + 2 * k)
            .collect();
        for id in ids {
            self.settle(id, Err(status.clone()));
        }
        self.closed.get_or_insert(status);
        for w in self.waiting_room.drain(..) {
            w.wake();
        }
    }

    fn send_data(&mut self, stream: u32, body: Bytes) {
        if self.blocked.is_empty() && body.len() as i64 <= self.send_window {
            self.send_window -= body.len() as i64;
            frame::write(&mut self.out, kind::DATA, flag::END_STREAM, stream, &body);
        } else {
            self.blocked.push_back((stream, body));
        }
    }

    fn unblock(&mut self) {
        while let Some((_, body)) = self.blocked.front() {
            if body.len() as i64 > self.send_window {
                break;
            }
            let (stream, body) = self.blocked.pop_front().expect("a front");
            self.send_window -= body.len() as i64;
            frame::write(&mut self.out, kind::DATA, flag::END_STREAM, stream, &body);
        }
    }

    /// Handles every whole frame at the front of `bytes`; returns how many bytes they took, or
    /// the status of a connection error.
    fn parse(&mut self, bytes: &[u8]) -> Result<usize, Status> {
        let mut at = 0;
        while bytes.len() - at >= 9 {
            let h = Head::read(&bytes[at..at + 9]);
            if h.len > MAX_FRAME_IN {
                return Err(Status::internal("a frame over the 16,384-byte limit"));
            }
            if bytes.len() - at < 9 + h.len {
                break;
            }
            self.on_frame(h, &bytes[at + 9..at + 9 + h.len])?;
            at += 9 + h.len;
        }
        Ok(at)
    }

    /// One frame from the server. Returns a connection error's status, if it is one.
    fn on_frame(&mut self, h: Head, p: &[u8]) -> Result<(), Status> {
        match h.kind {
            kind::DATA => {
                let pad = padding(h, p)?;
                self.consumed += h.len as u32;
                if let Some(Slot::Waiting { bytes, .. }) = self.slot(h.stream) {
                    *bytes += p.len() - pad.0 - pad.1;
                }
                if self.consumed >= TOP_UP {
                    frame::write(
                        &mut self.out,
                        kind::WINDOW_UPDATE,
                        0,
                        0,
                        &self.consumed.to_be_bytes(),
                    );
                    self.consumed = 0;
                }
                if h.flags & flag::END_STREAM != 0 {
                    self.end(h.stream);
                }
            }
            kind::HEADERS => {
                let (front, back) = padding(h, p)?;
                let skip = front + if h.flags & flag::PRIORITY != 0 { 5 } else { 0 };
                if skip + back > p.len() {
                    return Err(Status::internal("a HEADERS frame shorter than its padding"));
                }
                let block = p[skip..p.len() - back].to_vec();
                self.partial = Some((h.stream, h.flags, block));
                if h.flags & flag::END_HEADERS != 0 {
                    self.headers_done()?;
                }
            }
            kind::CONTINUATION => {
                let Some((stream, _, block)) = &mut self.partial else {
                    return Err(Status::internal("a CONTINUATION frame without HEADERS"));
                };
                if *stream != h.stream {
                    return Err(Status::internal("a CONTINUATION frame on another stream"));
                }
                block.extend_from_slice(p);
                if h.flags & flag::END_HEADERS != 0 {
                    self.headers_done()?;
                }
            }
            kind::RST_STREAM if p.len() == 4 => {
                let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                self.settle(h.stream, Err(stream_status(code)));
            }
            kind::SETTINGS if h.flags & flag::ACK == 0 => {
                if p.len() % 6 != 0 {
                    return Err(Status::internal("a SETTINGS frame of a bad length"));
                }
                for s in p.chunks(6) {
                    let id = u16::from_be_bytes([s[0], s[1]]);
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    match id {
                        setting::MAX_CONCURRENT_STREAMS => self.max_open = v,
                        setting::INITIAL_WINDOW_SIZE => self.stream_window = i64::from(v),
                        setting::MAX_FRAME_SIZE => {
                            self.max_frame = (v as usize).clamp(16_384, 16_777_215);
                        }
                        _ => {}
                    }
                }
                frame::write(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
                for w in self.waiting_room.drain(..) {
                    w.wake();
                }
            }
            kind::PING if h.flags & flag::ACK == 0 && p.len() == 8 => {
                frame::write(&mut self.out, kind::PING, flag::ACK, 0, p);
            }
            kind::GOAWAY if p.len() >= 8 => {
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                self.goaway_last = Some(last);
                let beyond: Vec<u32> = (0..self.slots.len() as u32)
                    .map(|k| self.first_id + 2 * k)
                    .filter(|id| *id > last)
                    .collect();
                for id in beyond {
                    self.settle(id, Err(Status::unavailable("transport is closing")));
                }
                self.closed
                    .get_or_insert(Status::unavailable("transport is closing"));
            }
            kind::WINDOW_UPDATE if p.len() == 4 => {
                let inc = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                if h.stream == 0 {
                    self.send_window += i64::from(inc);
                    self.unblock();
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn headers_done(&mut self) -> Result<(), Status> {
        let (stream, flags, block) = self.partial.take().expect("a header block");
        let (mut http_status, mut grpc_code, mut message) = (None, None, None);
        self.decoder
            .decode_with_cb(&block, |k, v| match &k[..] {
                b":status" => {
                    http_status = std::str::from_utf8(&v).ok().and_then(|s| s.parse().ok());
                }
                b"grpc-status" => {
                    grpc_code = std::str::from_utf8(&v)
                        .ok()
                        .and_then(|s| s.parse::<i32>().ok())
                        .map(Code::from_i32);
                }
                b"grpc-message" => message = Some(String::from_utf8_lossy(&v).into_owned()),
                _ => {}
            })
            .map_err(|e| Status::internal(format!("a reply's headers do not decode: {e:?}")))?;
        if let Some(Slot::Waiting {
            http_status: hs,
            grpc,
            ..
        }) = self.slot(stream)
        {
            if let Some(s) = http_status {
                *hs = s;
            }
            if let Some(c) = grpc_code {
                *grpc = Some((c, message.unwrap_or_default()));
            }
        }
        if flags & flag::END_STREAM != 0 {
            self.end(stream);
        }
        Ok(())
    }

    /// The server ended stream `id`: its call is settled by what its headers said.
    fn end(&mut self, id: u32) {
        let Some(Slot::Waiting {
            http_status,
            grpc,
            bytes,
            ..
        }) = self.slot(id)
        else {
            return;
        };
        let result = match (*http_status, grpc.take()) {
            (200, Some((Code::Ok, _))) => Ok(UnaryReply { bytes: *bytes }),
            (200, Some((code, message))) => Err(Status::new(code, message)),
            (200, None) => Err(Status::internal(
                "server closed the stream without sending trailers",
            )),
            (s, _) => Err(Status::new(
                crate::call::code_for_http_status(s),
                format!("unexpected HTTP status code received from server: {s}"),
            )),
        };
        self.settle(id, result);
    }
}

/// A padded frame's (front, back) padding lengths.
fn padding(h: Head, p: &[u8]) -> Result<(usize, usize), Status> {
    if h.flags & flag::PADDED == 0 {
        return Ok((0, 0));
    }
    let pad = usize::from(
        *p.first()
            .ok_or_else(|| Status::internal("a padded frame with no pad length"))?,
    );
    if pad + 1 > p.len() {
        return Err(Status::internal("a frame shorter than its padding"));
    }
    Ok((1, pad))
}

impl FastConnection {
    /// Speaks HTTP/2 over `io` (after TLS, if any): sends the preface and SETTINGS, and starts
    /// the connection's reader and writer on this thread's `LocalSet`.
    pub async fn handshake<IO>(io: IO) -> Result<FastConnection, Status>
    where
        IO: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let (mut rd, mut wr) = tokio::io::split(io);
        let mut hello = Vec::with_capacity(64);
        hello.extend_from_slice(PREFACE);
        let mut settings = Vec::new();
        for (id, v) in [
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
        ] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&v.to_be_bytes());
        }
        frame::write(&mut hello, kind::SETTINGS, 0, 0, &settings);
        frame::write(
            &mut hello,
            kind::WINDOW_UPDATE,
            0,
            0,
            &(MAX_WINDOW - 65_535).to_be_bytes(),
        );
        wr.write_all(&hello)
            .await
            .map_err(|e| Status::unavailable(format!("connection error: {e}")))?;
        let inner = Inner {
            out: Vec::with_capacity(64 * 1024),
            slots: VecDeque::new(),
            first_id: 1,
            next_id: 1,
            open: 0,
            // Until the server's SETTINGS say otherwise.
            max_open: 100,
            waiting_room: VecDeque::new(),
            send_window: 65_535,
            stream_window: 65_535,
            max_frame: 16_384,
            blocked: VecDeque::new(),
            consumed: 0,
            partial: None,
            decoder: fluke_hpack::Decoder::new(),
            closed: None,
            goaway_last: None,
        };
        // The server's first frame must be its SETTINGS: anything else (a TLS alert, an HTTP/1.1
        // answer) means it does not speak HTTP/2 here, and the caller takes the h2-crate path,
        // which says why in its own words.
        let mut buf = vec![0u8; 256 * 1024];
        let mut have = 0;
        while have < 9 {
            match rd.read(&mut buf[have..]).await {
                Ok(0) | Err(_) => {
                    return Err(Status::unavailable(
                        "connection error: no HTTP/2 SETTINGS from the server",
                    ));
                }
                Ok(n) => have += n,
            }
        }
        let first = Head::read(&buf[..9]);
        if first.kind != kind::SETTINGS || first.stream != 0 || first.len > MAX_FRAME_IN {
            return Err(Status::unavailable(
                "connection error: the server's first frame is not SETTINGS",
            ));
        }
        let inner = Rc::new(RefCell::new(inner));
        let write = Rc::new(Notify::new());
        let conn = FastConnection {
            inner: inner.clone(),
            write: write.clone(),
            _owner: Rc::new(Owner {
                inner: inner.clone(),
                write: write.clone(),
            }),
        };
        // The writer: what calls appended, sent once per wake.
        let (w_inner, w_notify) = (inner.clone(), write.clone());
        tokio::task::spawn_local(async move {
            let mut buf = Vec::with_capacity(64 * 1024);
            loop {
                w_notify.notified().await;
                loop {
                    {
                        let mut i = w_inner.borrow_mut();
                        std::mem::swap(&mut buf, &mut i.out);
                    }
                    if buf.is_empty() {
                        break;
                    }
                    if let Err(e) = wr.write_all(&buf).await {
                        w_inner
                            .borrow_mut()
                            .close(Status::unavailable(format!("connection error: {e}")));
                        return;
                    }
                    buf.clear();
                }
                if w_inner.borrow().closed.is_some() && w_inner.borrow().open == 0 {
                    let _ = wr.shutdown().await;
                    return;
                }
            }
        });
        // The reader: frames parsed in place, calls settled.
        let (r_inner, r_notify) = (inner, write);
        tokio::task::spawn_local(async move {
            loop {
                // Whole frames first (the handshake may have read some already), then a read.
                {
                    let mut i = r_inner.borrow_mut();
                    match i.parse(&buf[..have]) {
                        Ok(used) => {
                            buf.copy_within(used..have, 0);
                            have -= used;
                        }
                        Err(s) => {
                            i.close(s);
                            r_notify.notify_one();
                            return;
                        }
                    }
                    i.trim();
                    if !i.out.is_empty() || (i.closed.is_some() && i.open == 0) {
                        r_notify.notify_one();
                    }
                }
                let n = match rd.read(&mut buf[have..]).await {
                    Ok(0) => {
                        r_inner.borrow_mut().close(Status::unavailable(
                            "connection error: the server closed the connection",
                        ));
                        return;
                    }
                    Ok(n) => n,
                    Err(e) => {
                        r_inner
                            .borrow_mut()
                            .close(Status::unavailable(format!("connection error: {e}")));
                        return;
                    }
                };
                have += n;
            }
        });
        Ok(conn)
    }

    /// Dials `ep` (TCP or Unix socket, TLS when configured) and speaks HTTP/2 on it.
    pub async fn connect(ep: &crate::Endpoint) -> Result<FastConnection, Status> {
        let io = crate::connection::dial_io(ep)
            .await
            .map_err(crate::channel::unavailable)?;
        FastConnection::handshake(io).await
    }

    /// Whether it takes no new calls (GOAWAY, a closed socket, a protocol error).
    pub fn is_closed(&self) -> bool {
        self.inner.borrow().closed.is_some()
    }

    /// The largest request body one call can send (one DATA frame, within the server's
    /// per-stream window): larger ones go through the h2-crate path.
    pub fn max_body(&self) -> usize {
        let i = self.inner.borrow();
        i.max_frame.min(i.stream_window.max(0) as usize)
    }

    /// One unary call: `block` then `body` (a framed message, at most [`Self::max_body`]), and
    /// the reply read to its status.
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        // Wait for room under the server's concurrency limit.
        poll_fn(|cx| {
            let mut i = self.inner.borrow_mut();
            if let Some(s) = &i.closed {
                return Poll::Ready(Err(s.clone()));
            }
            if i.open < i.max_open {
                return Poll::Ready(Ok(()));
            }
            i.waiting_room.push_back(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        let id = {
            let mut i = self.inner.borrow_mut();
            if body.len() > i.max_frame || body.len() as i64 > i.stream_window {
                return Err(Status::internal(
                    "the request is too large for the fast path",
                ));
            }
            let id = i.next_id;
            i.next_id += 2;
            i.open += 1;
            i.slots.push_back(Slot::Waiting {
                waker: None,
                http_status: 0,
                grpc: None,
                bytes: 0,
            });
            frame::write(&mut i.out, kind::HEADERS, flag::END_HEADERS, id, &block.0);
            i.send_data(id, body);
            id
        };
        self.write.notify_one();
        // The slot is given up if the call is dropped (a deadline): its stream is reset.
        let guard = SlotGuard { conn: self, id };
        let result = poll_fn(|cx| {
            let mut i = self.inner.borrow_mut();
            match i.slot(id) {
                Some(slot @ Slot::Done(_)) => {
                    let Slot::Done(r) = std::mem::replace(slot, Slot::Gone) else {
                        unreachable!("matched Done")
                    };
                    Poll::Ready(r)
                }
                Some(Slot::Waiting { waker, .. }) => {
                    *waker = Some(cx.waker().clone());
                    Poll::Pending
                }
                _ => Poll::Ready(Err(Status::internal("the call's slot is gone"))),
            }
        })
        .await;
        std::mem::forget(guard);
        result
    }
}

/// A fast-path connection to an endpoint that is dialled again when it stops taking calls
/// (GOAWAY, a closed socket), as a channel does for the h2-crate path; a call the server never
/// saw (past a GOAWAY's last stream, or refused) is sent once more on the new connection.
pub struct Redialing {
    ep: crate::Endpoint,
    conn: RefCell<FastConnection>,
}

impl Redialing {
    /// A first connection to `ep`.
    pub async fn connect(ep: crate::Endpoint) -> Result<Redialing, Status> {
        let conn = FastConnection::connect(&ep).await?;
        Ok(Redialing {
            ep,
            conn: RefCell::new(conn),
        })
    }

    async fn current(&self) -> Result<FastConnection, Status> {
        let conn = self.conn.borrow().clone();
        if !conn.is_closed() {
            return Ok(conn);
        }
        let fresh = FastConnection::connect(&self.ep).await?;
        *self.conn.borrow_mut() = fresh.clone();
        Ok(fresh)
    }

    /// One unary call (see [`FastConnection::unary`]).
    pub async fn unary(&self, block: &HeaderBlock, body: Bytes) -> Result<UnaryReply, Status> {
        let conn = self.current().await?;
        match conn.unary(block, body.clone()).await {
            Err(e) if never_seen(&e) => self.current().await?.unary(block, body).await,
            r => r,
        }
    }

    /// The largest request body one call can send.
    pub fn max_body(&self) -> usize {
        self.conn.borrow().max_body()
    }
}

/// Whether a failed call never reached the server's application (safe to send again).
fn never_seen(e: &Status) -> bool {
    e.code() == Code::Unavailable
        && (e.message() == "transport is closing" || e.message().contains("REFUSED_STREAM"))
}

/// Gives a call's slot up when its future is dropped before the reply (a deadline, the end of
/// `-z`): the stream is reset with CANCEL, as grpc-go and the h2 crate do.
struct SlotGuard<'a> {
    conn: &'a FastConnection,
    id: u32,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let mut i = self.conn.inner.borrow_mut();
        let id = self.id;
        if let Some(slot) = i.slot(id) {
            if matches!(slot, Slot::Waiting { .. }) {
                *slot = Slot::Gone;
                i.open -= 1;
                frame::write(&mut i.out, kind::RST_STREAM, 0, id, &0x8u32.to_be_bytes());
                drop(i);
                self.conn.write.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Frame-level checks against a scripted server on an in-memory pipe.
    use super::*;
    use tokio::io::DuplexStream;

    /// The server's end: reads the client's frames, writes crafted ones.
    struct Server {
        io: DuplexStream,
        enc: fluke_hpack::Encoder<'static>,
    }

    impl Server {
        async fn frame(&mut self) -> (Head, Vec<u8>) {
            let mut h = [0u8; 9];
            self.io.read_exact(&mut h).await.unwrap();
            let head = Head::read(&h);
            let mut p = vec![0u8; head.len];
            self.io.read_exact(&mut p).await.unwrap();
            (head, p)
        }

        /// The next frame of `kind`, skipping others (SETTINGS ACKs, WINDOW_UPDATEs).
        async fn next(&mut self, want: u8) -> (Head, Vec<u8>) {
            loop {
                let f = self.frame().await;
                if f.0.kind == want {
                    return f;
                }
            }
        }

        async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
            let mut out = Vec::new();
            frame::write(&mut out, kind, flags, stream, payload);
            self.io.write_all(&out).await.unwrap();
        }

        fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
            self.enc
                .encode(fields.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())))
        }

        /// A whole OK reply on `stream`: headers, one message, trailers.
        async fn ok(&mut self, stream: u32) {
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
    async fn pair(settings: &[(u16, u32)]) -> (FastConnection, Server) {
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

    fn block() -> HeaderBlock {
        HeaderBlock::of(&crate::CallHead::new("http", "x:1", "/a.B/C", &[], None, false).unwrap())
    }

    fn body() -> Bytes {
        Bytes::from_static(&[0, 0, 0, 0, 0])
    }

    async fn local<F: std::future::Future>(f: F) -> F::Output {
        tokio::task::LocalSet::new().run_until(f).await
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
            let e = a.await.unwrap().unwrap_err();
            assert_eq!(e.code(), Code::Internal);
            assert_eq!(e.message(), "a CONTINUATION frame without HEADERS");
            assert_eq!(
                conn.unary(&block(), body()).await.unwrap_err().message(),
                "a CONTINUATION frame without HEADERS"
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
            // 65,535 bytes of window: four DATA frames of 16,000 go, the fifth waits.
            let mut sent = 0;
            for _ in 0..4 {
                sent += s.next(kind::DATA).await.0.len;
            }
            assert_eq!(sent, 64_000);
            let early =
                tokio::time::timeout(std::time::Duration::from_millis(50), s.next(kind::DATA))
                    .await;
            assert!(early.is_err(), "DATA past the window");
            s.send(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes())
                .await;
            assert_eq!(s.next(kind::DATA).await.0.len, 16_000);
            for id in [1, 3, 5, 7, 9] {
                s.ok(id).await;
            }
            for c in calls {
                assert!(c.await.unwrap().is_ok());
            }
        })
        .await;
    }
}
