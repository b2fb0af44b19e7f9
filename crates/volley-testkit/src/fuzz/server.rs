//! Fuzz bodies that feed a real `volley_server::Server` (the built-in services, health and
//! reflection): raw HTTP/2 on one connection, and request bodies of every protocol through its
//! router, plus the client's readers of gRPC-Web and Connect replies.

use std::{
    path::Path,
    sync::{Arc, OnceLock},
    time::Duration,
};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_service::Service as _;
use volley_call::fuzz::{Envelopes, Item};
use volley_server::Server;

/// The server every input meets, built once per process: the built-in services with their
/// REST routes, health and reflection, and Connect's conformance service (a dynamic service
/// answering default messages; its `IdempotentUnary` takes Connect GETs); a short grace period
/// so that a drain never waits long.
fn server() -> &'static Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut b = Server::builder()
            .health(true)
            .reflection(true)
            .grace_period(Duration::from_secs(1));
        for s in volley_services::all(volley_services::Options::default()) {
            b = b.add_service(s);
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let pool = volley_proto::load::compile_proto(
            &root.join("connectrpc/conformance/v1/service.proto"),
            &[root],
        )
        .expect("Connect's conformance protos compile");
        let defaults = volley_mock::Defaults {
            stream_messages: 2,
            delay: Duration::ZERO,
        };
        for s in pool.services() {
            b = b.add_service(volley_server::Service::dynamic(&s, defaults.clone()));
        }
        for (method, rule) in volley_services::rest::http_rules() {
            b = b.http_rule(method, rule);
        }
        Arc::new(b.build().expect("the built-in services build a server"))
    })
}

/// A current-thread runtime whose clock is paused: timers (handler delays, deadlines, idle
/// limits) fire as soon as every task waits, so an input costs no wall time for them, and a
/// timeout around the input is a bound on its virtual time. One per input, so that tasks an
/// input leaves behind are dropped with it.
pub(super) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// The client's connection preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

