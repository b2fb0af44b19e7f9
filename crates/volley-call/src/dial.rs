//! Dialling as grpcurl does: the TLS config first (`-cacert`, `-cert`/`-key`, `-insecure`), then
//! connect attempts until the dial deadline (a refused or unreachable address is retried, as
//! grpc-go does, and ends in `context deadline exceeded`), a TLS failure at once in Go's words
//! (`x509: certificate signed by unknown authority`), then the HTTP/2 handshake on volley's
//! client. Any address form volley's client takes works: `host:port`, `unix:/path`,
//! `dns:///host:port`, `ipv4:a:p,b:p`; `-unix` makes the address a socket path.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpStream, UnixStream},
    time::Instant,
};
use volley_client::{
    Connection, Endpoint, Target,
    tls::{TlsOptions, client_config},
};

use crate::{goerr, hint};

/// What dialling needs from the flags.
#[derive(Clone, Debug)]
pub struct DialOpts {
    /// The address as given (`-unix` already applied: `unix://PATH`).
    pub target: String,
    /// `-plaintext`.
    pub plaintext: bool,
    /// `-insecure`.
    pub insecure: bool,
    /// `-cacert`, `-cert`, `-key` (empty when not given).
    pub cacert: String,
    /// Client certificate.
    pub cert: String,
    /// Client key.
    pub key: String,
    /// `-authority`.
    pub authority: String,
    /// `-servername`.
    pub servername: String,
    /// `-keepalive-time`.
    pub keepalive: Option<Duration>,
    /// When the dial gives up (`-connect-timeout`, within `-max-time`).
    pub deadline: Instant,
}

/// Why there is no connection, and what grpcurl prints for it.
#[derive(Debug)]
pub enum DialError {
    /// A usage error (exit 2): `Cannot specify different values for -servername and -authority.`
    Usage(String),
    /// `Failed to create TLS config: ...` (exit 1).
    TlsConfig(String),
    /// `Failed to dial target host "T": ...` (exit 1), and what to change, when that is known.
    Dial(String, Option<String>),
}

/// A ready connection.
pub struct Dialed {
    /// The HTTP/2 connection.
    pub conn: Connection,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The `:authority` calls carry.
    pub authority: String,
    /// Time spent building the TLS config (grpcurl's `TLS Setup`), when TLS is used.
    pub tls_setup: Option<Duration>,
}

/// Dials `o.target`; `warn` gets grpcurl's warnings.
pub async fn dial(o: &DialOpts, warn: &mut Vec<String>) -> Result<Dialed, DialError> {
    let tls = if o.plaintext {
        None
    } else {
        let started = std::time::Instant::now();
        let cfg = tls_config(o).map_err(DialError::TlsConfig)?;
        if !o.servername.is_empty() && !o.authority.is_empty() {
            if o.servername == o.authority {
                warn.push(
                    "Both -servername and -authority are present; prefer only -authority.".into(),
                );
            } else {
                return Err(DialError::Usage(
                    "Cannot specify different values for -servername and -authority.".into(),
                ));
            }
        }
        Some((cfg, started.elapsed()))
    };
    let deadline_exceeded = || DialError::Dial("context deadline exceeded".into(), None);
    let Ok(target) = Target::parse(&with_default_port(&o.target)) else {
        // grpc-go keeps trying an address it cannot use until the dial deadline.
        tokio::time::sleep_until(o.deadline).await;
        return Err(deadline_exceeded());
    };
    let mut ep = match Endpoint::new(target.clone()) {
        Ok(ep) => ep,
        Err(_) => {
            tokio::time::sleep_until(o.deadline).await;
            return Err(deadline_exceeded());
        }
    };
    ep.keepalive = o.keepalive;
    if !o.authority.is_empty() {
        ep.authority = o.authority.clone();
    }
    let tls_name = [&o.servername, &o.authority]
        .into_iter()
        .find(|n| !n.is_empty())
        .map(|n| host_of(n).to_owned());
    if let Some(name) = &tls_name {
        ep = ep
            .server_name(name)
            .map_err(|e| DialError::Dial(e.to_string(), None))?;
    }
    let attempt = async {
        let mut backoff = Duration::from_secs(1);
        loop {
            match connect(&ep, &target).await {
                Ok(io) => return Ok(io),
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = backoff.mul_f64(1.6).min(Duration::from_secs(120));
                }
            }
        }
    };
    let (io, addrs) = tokio::time::timeout_at(o.deadline, attempt)
        .await
        .map_err(|_| deadline_exceeded())?
        .map_err(|e: std::io::Error| DialError::Dial(goerr::io(&e), None))?;
    let conn = match &tls {
        None => handshake(&ep, io, o.deadline, addrs)
            .await
            .map_err(|e| match e {
                DialError::Dial(text, None) if text != "context deadline exceeded" => {
                    DialError::Dial(text, Some(hint::PLAINTEXT_TO_TLS.to_owned()))
                }
                other => other,
            })?,
        Some((cfg, _)) => {
            let connector = tokio_rustls::TlsConnector::from(cfg.clone());
            let stream =
                tokio::time::timeout_at(o.deadline, connector.connect(ep.server_name.clone(), io))
                    .await
                    .map_err(|_| deadline_exceeded())?
                    .map_err(|e| DialError::Dial(goerr::tls(&e, &ep.server_name), hint::tls(&e)))?;
            handshake(&ep, stream, o.deadline, addrs).await?
        }
    };
    Ok(Dialed {
        conn,
        scheme: if tls.is_some() { "https" } else { "http" },
        authority: ep.authority.clone(),
        tls_setup: tls.map(|(_, t)| t),
    })
}

