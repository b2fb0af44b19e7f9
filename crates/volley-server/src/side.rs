//! The HTTP/1.1 side server: a small API on a port of its own beside the main work (GripMock's
//! admin API on `volley mock`, `volley serve --admin-addr`, `volley bench --prometheus-listen`),
//! kept up whatever its peers do. Its accept loop outlives accept errors (out of file
//! descriptors: it backs off and logs one line per cause), a connection may take
//! [`DEFAULT_HEADER_TIMEOUT`] to send a request's head (also how long an idle keep-alive
//! connection is kept) and [`DEFAULT_BODY_TIMEOUT`] for its body, connections past
//! [`DEFAULT_MAX_CONNECTIONS`] are closed as they are accepted, and a guard
//! ([`Interceptor::on_endpoint`], a [`BearerToken`](crate::auth::BearerToken)) sees every
//! request before its body is read.
//!
//! ```no_run
//! # use volley_server::{auth::BearerToken, side::SideServer};
//! let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//! SideServer::new("admin")
//!     .guard(BearerToken::new("s3cret"))
//!     .spawn(listener, |req: http::Request<bytes::Bytes>| async move {
//!         http::Response::new(bytes::Bytes::from(format!("{} bytes\n", req.body().len())))
//!     })
//!     .unwrap();
//! ```

use std::{convert::Infallible, future::Future, io, net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{net::TcpListener, sync::Semaphore};
use tracing::debug;

use crate::{
    accept::{Logs, is_per_connection},
    intercept::{Interceptor, Page, Registered, admit_page},
};

/// Connections served at once; those accepted beyond are closed at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// How long a connection has to send a request's head, counted from when the server is ready
/// to read it: so also how long an idle keep-alive connection is kept.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's body may take to arrive once its head has.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest request body read (413 beyond).
pub const DEFAULT_MAX_BODY: usize = 4 << 20;
/// The first wait after an accept error; it doubles up to [`MAX_BACKOFF`] while errors last.
const FIRST_BACKOFF: Duration = Duration::from_millis(5);
/// The longest wait after an accept error (Go's net/http waits the same).
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Configures a side server: see the module documentation.
#[must_use]
pub struct SideServer {
    name: String,
    guards: Vec<Registered>,
    max_connections: usize,
    header_timeout: Duration,
    body_timeout: Duration,
    max_body: usize,
}

impl SideServer {
    /// A side server named `name` (its thread's name and its log lines'), with the defaults.
    pub fn new(name: impl Into<String>) -> SideServer {
        SideServer {
            name: name.into(),
            guards: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_body: DEFAULT_MAX_BODY,
        }
    }

    /// Every request must pass `guard`'s [`Interceptor::on_endpoint`] (in the order guards are
    /// added) before its body is read; a refusal is answered with its HTTP code.
    pub fn guard(mut self, guard: impl Interceptor) -> SideServer {
        self.guards.push(Registered::new(guard));
        self
    }

    /// At most `n` connections served at once (default [`DEFAULT_MAX_CONNECTIONS`]).
    pub fn max_connections(mut self, n: usize) -> SideServer {
        self.max_connections = n.max(1);
        self
    }

    /// How long a request's head may take, and an idle connection may stay (default
    /// [`DEFAULT_HEADER_TIMEOUT`]).
    pub fn header_timeout(mut self, d: Duration) -> SideServer {
        self.header_timeout = d;
        self
    }

    /// How long a request's body may take (default [`DEFAULT_BODY_TIMEOUT`]).
    pub fn body_timeout(mut self, d: Duration) -> SideServer {
        self.body_timeout = d;
        self
    }

    /// The largest request body read (default [`DEFAULT_MAX_BODY`]).
    pub fn max_body(mut self, n: usize) -> SideServer {
        self.max_body = n;
        self
    }

    /// Serves `listener` (bound; made non-blocking here) with `handle` on a thread of its own,
    /// one current-thread runtime, for the life of the process; the address it listens on.
    pub fn spawn<H, F>(self, listener: std::net::TcpListener, handle: H) -> io::Result<SocketAddr>
    where
        H: Fn(http::Request<Bytes>) -> F + Send + Sync + 'static,
        F: Future<Output = http::Response<Bytes>> + Send + 'static,
    {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || {
                rt.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(l) => self.serve(l, handle, std::future::pending()).await,
                        Err(e) => tracing::error!("{}: cannot serve: {e}", self.name),
                    }
                });
            })?;
        Ok(addr)
    }

    /// Serves `listener` with `handle` until `shutdown` completes (connections open then are
    /// left to finish on their own tasks).
    pub async fn serve<H, F>(
        self,
        listener: TcpListener,
        handle: H,
        shutdown: impl Future<Output = ()>,
    ) where
        H: Fn(http::Request<Bytes>) -> F + Send + Sync + 'static,
        F: Future<Output = http::Response<Bytes>> + Send + 'static,
    {
        let slots = Arc::new(Semaphore::new(self.max_connections));
        let serving = Arc::new(Serving {
            guards: self.guards,
            handle,
            body_timeout: self.body_timeout,
            max_body: self.max_body,
        });
        let mut logs = Logs::default();
        let mut backoff = FIRST_BACKOFF;
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                biased;
                () = &mut shutdown => return,
                r = listener.accept() => r,
            };
            let stream = match accepted {
                Ok((stream, _)) => {
                    backoff = FIRST_BACKOFF;
                    stream
                }
                Err(e) if is_per_connection(&e) => {
                    debug!("{}: accept: {e}", self.name);
                    continue;
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait (connections that end free
                    // some), then go on; one line per cause, not per failure.
                    let name = &self.name;
                    logs.note(cause(&e), || {
                        format!(
                            "{name}: accept failed: {e}; retrying, waiting up to {MAX_BACKOFF:?}"
                        )
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                let (name, max) = (&self.name, self.max_connections);
                logs.note("cap", || {
                    format!("{name}: closing connections past {max} open at once")
                });
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let serving = serving.clone();
            let mut http = http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(self.header_timeout);
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let serving = serving.clone();
                    async move { Ok::<_, Infallible>(serving.answer(req).await) }
                });
                if let Err(e) = http.serve_connection(TokioIo::new(stream), service).await {
                    debug!("side server connection: {e}");
                }
                drop(slot);
            });
        }
    }
}

