//! What connections arrive on: TCP, Unix sockets, or byte streams a caller hands in (in-memory
//! tests). The server tells a connection's protocol from its first bytes: TCP peeks at them;
//! the others read them and replay them ([`Rewind`]), as tokio's `UnixStream` has no peek (nor
//! has a TLS stream, whose client may speak HTTP/2 without saying so by ALPN).

use std::{
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{Buf, BytesMut};
use futures_util::{Stream, StreamExt};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream, UnixListener, UnixStream},
};

/// A connection's byte stream, with a look at its first bytes that does not consume them.
pub(crate) trait Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Waits for bytes and copies up to `buf.len()` of those not yet consumed into `buf`.
    fn peek(&mut self, buf: &mut [u8]) -> impl Future<Output = io::Result<usize>> + Send;
}

impl Socket for TcpStream {
    fn peek(&mut self, buf: &mut [u8]) -> impl Future<Output = io::Result<usize>> + Send {
        TcpStream::peek(self, buf)
    }
}

/// A stream whose first bytes were read to look at them, handed back before the rest.
pub(crate) struct Rewind<S> {
    seen: BytesMut,
    inner: S,
}

impl<S> Rewind<S> {
    pub(crate) fn new(inner: S) -> Rewind<S> {
        Rewind {
            seen: BytesMut::new(),
            inner,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Socket for Rewind<S> {
    async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.seen.len() < buf.len() {
            let want = (buf.len() - self.seen.len()) as u64;
            (&mut self.inner)
                .take(want)
                .read_buf(&mut self.seen)
                .await?;
        }
        let n = self.seen.len().min(buf.len());
        buf[..n].copy_from_slice(&self.seen[..n]);
        Ok(n)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.seen.is_empty() {
            let n = self.seen.len().min(buf.remaining());
            buf.put_slice(&self.seen[..n]);
            self.seen.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where connections come from: a listener's accept, or a caller's stream of byte streams.
pub(crate) trait Accept: Send {
    /// The connections' stream type.
    type Io: Socket;
    /// The next connection and the peer's address (none on a Unix socket or in memory);
    /// `None` when no more will come.
    fn accept(
        &mut self,
    ) -> impl Future<Output = Option<io::Result<(Self::Io, Option<SocketAddr>)>>> + Send;
}

impl Accept for TcpListener {
    type Io = TcpStream;
    async fn accept(&mut self) -> Option<io::Result<(TcpStream, Option<SocketAddr>)>> {
        Some(TcpListener::accept(self).await.map(|(s, peer)| {
            let _ = s.set_nodelay(true);
            (s, Some(peer))
        }))
    }
}

impl Accept for UnixListener {
    type Io = Rewind<UnixStream>;
    async fn accept(&mut self) -> Option<io::Result<(Rewind<UnixStream>, Option<SocketAddr>)>> {
        Some(
            UnixListener::accept(self)
                .await
                .map(|(s, _)| (Rewind::new(s), None)),
        )
    }
}

/// A caller's stream of byte streams, as connections.
pub(crate) struct Incoming<St>(pub(crate) St);

impl<St, S> Accept for Incoming<St>
where
    St: Stream<Item = S> + Unpin + Send,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Io = Rewind<S>;
    async fn accept(&mut self) -> Option<io::Result<(Rewind<S>, Option<SocketAddr>)>> {
        self.0.next().await.map(|s| Ok((Rewind::new(s), None)))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn rewind_hands_back_what_was_peeked_then_the_rest() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"PRI * HTTP/2.0").await.unwrap();
        let mut s = Rewind::new(server);
        let mut head = [0u8; 24];
        let n = s.peek(&mut head).await.unwrap();
        assert_eq!(&head[..n], b"PRI * HTTP/2.0");
        client.write_all(b"\r\n\r\nSM\r\n\r\nrest").await.unwrap();
        let n = s.peek(&mut head).await.unwrap();
        assert_eq!(n, 24, "the second look reads the remainder");
        drop(client);
        let mut all = Vec::new();
        s.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nrest");
    }
}