async fn handshake<T>(
    ep: &Endpoint,
    io: T,
    deadline: Instant,
    addrs: Option<(SocketAddr, SocketAddr)>,
) -> Result<Connection, DialError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match tokio::time::timeout_at(deadline, Connection::handshake_on(ep, io)).await {
        Err(_) => Err(DialError::Dial("context deadline exceeded".into(), None)),
        // The peer closed or reset the connection during the handshake (a TLS server spoken
        // to in plaintext): grpc-go reports the read error, `EOF` or Go's net.OpError.
        Ok(Err(e)) => Err(DialError::Dial(
            match addrs {
                Some((local, peer)) if e.to_string().to_lowercase().contains("reset") => {
                    format!("read tcp {local}->{peer}: read: connection reset by peer")
                }
                _ => "EOF".into(),
            },
            None,
        )),
        Ok(Ok(c)) => Ok(c),
    }
}

/// A boxed byte stream to the target.
pub(crate) type Io = Box<dyn IoStream>;

/// What a dialled stream offers.
pub(crate) trait IoStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> IoStream for T {}

/// The connected stream (through `ep`'s proxy when one applies: `volley_client::proxy`), and
/// its two ends when it is TCP (for Go's read errors).
async fn connect(
    ep: &Endpoint,
    target: &Target,
) -> std::io::Result<(Io, Option<(SocketAddr, SocketAddr)>)> {
    let tcp = |s: TcpStream| -> (Io, Option<(SocketAddr, SocketAddr)>) {
        let _ = s.set_nodelay(true);
        let ends = s.local_addr().ok().zip(s.peer_addr().ok());
        (Box::new(s), ends)
    };
    Ok(match target {
        Target::Tcp(hp) => tcp(volley_client::connection::tcp(ep, hp).await?),
        Target::Unix(p) => (Box::new(UnixStream::connect(p).await?), None),
        Target::List(addrs) => tcp(TcpStream::connect(addrs.as_slice()).await?),
    })
}

/// `dns:///host` without a port gets gRPC's DNS default, 443.
fn with_default_port(target: &str) -> String {
    match target.strip_prefix("dns:///") {
        Some(rest) if !rest.contains(':') || rest.ends_with(']') => format!("{target}:443"),
        _ => target.to_owned(),
    }
}

/// The host of `host:port` (grpc-go checks certificates against the authority without its port).
fn host_of(authority: &str) -> &str {
    match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.is_empty() => {
            h.trim_start_matches('[').trim_end_matches(']')
        }
        _ => authority,
    }
}

/// grpcurl's `ClientTLSConfig`, its failures in its words, on volley's rustls set-up.
fn tls_config(o: &DialOpts) -> Result<Arc<rustls::ClientConfig>, String> {
    if !o.cert.is_empty() {
        for f in [&o.cert, &o.key] {
            let pem = std::fs::read(f).map_err(|e| {
                format!(
                    "could not load client key pair: open {f}: {}",
                    goerr::io(&e)
                )
            })?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN") {
                let what = if f == &o.cert { "certificate" } else { "key" };
                return Err(format!(
                    "could not load client key pair: tls: failed to find any PEM data in {what} input"
                ));
            }
        }
    }
    if !o.insecure && !o.cacert.is_empty() {
        let pem = std::fs::read(&o.cacert).map_err(|e| {
            format!(
                "could not read ca certificate: open {}: {}",
                o.cacert,
                goerr::io(&e)
            )
        })?;
        if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
            return Err("failed to append ca certs".into());
        }
    }
    let opts = TlsOptions {
        ca: (!o.insecure && !o.cacert.is_empty()).then(|| o.cacert.clone().into()),
        cert: (!o.cert.is_empty()).then(|| o.cert.clone().into()),
        key: (!o.key.is_empty()).then(|| o.key.clone().into()),
        skip_verify: o.insecure,
    };
    let cfg = client_config(&opts).map_err(|e| e.to_string())?;
    if std::env::var_os("SSLKEYLOGFILE").is_some() {
        let mut c = (*cfg).clone();
        c.key_log = Arc::new(rustls::KeyLogFile::new());
        return Ok(Arc::new(c));
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(host_of("localhost:443"), "localhost");
        assert_eq!(host_of("[::1]:80"), "::1");
        assert_eq!(host_of("foo"), "foo");
        assert_eq!(
            with_default_port("dns:///example.com"),
            "dns:///example.com:443"
        );
        assert_eq!(
            with_default_port("dns:///example.com:8"),
            "dns:///example.com:8"
        );
    }
}
