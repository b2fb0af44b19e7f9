//! A fast-path connection's state, shared by its handles and its reader and writer tasks: the
//! frames waiting to be sent, one slot per call (sent, settled, gone), the server's concurrency
//! limit and windows, and the server's frames parsed into settled calls.
//! Why it is over 500 lines: one connection's state machine, whose frame handling (windows,
//! slots, GOAWAY, header blocks) reads as one piece.

use std::{
    cell::RefCell,
    collections::VecDeque,
    rc::Rc,
    task::{Context, Poll, Waker},
};

use bytes::Bytes;
use volley_wire::{
    Code, Status,
    h2::{
        DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, FRAME_HEADER_LEN, Head, MAX_MAX_FRAME_SIZE,
        STREAM_ID_MASK, flag, kind, reason, setting, write,
    },
};

use super::{
    count::StreamCount,
    error::{CallError, going_away, stream_status},
    frame::{HeaderBlock, padding},
    headers::MAX_HEADER_BLOCK,
};
use crate::UnaryReply;

/// Receive-window bytes consumed before the connection's window is topped up.
const TOP_UP: u32 = 1 << 30;

/// The payload of our keepalive PINGs (an ACK with another payload answers none of them).
const KEEPALIVE_PING: [u8; 8] = *b"vly-keep";

/// What each of the two buffers of frames to send (this one and the writer's, swapped) holds at
/// first; they grow with what is sent.
pub(super) const FIRST_OUT_BUFFER: usize = 8 * 1024;

/// The largest frame the server may send us (we do not raise SETTINGS_MAX_FRAME_SIZE).
pub(super) const MAX_FRAME_IN: usize = DEFAULT_MAX_FRAME_SIZE;

/// What a call's slot holds.
pub(super) enum Slot {
    /// Sent; the reply is coming.
    Waiting {
        waker: Option<Waker>,
        http_status: u16,
        /// The status the server sent (the message boxed: a slot stays 64 bytes with `stream`;
        /// slots are moved on every call).
        grpc: Option<(Code, Box<str>)>,
        bytes: usize,
        /// A server stream's messages, counted as they come (shared with its caller).
        stream: Option<Rc<RefCell<StreamCount>>>,
    },
    /// Settled.
    Done(Result<UnaryReply, CallError>),
    /// Its caller has the result (or went away).
    Gone,
}

/// A request body waiting for window: what is left of it, its stream's send window, and whether
/// it ends the stream (a client stream's messages do not, but its last, empty, part).
struct Pending {
    stream: u32,
    body: Bytes,
    window: i64,
    end: bool,
}

/// One connection's state.
pub(super) struct Inner {
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
    /// Request bodies not yet wholly sent, in the order their calls started.
    blocked: VecDeque<Pending>,
    /// Client and bidi streams still sending, with their send windows (a unary call's body is
    /// its first and last, so its window is the initial one). Stale while the stream has a
    /// body in `blocked`, whose window is written back here when it is sent.
    sending: Vec<(u32, i64)>,
    /// Client streams waiting for their message to leave `blocked`.
    flush_waiters: Vec<Waker>,
    /// Received DATA bytes not yet returned to the server by WINDOW_UPDATE.
    consumed: u32,
    /// A header block being read (HEADERS, then CONTINUATION), and its stream and flags.
    partial: Option<(u32, u8, Vec<u8>)>,
    decoder: super::hpack::Decoder,
    /// Set when the connection cannot take new calls, with why.
    closed: Option<CallError>,
    /// The highest stream a GOAWAY let through.
    goaway_last: Option<u32>,
    /// The server has ended a stream here: it answered a call (whatever the call's status).
    replied: bool,
    /// The writer task has ended (a failed write, or the socket shut): nothing more is sent.
    writer_gone: bool,
    /// Keepalive PINGs the server has answered.
    pongs: u64,
}

impl Inner {
    /// A connection's state before the server's SETTINGS.
    pub(super) fn new() -> Inner {
        Inner {
            out: Vec::with_capacity(FIRST_OUT_BUFFER),
            slots: VecDeque::new(),
            first_id: 1,
            next_id: 1,
            open: 0,
            // Until the server's SETTINGS say otherwise.
            max_open: 100,
            waiting_room: VecDeque::new(),
            send_window: i64::from(DEFAULT_WINDOW),
            stream_window: i64::from(DEFAULT_WINDOW),
            max_frame: DEFAULT_MAX_FRAME_SIZE,
            blocked: VecDeque::new(),
            sending: Vec::new(),
            flush_waiters: Vec::new(),
            consumed: 0,
            partial: None,
            decoder: super::hpack::Decoder::default(),
            closed: None,
            goaway_last: None,
            replied: false,
            writer_gone: false,
            pongs: 0,
        }
    }

