//! One connection: told apart (TLS, h2c, or both on one port by the first byte), identified within
//! the handshake deadline, served and driven to its end by the server's drain or its maximum age.
//! Every HTTP/2 connection (h2c, TLS with ALPN "h2", TLS whose first bytes are the preface) is
//! served on h2 directly in `h2`, under its guards (rapid reset, ping policing, unsolicited PING
//! ACKs, idle and concurrency limits); hyper serves HTTP/1.1 only.

mod counts;
pub(crate) mod h2;
mod h2_stream;
mod idle;
mod linger;
mod pings;
mod refuse;
pub(crate) mod socket;

use std::{convert::Infallible, future::Future, net::SocketAddr, sync::Arc, time::Duration};

use futures_util::FutureExt;
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::watch;
#[cfg(feature = "tls")]
use tokio_rustls::TlsAcceptor;
use tracing::debug;
use volley_wire::h2::PREFACE;

pub(crate) use self::counts::ConnCounts;
#[cfg(feature = "tls")]
use self::socket::Rewind;
use self::{h2::H2Connection, socket::Socket};
use crate::{body::RequestBody, call, intercept::Peer, route::Shared};

/// How connections are served: the builder's settings that concern connections, not calls.
pub(crate) struct ConnSettings {
    pub(crate) max_concurrent_streams: u32,
    pub(crate) keepalive: Option<Duration>,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    #[cfg(feature = "tls")]
    pub(crate) also_plaintext: bool,
    pub(crate) max_age: Option<Duration>,
    pub(crate) grace: Duration,
    pub(crate) handshake: Duration,
    pub(crate) max_connections: Option<usize>,
    pub(crate) max_idle: Option<Duration>,
    pub(crate) ping_min_interval: Option<Duration>,
    /// Where connections are counted (the metrics' counts, when the server has metrics).
    pub(crate) counts: ConnCounts,
}

/// What each connection task needs.
pub(crate) struct ConnContext {
    shared: Arc<Shared>,
    /// HTTP/1.1 settings for connections served through hyper.
    http1: http1::Builder,
    /// HTTP/2 settings for connections served on h2 directly (`conn::h2`).
    h2: ::h2::server::Builder,
    #[cfg(feature = "tls")]
    tls: Option<TlsAcceptor>,
    #[cfg(feature = "tls")]
    also_plaintext: bool,
    max_age: Option<Duration>,
    grace: Duration,
    handshake: Duration,
    max_connections: Option<usize>,
    limits: h2::ConnLimits,
    counts: ConnCounts,
}

/// The first byte of a TLS ClientHello record.
#[cfg(feature = "tls")]
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

