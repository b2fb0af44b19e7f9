//! One HTTP/2 connection on the h2 crate: dial (TCP or Unix socket, then TLS if asked), handshake,
//! and a driver task that keeps it alive. Clones share the connection.

use std::{
    sync::{
        Arc,
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

use crate::endpoint::{Endpoint, Target};

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

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS as currently in force.
    pub fn max_streams(&self) -> usize {
        self.send.current_max_send_streams()
    }
}

/// The status of a call that found no connection: UNAVAILABLE, with why.
pub(crate) fn unavailable(e: impl std::fmt::Display) -> volley_wire::Status {
    volley_wire::Status::unavailable(format!("connection error: {e}"))
}

/// A dialled byte stream (TCP or Unix socket, maybe TLS); boxed once per connection.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Opens the byte stream to `ep`: connect, then TLS when configured.
pub(crate) async fn dial_io(ep: &Endpoint) -> Result<Box<dyn Io>, ConnectError> {
    let target = ep.target.to_string();
    let io_err = |source| ConnectError::Io {
        target: target.clone(),
        source,
    };
    let io: Box<dyn Io> = match &ep.target {
        Target::Tcp(hostport) => {
            let tcp = TcpStream::connect(hostport.as_str())
                .await
                .map_err(io_err)?;
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
    io: Box<dyn Io>,
) -> Result<Box<dyn Io>, ConnectError> {
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

/// Says which side refused a TLS handshake.
#[cfg(feature = "tls")]
fn explain_tls(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => {
            format!(
                "we refused the server's certificate: {}",
                explain_certificate(c)
            )
        }
        Some(rustls::Error::AlertReceived(a)) => {
            format!("the server refused the handshake with alert {a:?} (check --cert/--key)")
        }
        Some(rustls::Error::InvalidMessage(m)) => {
            format!("the server did not speak TLS ({m:?}); is it plaintext? then use --insecure")
        }
        Some(other) => other.to_string(),
        None => format!("{e} (is the server plaintext? then use --insecure)"),
    }
}

#[cfg(feature = "tls")]
/// What is wrong with a server certificate, and which flag changes it, in one sentence.
fn explain_certificate(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as E;
    const SKIP: &str = "or skip the check with --skipTLS";
    let days = |from: rustls::pki_types::UnixTime, to: rustls::pki_types::UnixTime| {
        to.as_secs().abs_diff(from.as_secs()) / 86_400
    };
    match c {
        E::UnknownIssuer => format!(
            "it is not signed by a CA we trust; pass its CA (for a self-signed certificate, the \
             certificate itself) with --cacert, {SKIP}"
        ),
        E::NotValidForNameContext {
            expected,
            presented,
        } if presented.is_empty() => format!(
            "it names no host (no subjectAltName), so it is not valid for {}; make it with \
             -addext \"subjectAltName=DNS:{0}\", {SKIP}",
            name_of(expected)
        ),
        E::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "it is for {}, not {}; connect by one of those names or set --cname, {SKIP}",
            presented
                .iter()
                .map(|p| presented_name(p))
                .collect::<Vec<_>>()
                .join(", "),
            name_of(expected)
        ),
        E::NotValidForName => {
            format!("it is not valid for the name we connected to; set --cname, {SKIP}")
        }
        E::ExpiredContext { time, not_after } => format!(
            "it expired {} day(s) ago; renew it on the server, {SKIP}",
            days(*not_after, *time)
        ),
        E::Expired => format!("it has expired; renew it on the server, {SKIP}"),
        E::NotValidYetContext { time, not_before } => format!(
            "it is not valid for another {} day(s) (check the clocks), {SKIP}",
            days(*time, *not_before)
        ),
        E::NotValidYet => format!("it is not valid yet (check the clocks), {SKIP}"),
        E::BadSignature => format!("its signature does not verify, {SKIP}"),
        // rustls passes this webpki error on boxed in `Other`.
        E::Other(o)
            if matches!(
                o.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            format!(
                "it is a CA certificate that --cacert does not hold; pass this very certificate \
             with --cacert (a self-signed one), or give the server a certificate signed by a CA \
             in --cacert, {SKIP}"
            )
        }
        other => format!("{other:?}; check --cacert and --cname, {SKIP}"),
    }
}

#[cfg(feature = "tls")]
/// A name from the certificate as rustls lists it (`DnsName("localhost")`, `IpAddress(::1)`),
/// without the wrapping.
fn presented_name(p: &str) -> &str {
    p.strip_prefix("DnsName(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .or_else(|| {
            p.strip_prefix("IpAddress(")
                .and_then(|r| r.strip_suffix(')'))
        })
        .unwrap_or(p)
}

#[cfg(feature = "tls")]
/// A server name as the user typed it (`localhost`, `127.0.0.1`), not its Debug form.
fn name_of(name: &rustls::pki_types::ServerName<'_>) -> String {
    match name {
        rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_owned(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    }
}

fn plaintext_hint(ep: &Endpoint, e: &h2::Error) -> String {
    if !ep.is_tls() {
        format!("{e} (the server may want TLS: drop --insecure)")
    } else {
        e.to_string()
    }
}

async fn handshake(ep: &Endpoint, io: Box<dyn Io>) -> Result<Connection, ConnectError> {
    let (send, mut conn) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_concurrent_reset_streams(1024)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| ConnectError::Http2 {
            target: ep.target.to_string(),
            detail: plaintext_hint(ep, &e),
        })?;
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
        return Err(ConnectError::Http2 {
            target: ep.target.to_string(),
            detail: plaintext_hint(ep, &e),
        });
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
    Ok(Connection { send, usable })
}
