//! Outbound HTTP proxies, as grpc-go dials through them: a target is reached through the proxy
//! `HTTPS_PROXY` (or `https_proxy`) names, with an HTTP/1.1 `CONNECT host:port` whose tunnel
//! then carries TLS or h2c as a direct connection would, unless `NO_PROXY` (or `no_proxy`) lists
//! it. grpc-go looks a target up as an `https://` URL, so `HTTP_PROXY` is not consulted, and
//! loopback targets (`localhost`, 127.0.0.0/8, ::1) never go through a proxy. `NO_PROXY` is
//! read as Go's `httpproxy` reads it: comma-separated; `*` for every target; an IP address; a
//! CIDR (`10.0.0.0/8`); a host name, which also covers its subdomains (`example.com`), or only
//! them with a leading dot (`.example.com`, `*.example.com`); each optionally with `:port`.
//! An [`Endpoint`](crate::Endpoint) can name its own proxy, or none
//! ([`Endpoint::proxy`](crate::Endpoint::proxy)); [`connection::tcp`](crate::connection::tcp)
//! dials by it.

use std::{
    net::IpAddr,
    sync::{Arc, OnceLock},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// An HTTP proxy: where it listens, and the credentials its URL carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proxy {
    /// `host:port` of the proxy.
    pub addr: String,
    /// `Proxy-Authorization` value (`Basic ...`) from the URL's `user:password@`.
    authorization: Option<String>,
}

/// Why a proxy URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("proxy {url:?}: {problem}")]
pub struct ProxyError {
    url: String,
    problem: String,
}

impl Proxy {
    /// `http://[user:password@]host[:port]` (port 80 when none), or `host:port` alone, as Go
    /// takes a proxy URL without a scheme.
    pub fn parse(url: &str) -> Result<Proxy, ProxyError> {
        let err = |problem: &str| ProxyError {
            url: url.to_owned(),
            problem: problem.to_owned(),
        };
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => {
                return Err(err(&format!(
                    "a {scheme}:// proxy is not supported (volley, as grpc-go, tunnels through an \
                     http:// proxy with CONNECT)"
                )));
            }
            None => url,
        };
        let rest = rest.trim_end_matches('/');
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        if hostport.is_empty() || hostport.contains('/') {
            return Err(err("no host:port"));
        }
        let has_port = hostport
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && !h.ends_with(':') && p.parse::<u16>().is_ok());
        let addr = if has_port {
            hostport.to_owned()
        } else {
            format!("{hostport}:80")
        };
        let authorization = userinfo.map(|u| {
            let decoded = percent_decode(u);
            format!("Basic {}", STANDARD.encode(decoded.as_bytes()))
        });
        Ok(Proxy {
            addr,
            authorization,
        })
    }

    /// Opens a tunnel to `target` (`host:port`) through this proxy.
    pub(crate) async fn connect(&self, target: &str) -> std::io::Result<TcpStream> {
        let mut tcp = TcpStream::connect(self.addr.as_str()).await.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot reach the proxy {}: {e}", self.addr),
            )
        })?;
        let _ = tcp.set_nodelay(true);
        let mut req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
        if let Some(a) = &self.authorization {
            req.push_str(&format!("Proxy-Authorization: {a}\r\n"));
        }
        req.push_str("User-Agent: volley\r\n\r\n");
        tcp.write_all(req.as_bytes()).await?;
        // The reply's head, read a byte at a time: nothing past it may be taken from the tunnel.
        let mut head = Vec::with_capacity(128);
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() > 16 << 10 {
                return Err(std::io::Error::other(format!(
                    "the proxy {} sent more than 16 KiB of headers for CONNECT",
                    self.addr
                )));
            }
            let b = tcp.read_u8().await.map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "the proxy {} closed before answering CONNECT: {e}",
                        self.addr
                    ),
                )
            })?;
            head.push(b);
        }
        let status = String::from_utf8_lossy(&head);
        let line = status.lines().next().unwrap_or_default().trim().to_owned();
        let code = line.split_whitespace().nth(1).unwrap_or_default();
        if !code.starts_with('2') {
            return Err(std::io::Error::other(format!(
                "the proxy {} refused CONNECT {target}: {line}",
                self.addr
            )));
        }
        Ok(tcp)
    }
}

/// Which proxy an endpoint's connections go through.
#[derive(Clone, Debug, Default)]
pub(crate) enum ProxySetting {
    /// `HTTPS_PROXY` and `NO_PROXY`, as grpc-go reads them.
    #[default]
    Environment,
    /// Never through a proxy.
    Off,
    /// Always through this one (loopback targets too).
    Through(Arc<Proxy>),
}

/// The environment's proxy and exceptions, read once.
#[derive(Debug, Default)]
struct FromEnv {
    proxy: Option<Result<Proxy, ProxyError>>,
    no_proxy: NoProxy,
}

fn env_any(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

fn from_env() -> &'static FromEnv {
    static ENV: OnceLock<FromEnv> = OnceLock::new();
    ENV.get_or_init(|| FromEnv {
        proxy: env_any(&["HTTPS_PROXY", "https_proxy"]).map(|u| Proxy::parse(&u)),
        no_proxy: NoProxy::parse(&env_any(&["NO_PROXY", "no_proxy"]).unwrap_or_default()),
    })
}

