//! Where a server is and how to speak to it: gRPC's target names (`host:port`, `dns:///host:port`,
//! `ipv4:a:p,b:p`, `ipv6:[a]:p,[b]:p`, `unix:/path`), plaintext or TLS, the `:authority`, and
//! the dial and keepalive timers.

#[cfg(feature = "tls")]
use std::sync::Arc;
use std::{net::SocketAddr, path::PathBuf, time::Duration};

#[cfg(feature = "tls")]
use rustls::ClientConfig;
use rustls_pki_types::ServerName;

/// Default dial timeout (ghz `--connect-timeout`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an address or a name cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// `unix:` with no path.
    #[error("invalid target {0:?}: empty socket path")]
    EmptySocketPath(String),
    /// Neither `host:port` nor `unix:/path`.
    #[error(
        "invalid target {0:?}: expected host:port, dns:///host:port, ipv4:ip:port,..., ipv6:[ip]:port,... or unix:/path"
    )]
    BadTarget(String),
    /// The host is not a valid TLS server name.
    #[error("invalid server name {host:?}: {problem}")]
    ServerName {
        /// The host.
        host: String,
        /// rustls's words.
        problem: String,
    },
    /// An `https://` target's TLS config could not be made.
    #[error("cannot set up TLS for {target:?}: {problem}")]
    Tls {
        /// The target.
        target: String,
        /// What failed.
        problem: String,
    },
    /// `--cname` is not a valid TLS server name.
    #[error("invalid --cname {name:?}: {problem}")]
    Cname {
        /// The name given.
        name: String,
        /// rustls's words.
        problem: String,
    },
}

/// A server address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `host:port` (a name or an IP; `dns:///` prefixes are accepted and dropped).
    Tcp(String),
    /// `unix:/path/to/socket`.
    Unix(PathBuf),
    /// `ipv4:a:p,b:p` or `ipv6:[a]:p,[b]:p`: these addresses, each a backend (a
    /// [`Channel`](crate::Channel) balances over them).
    List(Vec<SocketAddr>),
}

impl Target {
    /// Parses ghz's target forms.
    pub fn parse(s: &str) -> Result<Target, EndpointError> {
        if let Some(path) = s
            .strip_prefix("unix://")
            .or_else(|| s.strip_prefix("unix:"))
        {
            if path.is_empty() {
                return Err(EndpointError::EmptySocketPath(s.to_owned()));
            }
            return Ok(Target::Unix(PathBuf::from(path)));
        }
        for (scheme, v6) in [("ipv4:", false), ("ipv6:", true)] {
            let Some(list) = s.strip_prefix(scheme) else {
                continue;
            };
            let list = list.strip_prefix("///").unwrap_or(list);
            let addrs: Vec<SocketAddr> = list
                .split(',')
                .map(|a| a.trim().parse::<SocketAddr>())
                .collect::<Result<_, _>>()
                .map_err(|_| EndpointError::BadTarget(s.to_owned()))?;
            if addrs.is_empty() || addrs.iter().any(|a| a.is_ipv6() != v6) {
                return Err(EndpointError::BadTarget(s.to_owned()));
            }
            return Ok(Target::List(addrs));
        }
        let hostport = s
            .strip_prefix("dns:///")
            .or_else(|| s.strip_prefix("passthrough:///"))
            .unwrap_or(s);
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Target::Tcp(hostport.to_owned()))
            }
            _ => Err(EndpointError::BadTarget(s.to_owned())),
        }
    }

    /// The host part (for TLS server names and the default authority).
    pub fn host(&self) -> &str {
        match self {
            Target::Tcp(hp) => {
                let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
                host.trim_start_matches('[').trim_end_matches(']')
            }
            Target::Unix(_) => "localhost",
            Target::List(_) => "localhost",
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp(hp) => f.write_str(hp),
            Target::Unix(p) => write!(f, "unix:{}", p.display()),
            Target::List(addrs) => {
                let v6 = addrs.first().is_some_and(SocketAddr::is_ipv6);
                f.write_str(if v6 { "ipv6:" } else { "ipv4:" })?;
                for (i, a) in addrs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{a}")?;
                }
                Ok(())
            }
        }
    }
}