/// The server's HTTP/2 input: one connection served by `Server::serve_incoming` over an
/// in-memory stream; the client sends the preface and SETTINGS, then the input as frames (or
/// whatever it is), then closes its side, reading and discarding all the server writes. The
/// connection, and then the server, must end within a minute of (virtual) time.
pub fn server_frames(data: &[u8]) {
    let server = server().clone();
    let mut bytes = PREFACE.to_vec();
    bytes.extend_from_slice(data);
    paused_runtime().block_on(async move {
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming =
            futures_util::stream::iter([server_io]).chain(futures_util::stream::pending());
        let serve = server.serve_incoming(incoming, async {
            let _ = stopped.await;
        });
        let talk = async move {
            let (mut rd, mut wr) = tokio::io::split(client);
            let write = async {
                let _ = wr.write_all(&bytes).await;
                // A moment (of virtual time, free) for the calls to be answered before the end.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let _ = wr.shutdown().await;
            };
            let read = async {
                let mut sink = [0u8; 8192];
                while let Ok(n) = rd.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            tokio::join!(write, read);
            let _ = stop.send(());
        };
        let (served, ()) =
            tokio::time::timeout(Duration::from_secs(60), async { tokio::join!(serve, talk) })
                .await
                .expect("the connection ends once the client has closed its side");
        served.expect("serving in-memory streams does not fail");
        // The calls' tasks end with their connection: given a moment (virtual, free) to see it,
        // none is left. (A task the runtime drops instead would also trip h2's check, under
        // `--cfg fuzzing`, that no stream outlives its connection's state.)
        tokio::time::sleep(Duration::from_secs(1)).await;
        let left = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        assert_eq!(left, 0, "tasks outlive their connection");
    });
}

/// The methods the router's inputs call: every call kind, the interop suite's knobs.
const PATHS: &[&str] = &[
    "/helloworld.Greeter/SayHello",
    "/grpc.testing.TestService/UnaryCall",
    "/grpc.testing.TestService/StreamingOutputCall",
    "/grpc.testing.TestService/StreamingInputCall",
    "/grpc.testing.TestService/FullDuplexCall",
    "/grpc.testing.TestService/CacheableUnaryCall",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/orders.OrderService/AddOrder",
    "/connectrpc.conformance.v1.ConformanceService/IdempotentUnary",
    "/connectrpc.conformance.v1.ConformanceService/Unary",
];

/// The protocols' envelopes. The first byte picks what reads the rest:
///
/// - `0..=6`, through the server's router (`Server::router`), the request body of method
///   `PATHS[second byte]`: 0 gRPC-Web, 1 gRPC-Web text (base64), 2 Connect streaming proto,
///   3 Connect streaming JSON, 4 Connect unary proto, 5 Connect unary JSON, 6 Connect GET
///   (the rest is the query string); the second byte's high bits ask for gzip and a timeout.
///   The response must come back and its body end (any status).
/// - 7: a REST request: the rest's first line is `METHOD /path`, the remainder its body.
/// - 8, 9: the client's reader of gRPC-Web (8) or Connect (9) reply bodies, the rest split in
///   two chunks at the second byte; every item is read until it needs more bytes or ends.
/// - 10: a Connect unary error body as the client reads it (the second byte picks the HTTP
///   status).
pub fn envelopes(data: &[u8]) {
    let [mode, pick, rest @ ..] = data else {
        return;
    };
    match mode % 11 {
        m @ 0..=7 => {
            let Some(req) = request(m, *pick, rest) else {
                return;
            };
            let limit = Some(Duration::from_secs(60));
            paused_runtime().block_on(exchange(&mut server().router(), req, limit));
        }
        m @ (8 | 9) => {
            let mut env = Envelopes::new(m == 9, 1 << 16);
            let at = usize::from(*pick).min(rest.len());
            for chunk in [&rest[..at], &rest[at..]] {
                env.push(Bytes::copy_from_slice(chunk));
                while let Ok(Item::Message(m)) = env.next_item() {
                    assert!(m.len() <= 1 << 16, "a message over the limit got through");
                }
            }
        }
        _ => {
            let status = [200, 400, 401, 403, 404, 408, 429, 500, 502, 503, 504, 418];
            let s =
                volley_call::fuzz::connect_error(status[usize::from(*pick) % status.len()], rest);
            assert!((0..=16).contains(&s.code), "a gRPC code: {}", s.code);
        }
    }
}

/// Sends `req` through `router` and reads the response's body to its end, keeping nothing; both
/// must come within `limit` of (virtual) time when there is one.
pub(super) async fn exchange(
    router: &mut volley_server::Router,
    req: http::Request<Full<Bytes>>,
    limit: Option<Duration>,
) {
    let call = async move {
        let resp = router.call(req).await.expect("the router never fails");
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    };
    match limit {
        Some(limit) => tokio::time::timeout(limit, call)
            .await
            .expect("the response and its body end"),
        None => call.await,
    }
}

/// The request of router mode `m` (`envelopes`' 0..=7).
fn request(m: u8, pick: u8, rest: &[u8]) -> Option<http::Request<Full<Bytes>>> {
    let path = PATHS[usize::from(pick & 0x0f) % PATHS.len()];
    let gzip = pick & 0x10 != 0;
    let timeout = pick & 0x20 != 0;
    let b = http::Request::builder().header("te", "trailers");
    let (b, body) = match m {
        0..=3 => {
            let ct = [
                "application/grpc-web+proto",
                "application/grpc-web-text",
                "application/connect+proto",
                "application/connect+json",
            ][usize::from(m)];
            let mut b = b.method("POST").uri(path).header("content-type", ct);
            if gzip {
                let key = if m >= 2 {
                    "connect-content-encoding"
                } else {
                    "grpc-encoding"
                };
                b = b.header(key, "gzip");
            }
            if timeout {
                b = match m {
                    0 | 1 => b.header("grpc-timeout", "50m"),
                    _ => b.header("connect-timeout-ms", "50"),
                };
            }
            (b, rest)
        }
        4 | 5 => {
            let ct = ["application/proto", "application/json"][usize::from(m - 4)];
            let mut b = b
                .method("POST")
                .uri(path)
                .header("content-type", ct)
                .header("connect-protocol-version", "1");
            if gzip {
                b = b.header("content-encoding", "gzip");
            }
            if timeout {
                b = b.header("connect-timeout-ms", "50");
            }
            (b, rest)
        }
        6 => {
            let query = std::str::from_utf8(rest).ok()?;
            let uri = format!("{path}?{query}");
            (b.method("GET").uri(uri.parse::<http::Uri>().ok()?), &[][..])
        }
        _ => {
            let text = std::str::from_utf8(rest).ok()?;
            let (line, body) = text.split_once('\n').unwrap_or((text, ""));
            let (method, uri) = line.split_once(' ')?;
            let b = b
                .method(http::Method::from_bytes(method.as_bytes()).ok()?)
                .uri(uri.parse::<http::Uri>().ok()?)
                .header("content-type", "application/json");
            (b, body.as_bytes())
        }
    };
    b.body(Full::new(Bytes::copy_from_slice(body))).ok()
}
