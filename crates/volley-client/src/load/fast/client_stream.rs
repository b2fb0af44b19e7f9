//! Client-streaming and bidi calls on the fast path: a stream opened with its HEADERS, its
//! messages sent one DATA frame each as the caller gives them (each waits until the one before
//! has left for the server's windows, so a server that reads slowly holds the caller back rather
//! than the connection's buffer growing), then END_STREAM; the replies counted as the reader
//! parses them and, for bidi, each one's arrival stamped for per-message latency.

use std::{cell::RefCell, future::poll_fn, rc::Rc, time::Instant};

use bytes::Bytes;
use volley_wire::Status;

use super::{
    FastConnection, SlotGuard,
    count::{StreamCount, StreamReply},
    error::CallError,
    frame::HeaderBlock,
};

/// A client or bidi stream open on a fast connection. Dropped before [`Self::finish`] has its
/// reply, the stream is reset with CANCEL.
pub struct OpenStream {
    conn: FastConnection,
    id: u32,
    count: Rc<RefCell<StreamCount>>,
    /// The call's result, taken from its slot (then the slot is given up).
    settled: bool,
}

impl FastConnection {
    /// Opens a client or bidi stream with `block`; with `stamp`, each reply message's arrival
    /// is kept for [`OpenStream::take_arrivals`].
    pub async fn open_stream(
        &self,
        block: &HeaderBlock,
        stamp: bool,
    ) -> Result<OpenStream, Status> {
        self.open(block, stamp)
            .await
            .map_err(CallError::into_status)
    }

    /// [`Self::open_stream`], saying with a failure whether the server never saw the call.
    pub(crate) async fn open(
        &self,
        block: &HeaderBlock,
        stamp: bool,
    ) -> Result<OpenStream, CallError> {
        poll_fn(|cx| self.inner.borrow_mut().poll_room(cx)).await?;
        // One allocation per stream (not per message), shared with the slot.
        let count = Rc::new(RefCell::new(if stamp {
            StreamCount::stamped()
        } else {
            StreamCount::new(0)
        }));
        let id = self.inner.borrow_mut().open_stream(block, count.clone());
        self.write.notify_one();
        Ok(OpenStream {
            conn: self.clone(),
            id,
            count,
            settled: false,
        })
    }
}

impl OpenStream {
    /// Sends one framed message, once the message before it has left; false when the call has
    /// already ended (the server answered or reset it: [`Self::finish`] says how).
    pub async fn send(&mut self, message: Bytes) -> bool {
        self.part(message, false).await
    }

    /// Sends a part of the stream's body (`end`: the last) once the part before has left;
    /// false when the call has already ended.
    async fn part(&self, body: Bytes, end: bool) -> bool {
        let id = self.id;
        let inner = &self.conn.inner;
        if !poll_fn(|cx| inner.borrow_mut().poll_flushed(id, cx)).await {
            return false;
        }
        let sent = inner.borrow_mut().send_message(id, body, end);
        self.conn.write.notify_one();
        sent
    }

    /// Moves the arrival times of the reply messages come since the last call into `into`
    /// (stamped only when the stream was opened to stamp them).
    pub fn take_arrivals(&self, into: &mut Vec<Instant>) {
        self.count.borrow_mut().take_arrivals(into);
    }