/// An accept error's cause, for one log line each.
fn cause(e: &io::Error) -> &'static str {
    use rustix::io::Errno;
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::MFILE) => "EMFILE",
        Some(Errno::NFILE) => "ENFILE",
        Some(Errno::NOBUFS) => "ENOBUFS",
        Some(Errno::NOMEM) => "ENOMEM",
        _ => "accept",
    }
}

/// What each connection's requests share.
struct Serving<H> {
    guards: Vec<Registered>,
    handle: H,
    body_timeout: Duration,
    max_body: usize,
}

impl<H, F> Serving<H>
where
    H: Fn(http::Request<Bytes>) -> F,
    F: Future<Output = http::Response<Bytes>>,
{
    async fn answer(&self, req: http::Request<Incoming>) -> http::Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        let page = Page {
            method: &parts.method,
            path: parts.uri.path(),
            headers: &parts.headers,
        };
        if let Err(status) = admit_page(&self.guards, &page) {
            debug!(
                "refused {} {}: {}",
                parts.method,
                page.path,
                status.message()
            );
            return crate::auth::refused_page(&status).map(Full::new);
        }
        let body = Limited::new(body, self.max_body).collect();
        let body = match tokio::time::timeout(self.body_timeout, body).await {
            Ok(Ok(b)) => b.to_bytes(),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                let max = self.max_body;
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is larger than {max} bytes"),
                );
            }
            Ok(Err(e)) => return text(StatusCode::BAD_REQUEST, format!("reading the body: {e}")),
            Err(_) => {
                let d = self.body_timeout;
                return text(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the request body did not arrive within {d:?}"),
                );
            }
        };
        (self.handle)(http::Request::from_parts(parts, body))
            .await
            .map(Full::new)
    }
}

