//! A connection's IO whose shutdown lingers: after closing its write side it reads and drops what
//! the peer still sends, until the peer closes or a short time passes.
//!
//! Closing a socket with unread bytes in its receive buffer makes the kernel send a TCP reset,
//! and the peer's stack may then throw away what it had not yet read, such as the GOAWAY that
//! says why the connection ended (ENHANCE_YOUR_CALM to a rapid-reset client, NO_ERROR at a drain).
//! Go's HTTP/2 server waits for the same reason (its `goAwayTimeout`, 1 s).

use std::{
    future::Future,
    io,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::Sleep,
};

/// How long a closing connection keeps reading, at most.
const LINGER: Duration = Duration::from_secs(1);

/// IO that lingers on shutdown (see the module docs).
pub(crate) struct Lingering<I> {
    io: I,
    /// Set once the write side is closed: when the lingering ends.
    until: Option<Pin<Box<Sleep>>>,
}

impl<I> Lingering<I> {
    pub(crate) fn new(io: I) -> Self {
        Lingering { io, until: None }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Lingering<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let until = match &mut this.until {
            Some(until) => until,
            None => {
                ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
                this.until.insert(Box::pin(tokio::time::sleep(LINGER)))
            }
        };
        let mut scratch = [0u8; 4096];
        loop {
            if until.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match ready!(Pin::new(&mut this.io).poll_read(cx, &mut buf)) {
                Ok(()) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Ok(()) => {}
                // The peer reset or the socket failed: nothing left to wait for.
                Err(_) => return Poll::Ready(Ok(())),
            }
        }
    }
}
