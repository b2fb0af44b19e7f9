//! One HTTP/2 connection on the h2 crate: dial (TCP or Unix socket, then TLS if asked), handshake
//! (a failure explained by what the server sent, kept by a `Witness`), and a driver task that
//! keeps it alive. Clones share the connection.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpStream, UnixStream},
};

use crate::endpoint::{Endpoint, IoStream, Target};

mod explain;
mod witness;

use explain::explain_handshake;
#[cfg(feature = "tls")]
use explain::explain_tls;
use witness::{Seen, Witness};

/// Per-stream receive window (1 MiB).
pub const STREAM_WINDOW: u32 = 1 << 20;
/// Per-connection receive window (16 MiB). h2 also sizes its small-DATA-frame budget from it
/// (half), which a stream of small replies read late would otherwise exhaust.
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// Why a connection could not be opened; the text says which step and which side.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TCP or socket connect failed.
    #[error("cannot connect to {target}: {source}")]
    Io {
        /// The target.
        target: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The whole dial took longer than the connect timeout.
    #[error("timed out after {after:?} connecting to {target}")]
    Timeout {
        /// The target.
        target: String,
        /// The timeout.
        after: Duration,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with {target} failed: {detail}")]
    Tls {
        /// The target.
        target: String,
        /// Which side refused, and why.
        detail: String,
    },
    /// The HTTP/2 handshake failed.
    #[error("HTTP/2 handshake with {target} failed: {detail}")]
    Http2 {
        /// The target.
        target: String,
        /// What went wrong.
        detail: String,
    },
}

/// A shared HTTP/2 connection; cheap to clone.
#[derive(Clone, Debug)]
pub struct Connection {
    send: SendRequest<Bytes>,
    /// False once the connection's driver has ended (closed, failed keepalive) or the peer sent
    /// GOAWAY (set by whoever saw it): no new calls should go here.
    usable: Arc<AtomicBool>,
    /// The server has answered a call here (set by the call, or by its lease's end): a channel
    /// backs off its redials after a connection that closed without (`channel::pool`).
    replied: Arc<AtomicBool>,
}

/// Clears the flag when the driver task ends, however it ends.
struct MarkClosed(Arc<AtomicBool>);

impl Drop for MarkClosed {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Connection {
    /// Dials `ep` within its connect timeout. The driver task runs on the current runtime.
    pub async fn connect(ep: &Endpoint) -> Result<Connection, ConnectError> {
        let target = ep.target.to_string();
        match tokio::time::timeout(ep.connect_timeout, dial(ep)).await {
            Ok(r) => r,
            Err(_) => Err(ConnectError::Timeout {
                target,
                after: ep.connect_timeout,
            }),
        }
    }

    /// Runs the HTTP/2 handshake on a stream the caller dialled itself (its own TCP, Unix socket
    /// or TLS set-up, to report each step's failure in its own words); `ep` gives the target's
    /// name for errors and the keepalive.
    pub async fn handshake_on<T>(ep: &Endpoint, io: T) -> Result<Connection, ConnectError>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        handshake(ep, Box::new(io)).await
    }

    /// The h2 handle for opening streams.
    pub fn sender(&self) -> &SendRequest<Bytes> {
        &self.send
    }

    /// Opens a call's stream: waits for room for a new stream, sends the request `head`
    /// (`CallHead::request`, or a typed call's), and returns the reply to come and the request
    /// body to write. A failure here means the server never saw the call.
    pub async fn open_stream(
        &self,
        head: http::Request<()>,
    ) -> Result<(h2::client::ResponseFuture, h2::SendStream<Bytes>), volley_wire::Status> {
        let transport = |e: h2::Error| crate::attempt::transport_status(&e);
        let mut send = self.send.clone().ready().await.map_err(transport)?;
        send.send_request(head, false).map_err(transport)
    }

    /// True while new calls may be placed here.
    pub fn is_usable(&self) -> bool {
        self.usable.load(Ordering::Acquire)
    }

    /// Stops placing new calls here (the peer said GOAWAY, or a call saw the connection fail).
    /// Calls in flight finish normally.
    pub fn retire(&self) {
        self.usable.store(false, Ordering::Release);
    }

    /// Notes that the server answered a call here.
    pub(crate) fn mark_replied(&self) {
        if !self.replied.load(Ordering::Relaxed) {
            self.replied.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the server has answered a call here.
    pub(crate) fn replied(&self) -> bool {
        self.replied.load(Ordering::Relaxed)
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS as currently in force.
    pub fn max_streams(&self) -> usize {
        self.send.current_max_send_streams()
    }
}

/// The status of a call that found no connection: UNAVAILABLE, with why.
pub(crate) fn unavailable(e: impl std::fmt::Display) -> volley_wire::Status {
    volley_wire::Status::unavailable(format!("connection error: {e}"))
}

/// A TCP connection to `hostport` for `ep`: through the proxy its setting (or the environment)
/// names for that target ([`proxy`](crate::proxy)), else straight there. Every dial of
/// volley's clients comes here (`volley call`'s own dialer too).
pub async fn tcp(ep: &Endpoint, hostport: &str) -> std::io::Result<TcpStream> {
    let proxy = ep
        .proxy
        .for_target(hostport)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    match proxy {
        Some(p) => p.connect(hostport).await,
        None => TcpStream::connect(hostport).await,
    }
}

/// Opens the byte stream to `ep`: connect, then TLS when configured.
pub(crate) async fn dial_io(ep: &Endpoint) -> Result<Box<dyn IoStream>, ConnectError> {
    let target = ep.target.to_string();
    let io_err = |source| ConnectError::Io {
        target: target.clone(),
        source,
    };
    if let Some(d) = &ep.dialer {
        return d.dial().map_err(io_err);
    }
    let io: Box<dyn IoStream> = match &ep.target {
        Target::Tcp(hostport) => {
            let tcp = tcp(ep, hostport).await.map_err(io_err)?;
            let _ = tcp.set_nodelay(true);
            Box::new(tcp)
        }
        Target::Unix(path) => Box::new(UnixStream::connect(path).await.map_err(io_err)?),
        // One connection to a list is to one of its addresses, the first that answers (a
        // `Channel` balances over all of them).
        Target::List(addrs) => {
            let tcp = TcpStream::connect(addrs.as_slice()).await.map_err(io_err)?;
            let _ = tcp.set_nodelay(true);
            Box::new(tcp)
        }
    };
    #[cfg(feature = "tls")]
    if let Some(cfg) = &ep.tls {
        return tls_over(ep, cfg, io).await;
    }
    Ok(io)
}

/// The TLS handshake over a dialled stream.
#[cfg(feature = "tls")]
async fn tls_over(
    ep: &Endpoint,
    cfg: &Arc<rustls::ClientConfig>,
    io: Box<dyn IoStream>,
) -> Result<Box<dyn IoStream>, ConnectError> {
    let connector = tokio_rustls::TlsConnector::from(cfg.clone());
    let tls = connector
        .connect(ep.server_name.clone(), io)
        .await
        .map_err(|e| ConnectError::Tls {
            target: ep.target.to_string(),
            detail: explain_tls(&e),
        })?;
    Ok(Box::new(tls))
}

async fn dial(ep: &Endpoint) -> Result<Connection, ConnectError> {
    let io = dial_io(ep).await?;
    handshake(ep, io).await
}

async fn handshake(ep: &Endpoint, io: Box<dyn IoStream>) -> Result<Connection, ConnectError> {
    // Dropped when this returns: the witness then stops keeping anything.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let io = Witness {
        io,
        seen: Some(Arc::downgrade(&seen)),
        failed_write: None,
    };
    let failed = |e: h2::Error| ConnectError::Http2 {
        target: ep.target.to_string(),
        detail: explain_handshake(ep, &e, &seen.lock().unwrap()),
    };
    let (send, mut conn) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_concurrent_reset_streams(1024)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(failed)?;
    let mut ping = conn.ping_pong().expect("ping_pong is taken once, here");
    let usable = Arc::new(AtomicBool::new(true));
    let mark = MarkClosed(usable.clone());
    let driver = tokio::spawn(async move {
        let _mark = mark;
        let _ = conn.await;
    });
    // Like grpc-go, a connection is ready only once the server has answered: a PING round trip
    // proves its preface arrived (a silent peer then fails within the connect timeout).
    if let Err(e) = ping.ping(h2::Ping::opaque()).await {
        driver.abort();
        return Err(failed(e));
    }
    if let Some(every) = ep.keepalive {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let pong = tokio::time::timeout(every, ping.ping(h2::Ping::opaque())).await;
                if !matches!(pong, Ok(Ok(_))) || driver.is_finished() {
                    driver.abort();
                    break;
                }
            }
        });
    }
    Ok(Connection {
        send,
        usable,
        replied: Arc::new(AtomicBool::new(false)),
    })
}