/// Everything needed to open connections to one server.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Where.
    pub target: Target,
    /// TLS config; `None` for plaintext h2c. Needs the `tls` feature.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub tls: Option<Arc<ClientConfig>>,
    /// Name checked against the server certificate (ghz `--cname`; default: the host).
    pub server_name: ServerName<'static>,
    /// The `:authority` sent (ghz `--authority`; default: the target).
    pub authority: String,
    /// Dial (TCP + TLS + HTTP/2 handshake) timeout.
    pub connect_timeout: Duration,
    /// HTTP/2 PING interval and timeout; `None` disables keepalive.
    pub keepalive: Option<Duration>,
    /// Opens connections itself instead of a socket to `target` (an in-process server, e.g.
    /// volley-mock's `MockServer::channel`); `target` then only names the server.
    pub dialer: Option<Dialer>,
    /// The HTTP proxy its connections go through (`crate::proxy`): by default the
    /// environment's (`HTTPS_PROXY`, `NO_PROXY`).
    pub(crate) proxy: crate::proxy::ProxySetting,
}

/// A dialled byte stream (TCP or Unix socket, maybe TLS, or a [`Dialer`]'s); boxed once per
/// connection.
pub trait IoStream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> IoStream for T {}

/// A byte stream a [`Dialer`] opens: either end of an in-process pipe, or anything else that
/// reads and writes.
pub type DialedIo = Box<dyn IoStream>;

/// Opens connections for an [`Endpoint`] with no socket: called once per connection the
/// channel opens. Cheap to clone.
#[derive(Clone)]
pub struct Dialer(std::sync::Arc<dyn Fn() -> std::io::Result<DialedIo> + Send + Sync>);

impl Dialer {
    /// A dialer from a function that returns one connection's stream each time it is called.
    pub fn new(f: impl Fn() -> std::io::Result<DialedIo> + Send + Sync + 'static) -> Dialer {
        Dialer(std::sync::Arc::new(f))
    }

    /// One connection's stream.
    pub fn dial(&self) -> std::io::Result<DialedIo> {
        (self.0)()
    }
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dialer(..)")
    }
}

impl Endpoint {
    /// The same endpoint dialled at one of its addresses (a balancer's backend): its
    /// `:authority`, TLS name and timers kept.
    pub(crate) fn at(&self, addr: SocketAddr) -> Endpoint {
        let mut one = self.clone();
        one.target = Target::Tcp(addr.to_string());
        one
    }

    /// A plaintext endpoint with default timers.
    pub fn new(target: Target) -> Result<Endpoint, EndpointError> {
        let server_name = ServerName::try_from(target.host().to_owned()).map_err(|e| {
            EndpointError::ServerName {
                host: target.host().to_owned(),
                problem: e.to_string(),
            }
        })?;
        let authority = match &target {
            Target::Tcp(hp) => hp.clone(),
            Target::Unix(_) | Target::List(_) => "localhost".into(),
        };
        Ok(Endpoint {
            target,
            #[cfg(feature = "tls")]
            tls: None,
            server_name,
            authority,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            keepalive: None,
            dialer: None,
            proxy: crate::proxy::ProxySetting::default(),
        })
    }

    /// Dials through the HTTP proxy at `url` (`http://[user:password@]host:port`, CONNECT), or,
    /// with `None`, never through one, whatever `HTTPS_PROXY` says. By default an endpoint
    /// follows the environment, as grpc-go does (see [`proxy`](crate::proxy)).
    pub fn proxy(mut self, url: Option<&str>) -> Result<Self, crate::proxy::ProxyError> {
        self.proxy = match url {
            Some(u) => crate::proxy::ProxySetting::Through(std::sync::Arc::new(
                crate::proxy::Proxy::parse(u)?,
            )),
            None => crate::proxy::ProxySetting::Off,
        };
        Ok(self)
    }

    /// Connections opened by `dialer` (no socket, no TLS); `target` names the server in
    /// `:authority` and errors.
    #[must_use]
    pub fn with_dialer(mut self, dialer: Dialer) -> Self {
        self.dialer = Some(dialer);
        self
    }

