//! Listeners as a server binary binds them: TCP (`host:port`, with a backlog sized for thousands
//! of clients) or a Unix socket (`unix:/path`), whose socket file is made at start (a stale one
//! left by a server that died is replaced, anything else at the path is refused) and removed at
//! exit. `volley serve --addr` and `volley lab link --listen` bind through it.

use std::{
    fmt, io,
    net::{SocketAddr, TcpListener},
    os::unix::{fs::FileTypeExt, net::UnixListener},
    path::{Path, PathBuf},
    str::FromStr,
};

use tracing::warn;

/// How many connections may wait to be accepted. The standard library's `bind` asks for 128:
/// thousands of clients connecting at once (seed 004's 20,000) overflow it, and each dropped
/// SYN waits a second or more to be sent again. The kernel caps it at `net.core.somaxconn`
/// (4096 by default), as Go's listeners ask for.
const BACKLOG: i32 = 4096;

/// A TCP listener on `addr` with a backlog of 4096 (address reuse on, as `bind`).
pub fn tcp_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(BACKLOG)?;
    Ok(s.into())
}

/// A listen address as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// `host:port`.
    Tcp(SocketAddr),
    /// `unix:/path` (or `unix:///path`, gRPC's spelling).
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<ListenAddr, String> {
        if let Some(rest) = s.strip_prefix("unix:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("unix: needs a socket path, as in unix:/run/volley.sock".into());
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        s.parse().map(ListenAddr::Tcp).map_err(|_| {
            format!("{s:?} is neither host:port (127.0.0.1:9090) nor unix:/path/to/socket")
        })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A bound listener, not yet handed to a runtime.
pub enum Bound {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix socket listener.
    Unix(UnixListener),
}

impl Bound {
    /// Binds `addr`, non-blocking; a Unix socket's file is removed when `files` is dropped.
    pub fn bind(addr: &ListenAddr, files: &mut SocketFiles) -> io::Result<Bound> {
        match addr {
            ListenAddr::Tcp(a) => {
                let l = tcp_listener(*a).map_err(|e| said(e, format!("cannot listen on {a}")))?;
                l.set_nonblocking(true)?;
                Ok(Bound::Tcp(l))
            }
            ListenAddr::Unix(path) => {
                clear_stale(path)?;
                let l = UnixListener::bind(path)
                    .map_err(|e| said(e, format!("cannot listen on unix:{}", path.display())))?;
                files.0.push(path.clone());
                l.set_nonblocking(true)?;
                Ok(Bound::Unix(l))
            }
        }
    }

    /// Another handle on the same listener (for another thread's runtime).
    pub fn try_clone(&self) -> io::Result<Bound> {
        Ok(match self {
            Bound::Tcp(l) => Bound::Tcp(l.try_clone()?),
            Bound::Unix(l) => Bound::Unix(l.try_clone()?),
        })
    }

    /// Whether other hosts can connect: a TCP listener on any address but a loopback one (a
    /// Unix socket is this host's alone).
    pub fn reachable_from_other_hosts(&self) -> bool {
        match self {
            Bound::Tcp(l) => l.local_addr().is_ok_and(|a| !a.ip().is_loopback()),
            Bound::Unix(_) => false,
        }
    }

    /// Where it listens, as the log line says it (`127.0.0.1:PORT`, `unix:/path`).
    pub fn local(&self) -> io::Result<String> {
        Ok(match self {
            Bound::Tcp(l) => l.local_addr()?.to_string(),
            Bound::Unix(l) => match l.local_addr()?.as_pathname() {
                Some(p) => format!("unix:{}", p.display()),
                None => "unix:(unnamed)".into(),
            },
        })
    }
}

/// Socket files made by [`Bound::bind`], removed on drop.
#[derive(Default)]
pub struct SocketFiles(Vec<PathBuf>);

impl Drop for SocketFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Makes way for a socket at `path`: nothing there is fine; a socket nobody listens on (left by
/// a server that died) is removed with a log line; a live socket or any other file is refused.
fn clear_stale(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let shown = path.display();
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "cannot listen on unix:{shown}: the path exists and is not a socket; remove it or choose another path"
            ),
        ));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("cannot listen on unix:{shown}: another server is listening on it"),
        ));
    }
    warn!("unix:{shown}: replacing a stale socket file (no server listens on it)");
    std::fs::remove_file(path)
        .map_err(|e| said(e, format!("cannot remove the stale socket {shown}")))
}

/// `e` with what was being done in front of its words (its kind kept).
fn said(e: io::Error, doing: String) -> io::Error {
    io::Error::new(e.kind(), format!("{doing}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_and_unix_and_says_what_is_wrong() {
        assert_eq!(
            "127.0.0.1:9090".parse::<ListenAddr>(),
            Ok(ListenAddr::Tcp(([127, 0, 0, 1], 9090).into()))
        );
        assert_eq!(
            "unix:/tmp/v.sock".parse::<ListenAddr>(),
            Ok(ListenAddr::Unix("/tmp/v.sock".into()))
        );
        assert_eq!(
            "unix:///tmp/v.sock".parse::<ListenAddr>(),
            Ok(ListenAddr::Unix("/tmp/v.sock".into()))
        );
        assert!(
            "unix:"
                .parse::<ListenAddr>()
                .unwrap_err()
                .contains("needs a socket path")
        );
        assert!(
            "localhost"
                .parse::<ListenAddr>()
                .unwrap_err()
                .contains("neither host:port")
        );
    }
}