    /// Queues a keepalive PING (the writer must be woken).
    pub(super) fn ping(&mut self) {
        write(&mut self.out, kind::PING, 0, 0, &KEEPALIVE_PING);
    }

    /// Keepalive PINGs answered so far.
    pub(super) fn pongs(&self) -> u64 {
        self.pongs
    }

    /// Whether it takes no new calls (GOAWAY, a closed socket, a protocol error).
    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// Why it takes no new calls, if it does not.
    pub(super) fn closed_by(&self) -> Option<CallError> {
        self.closed.clone()
    }

    /// Calls open or waiting for room, and whether they fill the server's concurrency limit.
    pub(super) fn load(&self) -> (usize, bool) {
        let calls = self.open as usize + self.waiting_room.len();
        (calls, calls >= self.max_open as usize)
    }

    /// Whether the server has answered a call here.
    pub(super) fn replied(&self) -> bool {
        self.replied
    }

    /// Closed, with no call left open: the writer may shut the socket.
    pub(super) fn finished(&self) -> bool {
        self.closed.is_some() && self.open == 0
    }

    /// Marks the connection closed to new calls (if it is not already), failing them with
    /// `why`; calls in flight go on.
    pub(super) fn refuse_new(&mut self, why: CallError) {
        self.closed.get_or_insert(why);
    }

    /// Swaps the frames to send into `buf` (empty), leaving an empty buffer here.
    pub(super) fn take_out(&mut self, buf: &mut Vec<u8>) {
        std::mem::swap(buf, &mut self.out);
    }

    /// Whether frames wait to be sent.
    pub(super) fn has_out(&self) -> bool {
        !self.out.is_empty()
    }

    /// Bytes waiting to be sent (not yet taken by the writer).
    pub(super) fn out_len(&self) -> usize {
        self.out.len()
    }

    /// Notes that the writer has ended: what waits to be sent is dropped (and the reader,
    /// which would only add to it, ends).
    pub(super) fn writer_gone(&mut self) {
        self.writer_gone = true;
        self.out = Vec::new();
    }

    /// Whether the writer has ended.
    pub(super) fn is_writer_gone(&self) -> bool {
        self.writer_gone
    }