impl ConnContext {
    /// What the calls share (the `tower::Service` path serves them without a connection).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    pub(crate) fn new(shared: Arc<Shared>, s: ConnSettings) -> ConnContext {
        let mut http1 = http1::Builder::new();
        http1.timer(TokioTimer::new());
        ConnContext {
            shared,
            http1,
            h2: h2::builder(s.max_concurrent_streams),
            #[cfg(feature = "tls")]
            tls: s.tls.map(TlsAcceptor::from),
            #[cfg(feature = "tls")]
            also_plaintext: s.also_plaintext,
            max_age: s.max_age,
            grace: s.grace,
            handshake: s.handshake,
            max_connections: s.max_connections,
            limits: h2::ConnLimits {
                keepalive: s.keepalive,
                max_idle: s.max_idle,
                ping_min_interval: s.ping_min_interval,
                grace: s.grace,
            },
            counts: s.counts,
        }
    }

    /// True when connections speak TLS.
    #[cfg(feature = "tls")]
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// True when connections speak TLS: never, without the `tls` feature.
    #[cfg(not(feature = "tls"))]
    pub(crate) fn is_tls(&self) -> bool {
        false
    }

    /// Connections accepted since the server was built, open now, and refused over the cap.
    pub(crate) fn counts(&self) -> (u64, usize, u64) {
        (
            self.counts.accepted.get(),
            self.counts.open_now(),
            self.counts.refused.get(),
        )
    }

    /// Whether a new connection would go over the cap; if so it is counted as refused.
    pub(crate) fn over_cap(&self) -> Option<usize> {
        let max = self.max_connections?;
        if self.counts.open_now() < max {
            return None;
        }
        self.counts.refused.inc();
        Some(max)
    }

    /// Refuses a connection over the cap (see `refuse`).
    pub(crate) async fn refuse<S: Socket>(self: Arc<Self>, stream: S) {
        refuse::refuse(stream, !self.is_tls()).await;
    }

    /// Serves one accepted connection until it ends.
    ///
    /// This future is what each connection's task holds for its whole life, so the paths most
    /// connections do not take (HTTP/1.1 through hyper) are boxed, and so is the TLS handshake,
    /// which is freed once done: inline, their states made it 9.9 KB, more than anything else
    /// an idle connection keeps (BENCHMARKS.md, "Idle connection memory"); it is 2.3 KB
    /// now, a TLS connection's too (its `serve_io` shares the space of the plaintext one).
    pub(crate) async fn serve_connection<S: Socket>(
        self: Arc<Self>,
        mut stream: S,
        peer: Option<SocketAddr>,
        drain: watch::Receiver<bool>,
    ) {
        let _open = self.counts.opened();
        #[cfg(feature = "tls")]
        if self.is_tls() {
            match Box::pin(self.tls_accept(stream, peer)).await {
                Accepted::Tls(tls, peer, true) => {
                    return self.serve_io(tls, peer, drain, true).await;
                }
                // Boxed: a client without ALPN "h2" is the rare case, and inline its second
                // `serve_io` would grow every connection's future.
                Accepted::Tls(tls, peer, false) => {
                    return Box::pin(self.serve_without_alpn(tls, peer, drain)).await;
                }
                Accepted::Plain(plain) => stream = plain,
                Accepted::Closed => return,
            }
        }
        if let Some(h2) = self.identified(&mut stream, peer).await {
            self.serve_io(stream, plain(peer), drain, h2).await;
        }
    }

    /// A TLS port's first step: the handshake (within the handshake timeout), or, on a port that
    /// takes plaintext too, a first byte that is not TLS's.
    #[cfg(feature = "tls")]
    async fn tls_accept<S: Socket>(&self, mut stream: S, peer: Option<SocketAddr>) -> Accepted<S> {
        let Some(acceptor) = &self.tls else {
            return Accepted::Closed;
        };
        if self.also_plaintext {
            let mut first = [0u8; 1];
            match tokio::time::timeout(self.handshake, stream.peek(&mut first)).await {
                Ok(Ok(1)) if first[0] != TLS_HANDSHAKE_RECORD => return Accepted::Plain(stream),
                Ok(Ok(1)) => {}
                _ => return Accepted::Closed,
            }
        }
        // The stream is boxed: it is 1.2 KB (rustls' connection state), and it moves through
        // `serve_io`, its connection closure and `drive`, each of which kept its space in this
        // future (8.3 KB per TLS connection, most of it copies of the stream; see `drive`).
        match tokio::time::timeout(self.handshake, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                let session = tls.get_ref().1;
                let h2 = session.alpn_protocol() == Some(b"h2");
                let certs = session.peer_certificates().map(<[_]>::to_vec);
                let peer = Arc::new(Peer::new(peer, true, certs.unwrap_or_default()));
                Accepted::Tls(Box::new(tls), peer, h2)
            }
            Ok(Err(e)) => {
                debug!("TLS handshake with {} failed: {e}", Remote(peer));
                Accepted::Closed
            }
            Err(_) => {
                debug!("TLS handshake with {} timed out", Remote(peer));
                Accepted::Closed
            }
        }
    }

    /// A TLS connection whose client did not choose HTTP/2 by ALPN: HTTP/2 all the same when
    /// its first bytes are the preface, else HTTP/1.1. A TLS stream cannot be peeked, so the
    /// bytes read to tell are handed back first ([`Rewind`]).
    #[cfg(feature = "tls")]
    async fn serve_without_alpn<I>(&self, io: I, peer: Arc<Peer>, drain: watch::Receiver<bool>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let mut io = Rewind::new(io);
        if let Some(h2) = self.identified(&mut io, peer.addr()).await {
            self.serve_io(io, peer, drain, h2).await;
        }
    }

    /// Waits (up to the handshake timeout) until a peer has sent the whole HTTP/2
    /// preface (`Some(true)`) or a byte that rules it out (`Some(false)`); `None` (close) for a
    /// peer that stays silent, stalls inside the preface or hangs up.
    async fn identified<S: Socket>(
        &self,
        stream: &mut S,
        peer: Option<SocketAddr>,
    ) -> Option<bool> {
        let wait = async {
            let mut buf = [0u8; PREFACE.len()];
            loop {
                match stream.peek(&mut buf).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) if buf[..n] != PREFACE[..n] => return Some(false),
                    Ok(n) if n == buf.len() => return Some(true),
                    // Part of the preface: peek returns at once while those bytes wait, so
                    // look again a little later (a rare path; real clients send it whole).
                    Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        };
        match tokio::time::timeout(self.handshake, wait).await {
            Ok(ok) => ok,
            Err(_) => {
                debug!(
                    "{} sent no protocol preface in {:?}; closing",
                    Remote(peer),
                    self.handshake
                );
                None
            }
        }
    }

    /// Serves one connection until it ends: HTTP/2 (`h2`: the preface was seen, or ALPN chose
    /// it) on h2 directly, anything else through hyper as HTTP/1.1.
    async fn serve_io<I>(&self, io: I, peer: Arc<Peer>, drain: watch::Receiver<bool>, h2: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        if h2 {
            let addr = peer.addr();
            let shared = self.shared.clone();
            let conn = || H2Connection::new(io, &self.h2, shared, peer, self.limits);
            return self
                .drive(conn, H2Connection::graceful_shutdown, addr, drain)
                .await;
        }
        Box::pin(self.serve_hyper(io, peer, drain)).await;
    }

    /// Serves an HTTP/1.1 connection through hyper.
    async fn serve_hyper<I>(&self, io: I, peer: Arc<Peer>, drain: watch::Receiver<bool>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        let addr = peer.addr();
        let svc = service_fn(move |req: http::Request<Incoming>| {
            let http1 = req.version() < http::Version::HTTP_2;
            call::serve(&shared, &peer, req.map(|b| RequestBody::new(b, http1)))
                .map(Ok::<_, Infallible>)
        });
        let conn = || self.http1.serve_connection(TokioIo::new(io), svc);
        self.drive(conn, http1::Connection::graceful_shutdown, addr, drain)
            .await;
    }

    /// Runs a connection until it ends; a server drain or the connection's maximum age starts
    /// its graceful shutdown (GOAWAY), and the grace period bounds an aged one.
    ///
    /// The connection is made here (`make`), not passed in: an async fn keeps the space of a
    /// parameter it has moved from for its whole life (rust-lang/rust#62958), and a connection
    /// passed in took its size twice in every connection's task (1.5 KB for HTTP/2).
    async fn drive<C, E>(
        &self,
        make: impl FnOnce() -> C,
        graceful_shutdown: impl Fn(std::pin::Pin<&mut C>),
        peer: Option<SocketAddr>,
        mut drain: watch::Receiver<bool>,
    ) where
        C: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut conn = std::pin::pin!(make());
        let far = Duration::from_secs(86_400 * 365);
        let aged = tokio::time::sleep(self.max_age.unwrap_or(far));
        let mut aged = std::pin::pin!(aged);
        let mut draining = false;
        let result = loop {
            tokio::select! {
                r = conn.as_mut() => break r,
                () = async { drop(drain.wait_for(|d| *d).await) }, if !draining => {
                    draining = true;
                    graceful_shutdown(conn.as_mut());
                }
                () = &mut aged, if !draining => {
                    debug!("connection from {} reached its maximum age; draining", Remote(peer));
                    graceful_shutdown(conn.as_mut());
                    match tokio::time::timeout(self.grace, conn.as_mut()).await {
                        Ok(r) => break r,
                        Err(_) => {
                            debug!("connection from {}: grace period over, closing", Remote(peer));
                            return;
                        }
                    }
                }
            }
        };
        if let Err(e) = result {
            debug!("connection from {} ended: {e}", Remote(peer));
        }
    }
}

