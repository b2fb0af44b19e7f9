//! Server-streaming calls on the fast path: one request, the replies' messages counted as the
//! reader parses their DATA (never decoded), the first one's arrival stamped, until the status,
//! a number of messages, or a deadline; the last two end the call as OK and reset its stream,
//! as the h2-crate path does. (Client and bidi streams: `client_stream`.)

use std::{cell::RefCell, future::poll_fn, rc::Rc, time::Instant};

use bytes::Bytes;
use volley_wire::Status;

use super::{
    FastConnection, SlotGuard,
    count::{StreamCount, StreamReply},
    error::CallError,
    frame::HeaderBlock,
};

impl FastConnection {
    /// One server-streaming call: `block` then `body` (one framed message), the replies counted
    /// to the status; or, as OK, to `limit` messages (0: all) or to `deadline`.
    pub async fn server_stream(
        &self,
        block: &HeaderBlock,
        body: Bytes,
        limit: u64,
        deadline: Option<Instant>,
    ) -> Result<StreamReply, Status> {
        self.stream_call(block, body, limit, deadline)
            .await
            .map_err(CallError::into_status)
    }

    /// [`Self::server_stream`], saying with a failure whether the server never saw the call.
    pub(crate) async fn stream_call(
        &self,
        block: &HeaderBlock,
        body: Bytes,
        limit: u64,
        deadline: Option<Instant>,
    ) -> Result<StreamReply, CallError> {
        poll_fn(|cx| self.inner.borrow_mut().poll_room(cx)).await?;
        // One allocation per stream (not per message), shared with the slot.
        let count = Rc::new(RefCell::new(StreamCount::new(limit)));
        let id = self
            .inner
            .borrow_mut()
            .start(block, body, Some(count.clone()))?;
        self.write.notify_one();
        let guard = SlotGuard { conn: self, id };
        let settled = poll_fn(|cx| self.inner.borrow_mut().poll_settled(id, cx));
        let result = match deadline {
            None => settled.await,
            Some(d) => match tokio::time::timeout_at(d.into(), settled).await {
                Ok(r) => r,
                Err(_) => {
                    // The deadline ends the call as OK with what came; the guard resets the
                    // stream.
                    drop(guard);
                    return Ok(count.borrow().reply());
                }
            },
        };
        std::mem::forget(guard);
        result.map(|_| count.borrow().reply())
    }
}