    /// Ends the stream's sending half and reads the call to its status; or, as OK with what came,
    /// to `deadline` (the stream is then reset, as the h2-crate path does).
    pub async fn finish(&mut self, deadline: Option<Instant>) -> Result<StreamReply, Status> {
        // A call already ended sends no end: its status is read below.
        self.part(Bytes::new(), true).await;
        let (id, inner) = (self.id, &self.conn.inner);
        let settled = poll_fn(|cx| inner.borrow_mut().poll_settled(id, cx));
        let result = match deadline {
            None => settled.await,
            Some(d) => match tokio::time::timeout_at(d.into(), settled).await {
                Ok(r) => r,
                // Dropping the stream resets it.
                Err(_) => return Ok(self.count.borrow().reply()),
            },
        };
        self.settled = true;
        result
            .map(|_| self.count.borrow().reply())
            .map_err(CallError::into_status)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        if !self.settled {
            drop(SlotGuard {
                conn: &self.conn,
                id: self.id,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    //! Frame-level checks against the scripted server of `fast`'s tests.
    use std::time::Duration;

    use volley_wire::{
        Code,
        h2::{flag, kind, setting},
    };

    use super::super::tests::{block, local, pair};
    use bytes::Bytes;

    fn message(b: u8) -> Bytes {
        Bytes::from(vec![0, 0, 0, 0, 1, b])
    }

    #[tokio::test]
    async fn messages_wait_for_the_streams_window_and_replies_are_stamped() {
        local(async {
            // A 10-byte stream window: the second 6-byte message goes 4 bytes, then waits.
            let (conn, mut s) = pair(&[(setting::INITIAL_WINDOW_SIZE, 10)]).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            let call = tokio::task::spawn_local(async move {
                let mut st = conn.open_stream(&block(), true).await.unwrap();
                assert!(st.send(message(1)).await);
                assert!(st.send(message(2)).await);
                let reply = st.finish(None).await.unwrap();
                let mut arrivals = Vec::new();
                st.take_arrivals(&mut arrivals);
                (reply, arrivals)
            });
            let (h, _) = s.next(kind::HEADERS).await;
            assert_eq!(h.flags & flag::END_STREAM, 0, "the stream stays open");
            let (h, p) = s.next(kind::DATA).await;
            assert_eq!((h.flags, p), (0, vec![0, 0, 0, 0, 1, 1]));
            let (h, p) = s.next(kind::DATA).await;
            assert_eq!((h.flags, p), (0, vec![0, 0, 0, 0]));
            let early = tokio::time::timeout(Duration::from_millis(50), s.next(kind::DATA)).await;
            assert!(early.is_err(), "DATA past the stream's window");
            s.send(kind::WINDOW_UPDATE, 0, 1, &100u32.to_be_bytes())
                .await;
            let (h, p) = s.next(kind::DATA).await;
            assert_eq!((h.flags, p), (0, vec![1, 2]));
            // The end: an empty DATA frame with END_STREAM.
            let (h, p) = s.next(kind::DATA).await;
            assert_eq!((h.flags, p.len()), (flag::END_STREAM, 0));
            // Two replies, then the status.
            let head = s.block(&[(":status", "200"), ("content-type", "application/grpc")]);
            s.send(kind::HEADERS, flag::END_HEADERS, 1, &head).await;
            s.send(kind::DATA, 0, 1, &[0, 0, 0, 0, 1, 7, 0, 0, 0, 0, 1, 8])
                .await;
            let t = s.block(&[("grpc-status", "0")]);
            s.send(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &t)
                .await;
            let (reply, arrivals) = call.await.unwrap();
            assert_eq!(reply.messages, 2);
            assert_eq!(arrivals.len(), 2);
            assert_eq!(Some(arrivals[0]), reply.first_message);
        })
        .await;
    }

    #[tokio::test]
    async fn a_server_that_answers_early_ends_the_sending() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let mut st = conn.open_stream(&block(), false).await.unwrap();
            assert!(st.send(message(1)).await);
            s.next(kind::DATA).await;
            let t = s.block(&[
                (":status", "200"),
                ("grpc-status", "9"),
                ("grpc-message", "enough"),
            ]);
            s.send(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &t)
                .await;
            // Sends fail once the reader has the status; finish gives it.
            let mut refused = false;
            for _ in 0..100 {
                if !st.send(message(2)).await {
                    refused = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(refused, "sends went on after the server's status");
            let e = st.finish(None).await.unwrap_err();
            assert_eq!(
                (e.code(), e.message()),
                (Code::FailedPrecondition, "enough")
            );
        })
        .await;
    }

    #[tokio::test]
    async fn a_stream_dropped_before_its_reply_is_reset() {
        local(async {
            let (conn, mut s) = pair(&[]).await;
            let st = conn.open_stream(&block(), false).await.unwrap();
            s.next(kind::HEADERS).await;
            drop(st);
            let (h, p) = s.next(kind::RST_STREAM).await;
            assert_eq!((h.stream, p), (1, 8u32.to_be_bytes().to_vec()));
        })
        .await;
    }
}