/// What a TLS port's first step leaves: a TLS stream (its peer, and whether ALPN chose HTTP/2),
/// a plaintext one (a port that takes both), or nothing to serve.
#[cfg(feature = "tls")]
enum Accepted<S> {
    Tls(Box<tokio_rustls::server::TlsStream<S>>, Arc<Peer>, bool),
    Plain(S),
    Closed,
}

/// A plaintext peer.
fn plain(peer: Option<SocketAddr>) -> Arc<Peer> {
    Arc::new(Peer::new(peer, false, Vec::new()))
}

/// A peer as logs name it: its address, or a Unix socket's (or an in-memory stream's) peer.
struct Remote(Option<SocketAddr>);

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(a) => write!(f, "{a}"),
            None => f.write_str("a local peer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::{net::TcpStream, sync::watch};

    /// A server with no services, a connected socket to serve, and a drain signal.
    async fn a_connection() -> (crate::Server, TcpStream, watch::Receiver<bool>) {
        let server = crate::Server::builder().build().unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        // The sender dropped: the signal never fires, and these futures are only measured.
        let (_, rx) = watch::channel(false);
        (server, c, rx)
    }

    /// What every connection's task holds for its life stays small: the TLS and hyper paths
    /// boxed, the HTTP/2 connection inline and made in `drive` (9,856 bytes with all three
    /// inline; 3,624 with the connection passed into `drive`; 2,312 now).
    #[tokio::test]
    async fn a_connections_future_stays_small() {
        let (server, c, rx) = a_connection().await;
        let fut = server.conn.clone().serve_connection(c, None, rx);
        let size = std::mem::size_of_val(&fut);
        println!("serve_connection: {size} bytes");
        assert!(size <= 2560, "{size} bytes");
    }

    /// The TLS handshake (boxed inside `serve_connection`, and freed once done: 1,512 bytes
    /// while it runs) is all the TLS path adds: the connection is then served by
    /// `serve_connection`'s own future, which stays as small as a plaintext one's
    /// (`a_connections_future_stays_small`). (The size is the type's, so a server without TLS
    /// measures it as well as one with.)
    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn a_tls_handshake_s_future_stays_small() {
        let (server, c, _rx) = a_connection().await;
        let size = std::mem::size_of_val(&server.conn.tls_accept(c, None));
        assert!(size <= 2048, "{size} bytes");
    }
}