/// A refusal as JSON (`{"error": "..."}`, GripMock's admin API's shape).
fn text(code: StatusCode, why: String) -> http::Response<Full<Bytes>> {
    let mut r = http::Response::new(Full::new(Bytes::from(
        serde_json::json!({ "error": why }).to_string() + "\n",
    )));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::auth::BearerToken;

    /// A side server on a free port with `side`'s settings, answering its request's body length.
    async fn start(side: SideServer) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(side.serve(
            listener,
            |req: http::Request<Bytes>| async move {
                http::Response::new(Bytes::from(format!("{}", req.body().len())))
            },
            std::future::pending(),
        ));
        addr
    }

    /// What the server sent until it closed the connection (or `limit` passed: `None`).
    async fn until_closed(s: &mut tokio::net::TcpStream, limit: Duration) -> Option<String> {
        let mut got = Vec::new();
        tokio::time::timeout(limit, s.read_to_end(&mut got))
            .await
            .ok()?
            .ok()?;
        Some(String::from_utf8_lossy(&got).into_owned())
    }

    #[tokio::test]
    async fn a_silent_or_idle_connection_is_closed_after_the_header_timeout() {
        let timeout = Duration::from_millis(300);
        let addr = start(SideServer::new("t").header_timeout(timeout)).await;
        // Silent from the start.
        let t = Instant::now();
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(until_closed(&mut s, Duration::from_secs(5)).await.is_some());
        assert!(t.elapsed() >= timeout, "{:?}", t.elapsed());
        // Idle after a request on a kept-alive connection.
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let t = Instant::now();
        let got = until_closed(&mut s, Duration::from_secs(5)).await.unwrap();
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(t.elapsed() >= timeout, "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn a_body_that_does_not_arrive_is_answered_408() {
        let addr = start(SideServer::new("t").body_timeout(Duration::from_millis(300))).await;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nab")
            .await
            .unwrap();
        let mut buf = [0u8; 12];
        tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf, b"HTTP/1.1 408");
    }

    #[tokio::test]
    async fn connections_past_the_cap_are_closed_and_a_freed_slot_serves_again() {
        let addr = start(SideServer::new("t").max_connections(2)).await;
        let a = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _b = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert_eq!(
            until_closed(&mut c, Duration::from_secs(2))
                .await
                .as_deref(),
            Some(""),
            "the third connection is closed at once, unanswered"
        );
        drop(a);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut d = tokio::net::TcpStream::connect(addr).await.unwrap();
        d.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let got = until_closed(&mut d, Duration::from_secs(5)).await.unwrap();
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    }

    #[tokio::test]
    async fn a_guard_sees_every_request_before_its_body() {
        let addr = start(SideServer::new("t").guard(BearerToken::new("k"))).await;
        for (auth, want) in [
            ("", "401"),
            ("authorization: Bearer x\r\n", "401"),
            ("authorization: Bearer k\r\n", "200"),
        ] {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let req = format!(
                "POST /any HTTP/1.1\r\nhost: x\r\n{auth}content-length: 3\r\nconnection: close\r\n\r\nabc"
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let got = until_closed(&mut s, Duration::from_secs(5)).await.unwrap();
            assert!(
                got.starts_with(&format!("HTTP/1.1 {want}")),
                "{auth:?}: {got}"
            );
            if want == "401" {
                assert!(got.contains("www-authenticate: Bearer"), "{got}");
            } else {
                assert!(got.ends_with("\r\n\r\n3"), "{got}");
            }
        }
    }
}