    /// Ready once a call may be sent under the server's concurrency limit (or the connection
    /// has closed).
    pub(super) fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        if let Some(s) = &self.closed {
            return Poll::Ready(Err(s.clone()));
        }
        if self.open < self.max_open {
            return Poll::Ready(Ok(()));
        }
        self.waiting_room.push_back(cx.waker().clone());
        Poll::Pending
    }

    /// Sends a call (`block` then `body`) on a new stream and gives it a slot (counting a
    /// server stream's messages into `stream`); returns the stream.
    pub(super) fn start(
        &mut self,
        block: &HeaderBlock,
        body: Bytes,
        stream: Option<Rc<RefCell<StreamCount>>>,
    ) -> Result<u32, CallError> {
        let id = self.head(block, stream);
        self.send_body(id, body);
        Ok(id)
    }

    /// Opens a client or bidi stream (`block`, no body yet), its replies counted into `stream`;
    /// its messages follow with [`Self::send_message`].
    pub(super) fn open_stream(
        &mut self,
        block: &HeaderBlock,
        stream: Rc<RefCell<StreamCount>>,
    ) -> u32 {
        let id = self.head(block, Some(stream));
        self.sending.push((id, self.stream_window));
        id
    }

    /// Sends one part of open stream `id`'s body (`end`: the last); false when the call has
    /// settled (nothing is sent).
    pub(super) fn send_message(&mut self, id: u32, body: Bytes, end: bool) -> bool {
        if !matches!(self.slot(id), Some(Slot::Waiting { .. })) {
            return false;
        }
        self.send_part(id, body, end);
        true
    }

    /// Ready once open stream `id` has no part waiting for window: true, or false when its
    /// call has settled.
    pub(super) fn poll_flushed(&mut self, id: u32, cx: &mut Context<'_>) -> Poll<bool> {
        if !matches!(self.slot(id), Some(Slot::Waiting { .. })) {
            return Poll::Ready(false);
        }
        if self.blocked.iter().any(|p| p.stream == id) {
            self.flush_waiters.push(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(true)
    }

    /// Gives a stream its slot and sends its HEADERS; returns its id.
    fn head(&mut self, block: &HeaderBlock, stream: Option<Rc<RefCell<StreamCount>>>) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        self.open += 1;
        self.slots.push_back(Slot::Waiting {
            waker: None,
            http_status: 0,
            grpc: None,
            bytes: 0,
            stream,
        });
        // A block over the server's frame size (large metadata) goes out as HEADERS then
        // CONTINUATION frames.
        let mut chunks = block.0.chunks(self.max_frame.max(1)).peekable();
        let mut frame_kind = kind::HEADERS;
        while let Some(chunk) = chunks.next() {
            let end = if chunks.peek().is_none() {
                flag::END_HEADERS
            } else {
                0
            };
            write(&mut self.out, frame_kind, end, id, chunk);
            frame_kind = kind::CONTINUATION;
        }
        if block.0.is_empty() {
            write(&mut self.out, kind::HEADERS, flag::END_HEADERS, id, &[]);
        }
        id
    }

    /// Ready with stream `id`'s result once it is settled (its slot is then given up).
    pub(super) fn poll_settled(
        &mut self,
        id: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Result<UnaryReply, CallError>> {
        match self.slot(id) {
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
            _ => Poll::Ready(Err(CallError::Failed(Status::internal(
                "the call's slot is gone",
            )))),
        }
    }

    /// Gives up stream `id`, whose caller went away before its reply: the stream is reset with
    /// CANCEL. True when there is a frame to send.
    pub(super) fn abandon(&mut self, id: u32) -> bool {
        let Some(slot) = self.slot(id) else {
            return false;
        };
        if !matches!(slot, Slot::Waiting { .. }) {
            return false;
        }
        *slot = Slot::Gone;
        self.open -= 1;
        self.forget_body(id);
        self.cancel(id);
        true
    }

    /// Resets stream `id` with CANCEL: its caller wants no more of it.
    fn cancel(&mut self, id: u32) {
        write(
            &mut self.out,
            kind::RST_STREAM,
            0,
            id,
            &reason::CANCEL.to_be_bytes(),
        );
    }

    fn slot(&mut self, id: u32) -> Option<&mut Slot> {
        if id < self.first_id || id.is_multiple_of(2) {
            return None;
        }
        self.slots.get_mut(((id - self.first_id) / 2) as usize)
    }

    fn settle(&mut self, id: u32, result: Result<UnaryReply, CallError>) {
        let Some(slot) = self.slot(id) else { return };
        if let Slot::Waiting { waker, .. } = slot {
            let waker = waker.take();
            *slot = Slot::Done(result);
            self.open -= 1;
            self.forget_body(id);
            if let Some(w) = waker {
                w.wake();
            }
            if let Some(w) = self.waiting_room.pop_front() {
                w.wake();
            }
        }
    }

    /// Drops settled slots from the front.
    pub(super) fn trim(&mut self) {
        while matches!(self.slots.front(), Some(Slot::Gone)) {
            self.slots.pop_front();
            self.first_id += 2;
        }
    }

    /// Fails every open call with `error`, and every later one (unless a GOAWAY already said why
    /// later calls fail).
    pub(super) fn close(&mut self, error: CallError) {
        let ids: Vec<u32> = (0..self.slots.len() as u32)
            .map(|k| self.first_id + 2 * k)
            .collect();
        for id in ids {
            self.settle(id, Err(error.clone()));
        }
        self.closed.get_or_insert(error);
        for w in self.waiting_room.drain(..) {
            w.wake();
        }
    }

    /// Sends a unary or server-streaming call's `body` on `stream` (its first and last, ended
    /// with END_STREAM) as far as the windows let it, in frames of at most the server's frame
    /// size; the rest waits for WINDOW_UPDATEs.
    fn send_body(&mut self, stream: u32, body: Bytes) {
        let whole = self.blocked.is_empty()
            && body.len() <= self.max_frame
            && body.len() as i64 <= self.send_window.min(self.stream_window);
        if whole {
            // The common case: one frame, at once.
            self.send_window -= body.len() as i64;
            write(&mut self.out, kind::DATA, flag::END_STREAM, stream, &body);
            return;
        }
        self.blocked.push_back(Pending {
            stream,
            body,
            window: self.stream_window,
            end: true,
        });
        self.unblock();
    }

    /// [`Self::send_body`] for a part of an open client stream's body (`end`: the last), under
    /// the window the stream has left.
    fn send_part(&mut self, stream: u32, body: Bytes, end: bool) {
        let Some(k) = self.sending.iter().position(|s| s.0 == stream) else {
            return;
        };
        let window = self.sending[k].1;
        let whole = self.blocked.is_empty()
            && body.len() <= self.max_frame
            && body.len() as i64 <= self.send_window.min(window);
        if whole {
            self.send_window -= body.len() as i64;
            let flags = if end { flag::END_STREAM } else { 0 };
            write(&mut self.out, kind::DATA, flags, stream, &body);
            self.part_sent(stream, end, window - body.len() as i64);
            return;
        }
        self.blocked.push_back(Pending {
            stream,
            body,
            window,
            end,
        });
        self.unblock();
    }

    /// Sends what the windows allow of the waiting bodies, oldest first (a body waiting for its
    /// stream's window holds back those behind it, as it holds its share of the connection's).
    fn unblock(&mut self) {
        while let Some(p) = self.blocked.front_mut() {
            let n = p
                .body
                .len()
                .min(self.max_frame)
                .min(self.send_window.min(p.window).max(0) as usize);
            if n == 0 && !p.body.is_empty() {
                break;
            }
            let chunk = p.body.split_to(n);
            p.window -= n as i64;
            self.send_window -= n as i64;
            let last = p.body.is_empty();
            let flags = if last && p.end { flag::END_STREAM } else { 0 };
            write(&mut self.out, kind::DATA, flags, p.stream, &chunk);
            if last {
                let (stream, end, window) = (p.stream, p.end, p.window);
                self.blocked.pop_front();
                self.part_sent(stream, end, window);
                for w in self.flush_waiters.drain(..) {
                    w.wake();
                }
            }
        }
    }

    /// A part of `stream`'s body has gone with `window` left: a client stream keeps that
    /// window, or, its last part gone, leaves `sending` (a unary body is in neither).
    fn part_sent(&mut self, stream: u32, end: bool, window: i64) {
        if let Some(k) = self.sending.iter().position(|s| s.0 == stream) {
            if end {
                self.sending.swap_remove(k);
            } else {
                self.sending[k].1 = window;
            }
        }
    }

    /// Drops what is left of stream `id`'s body (its call settled or was given up).
    fn forget_body(&mut self, id: u32) {
        if !self.blocked.is_empty() {
            self.blocked.retain(|p| p.stream != id);
        }
        if !self.sending.is_empty() {
            self.sending.retain(|s| s.0 != id);
            // A client stream waiting for window learns its call has ended.
            for w in self.flush_waiters.drain(..) {
                w.wake();
            }
        }
    }

    /// Handles every whole frame at the front of `bytes`; returns how many bytes they took, or
    /// what broke the connection (the reader fails the calls UNAVAILABLE with its message).
    pub(super) fn parse(&mut self, bytes: &[u8]) -> Result<usize, Status> {
        let mut at = 0;
        while bytes.len() - at >= FRAME_HEADER_LEN {
            let h = Head::read(&bytes[at..at + FRAME_HEADER_LEN]);
            if h.len > MAX_FRAME_IN {
                return Err(Status::internal("a frame over the 16,384-byte limit"));
            }
            let end = at + FRAME_HEADER_LEN + h.len;
            if bytes.len() < end {
                break;
            }
            self.on_frame(h, &bytes[at + FRAME_HEADER_LEN..end])?;
            at = end;
        }
        Ok(at)
    }

    /// One frame from the server. Returns a connection error's status, if it is one.
    fn on_frame(&mut self, h: Head, p: &[u8]) -> Result<(), Status> {
        match h.kind {
            kind::DATA => {
                let pad = padding(h, p)?;
                self.consumed += h.len as u32;
                let mut enough = false;
                if let Some(Slot::Waiting { bytes, stream, .. }) = self.slot(h.stream) {
                    let data = &p[pad.0..p.len() - pad.1];
                    *bytes += data.len();
                    if let Some(count) = stream {
                        enough = count.borrow_mut().push(data);
                    }
                }
                if enough {
                    // A server stream read as far as the caller wanted: the call ends as OK and
                    // the rest of the stream is refused, as the h2 path does.
                    self.settle(h.stream, Ok(UnaryReply::default()));
                    self.cancel(h.stream);
                }
                if self.consumed >= TOP_UP {
                    write(
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
                // A connection error, not a stream's: no other frame may come before this
                // block ends, so a block over the limit leaves nothing to read on.
                if block.len() + p.len() > MAX_HEADER_BLOCK {
                    return Err(Status::internal("a reply's header block over 16 MiB"));
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
            kind::SETTINGS if h.flags & flag::ACK == 0 => self.on_settings(p)?,
            kind::PING if h.flags & flag::ACK == 0 && p.len() == 8 => {
                write(&mut self.out, kind::PING, flag::ACK, 0, p);
            }
            kind::PING if p == KEEPALIVE_PING => self.pongs += 1,
            kind::GOAWAY if p.len() >= 8 => {
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & STREAM_ID_MASK;
                self.goaway_last = Some(last);
                let beyond: Vec<u32> = (0..self.slots.len() as u32)
                    .map(|k| self.first_id + 2 * k)
                    .filter(|id| *id > last)
                    .collect();
                for id in beyond {
                    self.settle(id, Err(going_away()));
                }
                self.closed.get_or_insert_with(going_away);
            }
            kind::WINDOW_UPDATE if p.len() == 4 => {
                let inc = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & STREAM_ID_MASK;
                if h.stream == 0 {
                    self.send_window += i64::from(inc);
                } else if let Some(p) = self.blocked.iter_mut().find(|p| p.stream == h.stream) {
                    p.window += i64::from(inc);
                } else if let Some(s) = self.sending.iter_mut().find(|s| s.0 == h.stream) {
                    s.1 += i64::from(inc);
                }
                self.unblock();
            }
            _ => {}
        }
        Ok(())
    }

    /// The server's SETTINGS: taken, acknowledged, and the calls waiting for room woken.
    fn on_settings(&mut self, p: &[u8]) -> Result<(), Status> {
        if !p.len().is_multiple_of(6) {
            return Err(Status::internal("a SETTINGS frame of a bad length"));
        }
        for s in p.chunks(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match id {
                setting::MAX_CONCURRENT_STREAMS => self.max_open = v,
                setting::INITIAL_WINDOW_SIZE => {
                    // A change applies to open streams too (RFC 9113 §6.9.2).
                    let delta = i64::from(v) - self.stream_window;
                    for p in &mut self.blocked {
                        p.window += delta;
                    }
                    for s in &mut self.sending {
                        s.1 += delta;
                    }
                    self.stream_window = i64::from(v);
                }
                setting::MAX_FRAME_SIZE => {
                    self.max_frame = (v as usize).clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE);
                }
                _ => {}
            }
        }
        write(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
        self.unblock();
        for w in self.waiting_room.drain(..) {
            w.wake();
        }
        Ok(())
    }

    fn headers_done(&mut self) -> Result<(), Status> {
        let (stream, flags, block) = self.partial.take().expect("a header block");
        let said = super::headers::decode(&mut self.decoder, &block)?;
        if let Some(Slot::Waiting {
            http_status: hs,
            grpc,
            ..
        }) = self.slot(stream)
        {
            if let Some(s) = said.http_status {
                *hs = s;
            }
            if let Some(c) = said.grpc_code {
                *grpc = Some((c, said.message.unwrap_or_default().into_boxed_str()));
            }
        }
        if flags & flag::END_STREAM != 0 {
            self.end(stream);
        }
        Ok(())
    }

    /// The server ended stream `id`: its call is settled by what its headers said.
    fn end(&mut self, id: u32) {
        self.replied = true;
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
            (200, Some((code, message))) => Err(Status::new(code, message.into_string())),
            (200, None) => Err(Status::internal(
                "server closed the stream without sending trailers",
            )),
            (s, _) => Err(Status::new(
                Code::from_http_status(s),
                format!("unexpected HTTP status code received from server: {s}"),
            )),
        };
        self.settle(id, result.map_err(CallError::Failed));
    }
}

#[cfg(test)]
mod tests {
    //! Where a call failed decides whether it may go again, whatever its status says.
    use super::*;

    fn block() -> HeaderBlock {
        HeaderBlock::of(&crate::CallHead::new("http", "x:1", "/a.B/C", &[], None, false).unwrap())
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out, kind, flags, stream, payload);
        out
    }

    /// `n` calls started on a fresh state: streams 1, 3, 5, ...
    fn started(n: usize) -> Inner {
        let mut i = Inner::new();
        for _ in 0..n {
            i.start(&block(), Bytes::from_static(&[0, 0, 0, 0, 0]), None)
                .unwrap();
        }
        i
    }

    fn settled(i: &mut Inner, id: u32) -> Result<UnaryReply, CallError> {
        let mut cx = Context::from_waker(Waker::noop());
        match i.poll_settled(id, &mut cx) {
            Poll::Ready(r) => r,
            Poll::Pending => panic!("stream {id} is not settled"),
        }
    }

    fn feed(i: &mut Inner, bytes: &[u8]) {
        assert_eq!(i.parse(bytes).ok(), Some(bytes.len()));
    }

    #[test]
    fn refused_and_goaway_calls_were_never_seen_and_others_were() {
        let mut i = started(4);
        feed(
            &mut i,
            &frame(
                kind::RST_STREAM,
                0,
                1,
                &reason::REFUSED_STREAM.to_be_bytes(),
            ),
        );
        feed(
            &mut i,
            &frame(kind::RST_STREAM, 0, 3, &reason::CANCEL.to_be_bytes()),
        );
        // GOAWAY letting stream 5 through: 7 was never seen, 5 is still coming.
        feed(
            &mut i,
            &frame(kind::GOAWAY, 0, 0, &[0, 0, 0, 5, 0, 0, 0, 0]),
        );
        let e = settled(&mut i, 1).unwrap_err();
        assert!(e.never_seen(), "{e:?}");
        assert!(e.into_status().message().contains("REFUSED_STREAM"));
        assert!(!settled(&mut i, 3).unwrap_err().never_seen());
        let e = settled(&mut i, 7).unwrap_err();
        assert!(e.never_seen(), "{e:?}");
        assert_eq!(e.into_status().message(), "transport is closing");
        // The socket then fails: stream 5 was let through, so the server may have seen it.
        i.close(CallError::Failed(Status::unavailable(
            "connection error: the server closed the connection",
        )));
        assert!(!settled(&mut i, 5).unwrap_err().never_seen());
        // A call after the GOAWAY is not sent, and says so.
        let mut cx = Context::from_waker(Waker::noop());
        match i.poll_room(&mut cx) {
            Poll::Ready(Err(e)) => assert!(e.never_seen(), "{e:?}"),
            _ => panic!("a closed connection took a call"),
        }
    }

    #[test]
    fn a_header_block_without_end_is_cut_off_at_the_limit() {
        let mut i = started(1);
        feed(&mut i, &frame(kind::HEADERS, 0, 1, &[0x88]));
        let part = frame(kind::CONTINUATION, 0, 1, &[0; MAX_FRAME_IN]);
        for _ in 0..MAX_HEADER_BLOCK / MAX_FRAME_IN - 1 {
            feed(&mut i, &part);
        }
        let e = i.parse(&part).unwrap_err();
        assert_eq!(e.message(), "a reply's header block over 16 MiB");
    }

    #[test]
    fn a_servers_status_is_never_read_as_a_transport_failure() {
        // A handler that answers UNAVAILABLE with grpc-go's transport words: the call reached
        // the server, and is not sent again (the old rule matched these words).
        let mut i = started(1);
        let mut enc = fluke_hpack::Encoder::new();
        let trailers = enc.encode([
            (&b":status"[..], &b"200"[..]),
            (b"grpc-status", b"14"),
            (b"grpc-message", b"transport is closing"),
        ]);
        feed(
            &mut i,
            &frame(
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                1,
                &trailers,
            ),
        );
        let e = settled(&mut i, 1).unwrap_err();
        assert!(!e.never_seen(), "{e:?}");
        let s = e.into_status();
        assert_eq!(
            (s.code(), s.message()),
            (Code::Unavailable, "transport is closing")
        );
    }
}

#[cfg(test)]
#[cfg(target_pointer_width = "64")]
mod layout {
    #[test]
    fn a_slot_stays_64_bytes() {
        // Every call pushes one and moves it out when settled: its size is a per-call cost.
        assert_eq!(std::mem::size_of::<super::Slot>(), 64);
    }
}