impl ProxySetting {
    /// The proxy for a connection to `hostport`, if any; `Err` when the environment names one
    /// that cannot be used.
    pub(crate) fn for_target(&self, hostport: &str) -> Result<Option<Arc<Proxy>>, ProxyError> {
        match self {
            ProxySetting::Off => Ok(None),
            ProxySetting::Through(p) => Ok(Some(p.clone())),
            ProxySetting::Environment => {
                let env = from_env();
                match &env.proxy {
                    None => Ok(None),
                    Some(Err(e)) => Err(e.clone()),
                    Some(Ok(p)) if env.no_proxy.proxied(hostport) => Ok(Some(Arc::new(p.clone()))),
                    Some(Ok(_)) => Ok(None),
                }
            }
        }
    }
}

/// `NO_PROXY`'s entries.
#[derive(Debug, Default, PartialEq)]
pub struct NoProxy {
    all: bool,
    entries: Vec<Entry>,
}

#[derive(Debug, PartialEq)]
enum Entry {
    Ip(IpAddr, Option<u16>),
    Cidr(IpAddr, u8),
    /// `.example.com`, and whether `example.com` itself matches too.
    Domain(String, bool, Option<u16>),
}

fn split_port(s: &str) -> (&str, Option<u16>) {
    if let Some(inner) = s.strip_prefix('[') {
        // [::1]:80 or [::1]
        return match inner.split_once(']') {
            Some((h, rest)) => (h, rest.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => match p.parse() {
            Ok(port) => (h, Some(port)),
            Err(_) => (s, None),
        },
        _ => (s, None),
    }
}

impl NoProxy {
    /// Parses a `NO_PROXY` value.
    pub fn parse(value: &str) -> NoProxy {
        let mut out = NoProxy::default();
        for raw in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let e = raw.to_ascii_lowercase();
            if e == "*" {
                out.all = true;
                continue;
            }
            if let Some((net, bits)) = e.split_once('/') {
                if let (Ok(ip), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>()) {
                    out.entries.push(Entry::Cidr(ip, bits));
                }
                continue;
            }
            let (host, port) = split_port(&e);
            if let Ok(ip) = host.parse::<IpAddr>() {
                out.entries.push(Entry::Ip(ip, port));
                continue;
            }
            let host = host.strip_prefix('*').unwrap_or(host);
            let (suffix, itself) = match host.strip_prefix('.') {
                Some(_) => (host.to_owned(), false),
                None => (format!(".{host}"), true),
            };
            out.entries.push(Entry::Domain(suffix, itself, port));
        }
        out
    }

    /// Whether a connection to `hostport` goes through the proxy.
    pub fn proxied(&self, hostport: &str) -> bool {
        let (host, port) = split_port(hostport);
        let host = host.to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        if host == "localhost" || ip.is_some_and(|i| i.is_loopback()) || self.all {
            return false;
        }
        let port_ok = |want: &Option<u16>| want.is_none() || *want == port;
        !self.entries.iter().any(|e| match e {
            Entry::Ip(i, p) => Some(*i) == ip && port_ok(p),
            Entry::Cidr(net, bits) => ip.is_some_and(|i| in_cidr(i, *net, *bits)),
            Entry::Domain(suffix, itself, p) => {
                (host.ends_with(suffix.as_str()) || (*itself && host == suffix[1..])) && port_ok(p)
            }
        })
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls() {
        assert_eq!(
            Proxy::parse("http://10.0.0.1:3128").unwrap().addr,
            "10.0.0.1:3128"
        );
        assert_eq!(Proxy::parse("proxy.corp").unwrap().addr, "proxy.corp:80");
        let p = Proxy::parse("http://ann:s%40cret@proxy:8080/").unwrap();
        assert_eq!(p.addr, "proxy:8080");
        assert_eq!(p.authorization.as_deref(), Some("Basic YW5uOnNAY3JldA=="));
        assert!(
            Proxy::parse("socks5://p:1080")
                .unwrap_err()
                .to_string()
                .contains("socks5")
        );
        assert!(Proxy::parse("http://").is_err());
    }

    #[test]
    fn no_proxy_reads_as_gos_httpproxy() {
        let n = NoProxy::parse("internal.corp, .svc, 10.0.0.0/8, 192.168.1.7, api.x:8443");
        assert!(!n.proxied("internal.corp:443"));
        assert!(
            !n.proxied("a.internal.corp:443"),
            "a host name covers its subdomains"
        );
        assert!(n.proxied("notinternal.corp:443"));
        assert!(!n.proxied("db.svc:5432"));
        assert!(n.proxied("svc:5432"), "a leading dot: subdomains only");
        assert!(!n.proxied("10.2.3.4:50051"));
        assert!(n.proxied("11.2.3.4:50051"));
        assert!(!n.proxied("192.168.1.7:1"));
        assert!(!n.proxied("api.x:8443"));
        assert!(n.proxied("api.x:443"), "a port narrows the entry");
        assert!(n.proxied("example.com:443"));
        // Loopback never goes through a proxy.
        assert!(!n.proxied("localhost:9090"));
        assert!(!n.proxied("127.0.0.1:9090"));
        assert!(!n.proxied("[::1]:9090"));
        assert!(!NoProxy::parse("*").proxied("example.com:443"));
        assert!(NoProxy::parse("").proxied("example.com:443"));
    }
}