    /// Uses TLS with `config`. Needs the `tls` feature.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    #[must_use]
    pub fn tls(mut self, config: Arc<ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Whether connections to it speak TLS.
    #[cfg(feature = "tls")]
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether connections to it speak TLS: never, without the `tls` feature.
    #[cfg(not(feature = "tls"))]
    pub fn is_tls(&self) -> bool {
        false
    }

    /// The endpoint a URI or target names, as tonic's `Endpoint` takes them: `http://host:port`
    /// (h2c), `https://host:port` (TLS with the system's roots; port 443 when none is given), or
    /// any form [`Target::parse`] takes (`host:port`, `dns:///`, `ipv4:`, `unix:`).
    pub fn from_target_str(s: &str) -> Result<Endpoint, EndpointError> {
        let with_port = |rest: &str, port: u16| {
            let host_part = rest.split('/').next().unwrap_or(rest);
            let has_port = host_part
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.ends_with(':') && p.parse::<u16>().is_ok())
                && !(host_part.starts_with('[') && host_part.ends_with(']'));
            if has_port {
                host_part.to_owned()
            } else {
                format!("{host_part}:{port}")
            }
        };
        #[cfg(not(feature = "tls"))]
        if s.starts_with("https://") {
            return Err(EndpointError::Tls {
                target: s.to_owned(),
                problem: "this volley-client is built without its `tls` feature".into(),
            });
        }
        #[cfg(feature = "tls")]
        if let Some(rest) = s.strip_prefix("https://") {
            let ep = Endpoint::new(Target::parse(&with_port(rest, 443))?)?;
            let cfg =
                crate::tls::client_config(&crate::tls::TlsOptions::default()).map_err(|e| {
                    EndpointError::Tls {
                        target: s.to_owned(),
                        problem: e.to_string(),
                    }
                })?;
            return Ok(ep.tls(cfg));
        }
        if let Some(rest) = s.strip_prefix("http://") {
            return Endpoint::new(Target::parse(&with_port(rest, 80))?);
        }
        Endpoint::new(Target::parse(s)?)
    }

    /// Checks the certificate against `name` instead of the host.
    pub fn server_name(mut self, name: &str) -> Result<Self, EndpointError> {
        self.server_name =
            ServerName::try_from(name.to_owned()).map_err(|e| EndpointError::Cname {
                name: name.to_owned(),
                problem: e.to_string(),
            })?;
        Ok(self)
    }
}

impl TryFrom<&str> for Endpoint {
    type Error = EndpointError;
    fn try_from(s: &str) -> Result<Endpoint, EndpointError> {
        Endpoint::from_target_str(s)
    }
}

impl TryFrom<String> for Endpoint {
    type Error = EndpointError;
    fn try_from(s: String) -> Result<Endpoint, EndpointError> {
        Endpoint::from_target_str(&s)
    }
}

impl TryFrom<&String> for Endpoint {
    type Error = EndpointError;
    fn try_from(s: &String) -> Result<Endpoint, EndpointError> {
        Endpoint::from_target_str(s)
    }
}

impl TryFrom<http::Uri> for Endpoint {
    type Error = EndpointError;
    fn try_from(uri: http::Uri) -> Result<Endpoint, EndpointError> {
        Endpoint::from_target_str(&uri.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_as_tonic_takes_them() {
        let ep = Endpoint::try_from("http://[::1]:50051").unwrap();
        assert_eq!(ep.target, Target::Tcp("[::1]:50051".into()));
        assert!(ep.tls.is_none());
        let ep = Endpoint::try_from(format!("http://{}", "127.0.0.1:9")).unwrap();
        assert_eq!(ep.authority, "127.0.0.1:9");
        let ep = Endpoint::try_from("http://localhost").unwrap();
        assert_eq!(ep.target, Target::Tcp("localhost:80".into()));
        let ep = Endpoint::try_from("https://example.com").unwrap();
        assert_eq!(ep.target, Target::Tcp("example.com:443".into()));
        assert!(ep.tls.is_some());
        let uri: http::Uri = "http://127.0.0.1:7/".parse().unwrap();
        assert_eq!(
            Endpoint::try_from(uri).unwrap().target,
            Target::Tcp("127.0.0.1:7".into())
        );
        assert_eq!(
            Endpoint::try_from("127.0.0.1:8").unwrap().target,
            Target::Tcp("127.0.0.1:8".into())
        );
    }

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse("127.0.0.1:9090").unwrap(),
            Target::Tcp("127.0.0.1:9090".into())
        );
        assert_eq!(
            Target::parse("dns:///localhost:50051").unwrap(),
            Target::Tcp("localhost:50051".into())
        );
        assert_eq!(
            Target::parse("unix:/tmp/s.sock").unwrap(),
            Target::Unix("/tmp/s.sock".into())
        );
        assert_eq!(Target::parse("[::1]:80").unwrap().host(), "::1");
        assert_eq!(Target::parse("0.0.0.0:9503").unwrap().host(), "0.0.0.0");
        assert_eq!(
            Target::parse("ipv4:127.0.0.1:1,127.0.0.2:2").unwrap(),
            Target::List(vec![([127, 0, 0, 1], 1).into(), ([127, 0, 0, 2], 2).into()])
        );
        assert_eq!(
            Target::parse("ipv6:[::1]:50051").unwrap().to_string(),
            "ipv6:[::1]:50051"
        );
        for bad in [
            "",
            "host",
            "host:",
            ":80",
            "host:99999",
            "unix:",
            "ipv4:",
            "ipv4:[::1]:1",
            "ipv6:127.0.0.1:1",
            "ipv4:127.0.0.1",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
