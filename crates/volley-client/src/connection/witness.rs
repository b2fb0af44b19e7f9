//! The dialled stream's witness: what the server sent, and how the stream failed, while the
//! HTTP/2 handshake holds it (h2's own error is often only "broken pipe").

use std::{
    io,
    pin::Pin,
    sync::{Mutex, Weak},
    task::{Context, Poll},
};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The server's first bytes kept during a handshake: enough for its SETTINGS and a GOAWAY.
const SEEN_BYTES: usize = 256;

/// What the server sent, and how the stream failed, during the HTTP/2 handshake: the evidence a
/// failed handshake is explained by (h2's own error is often only "broken pipe": its PING fails
/// so once the connection has closed, whatever closed it).
#[derive(Default)]
pub(super) struct Seen {
    /// The server's first bytes (after TLS), up to [`SEEN_BYTES`].
    pub(super) bytes: Vec<u8>,
    /// A TLS alert from the server after the TLS handshake: in TLS 1.3 the server's verdict on
    /// our certificate (or its absence) comes then, as our first write goes out.
    #[cfg(feature = "tls")]
    pub(super) alert: Option<rustls::AlertDescription>,
}

/// A dialled stream that keeps what the server sends in a [`Seen`] while the handshake holds it;
/// after that, one check per read and write.
pub(super) struct Witness<T> {
    pub(super) io: T,
    pub(super) seen: Option<Weak<Mutex<Seen>>>,
    /// A write's error during the handshake, returned once the server's last bytes are read.
    pub(super) failed_write: Option<io::Error>,
}

impl<T> Witness<T> {
    fn note(&mut self, read: &[u8], error: Option<&io::Error>) {
        let Some(seen) = self.seen.as_ref().map(Weak::upgrade) else {
            return;
        };
        let Some(seen) = seen else {
            // The handshake is over.
            self.seen = None;
            return;
        };
        let mut s = seen.lock().unwrap();
        let room = SEEN_BYTES.saturating_sub(s.bytes.len());
        s.bytes.extend_from_slice(&read[..read.len().min(room)]);
        #[cfg(feature = "tls")]
        if let Some(rustls::Error::AlertReceived(a)) = error
            .and_then(io::Error::get_ref)
            .and_then(|e| e.downcast_ref::<rustls::Error>())
        {
            s.alert = Some(*a);
        }
        #[cfg(not(feature = "tls"))]
        let _ = error;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Witness<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(r) = &r
            && this.seen.is_some()
        {
            this.note(&buf.filled()[before..], r.as_ref().err());
        }
        r
    }
}

impl<T: AsyncRead + Unpin> Witness<T> {
    /// A write that failed during the handshake fails only once what the server sent before it
    /// went has been read: its reason (a TLS alert: in TLS 1.3 a server that wants a client
    /// certificate says so after the handshake, as our first write goes out) would otherwise
    /// never be read, the connection failing on the write first ("broken pipe" and nothing
    /// else). The wait ends with the read (the alert, the server's close, or the reset); the
    /// dial's timeout bounds it.
    fn write_failed<R>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match r {
            Poll::Ready(Err(e)) if self.seen.is_some() && self.failed_write.is_none() => {
                self.failed_write = Some(e);
                self.read_then_fail(cx)
            }
            r => r,
        }
    }

    fn read_then_fail<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let mut bytes = [0u8; SEEN_BYTES];
        let mut buf = ReadBuf::new(&mut bytes);
        let read = Pin::new(&mut self.io).poll_read(cx, &mut buf);
        if let Poll::Ready(r) = &read {
            self.note(buf.filled(), r.as_ref().err());
        } else if self.seen.as_ref().is_some_and(|s| s.strong_count() > 0) {
            return Poll::Pending;
        }
        match self.failed_write.take() {
            Some(e) => Poll::Ready(Err(e)),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Witness<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.failed_write.is_some() {
            return this.read_then_fail(cx);
        }
        let r = Pin::new(&mut this.io).poll_write(cx, b);
        this.write_failed(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.failed_write.is_some() {
            return this.read_then_fail(cx);
        }
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.write_failed(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.failed_write.is_some() {
            return this.read_then_fail(cx);
        }
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.write_failed(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
