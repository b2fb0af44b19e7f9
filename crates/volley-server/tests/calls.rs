//! The framework end to end, in-process on port 0, driven by a raw h2 client: the four call kinds,
//! metadata, unknown methods, bad input, limits, compression, deadlines, cancellation and drain.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use prost::Message;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::oneshot,
};
use volley_server::{Code, Request, Response, Server, ServerBuilder, Service, Status, Streaming};
use volley_testkit::{RawClient, frame};
use volley_wire::compression::Encoding;

#[derive(Clone, PartialEq, Message)]
struct Num {
    #[prost(int64, tag = "1")]
    n: i64,
    #[prost(bytes = "vec", tag = "2")]
    pad: Vec<u8>,
}

fn num(n: i64) -> Num {
    Num { n, pad: Vec::new() }
}

/// Drops to tell the test that a handler's future went away.
struct DropSignal(Option<oneshot::Sender<()>>);
impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

fn test_service(dropped: Arc<std::sync::Mutex<Option<oneshot::Sender<()>>>>) -> Service {
    Service::builder("test.Calc")
        .unary("Panic", |req: Request<Num>| async move {
            if req.get_ref().n > 0 {
                // Panic after a wait: the call is then in a task of its own.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("handler bug {}", req.get_ref().n);
            #[allow(unreachable_code)]
            Ok(Response::new(num(0)))
        })
        .unary("Echo", |req: Request<Num>| async move {
            let echo = req.metadata().get("x-echo").cloned();
            let mut resp = Response::new(req.into_inner());
            if let Some(v) = echo {
                resp.metadata_mut().insert("x-echo-initial", v.clone());
                resp.trailers_mut().insert("x-echo-trailing", v);
            }
            Ok(resp)
        })
        .unary("SetHeader", |req: Request<Num>| async move {
            // Replies with the header the caller names (x-name: x-value) in its metadata.
            let name = req.metadata().get("x-name").cloned();
            let value = req.metadata().get("x-value").cloned();
            let mut resp = Response::new(req.into_inner());
            if let (Some(n), Some(v)) = (name, value) {
                let n = http::HeaderName::from_bytes(n.as_bytes()).unwrap();
                resp.metadata_mut().insert(n, v);
            }
            Ok(resp)
        })
        .unary("Fail", |req: Request<Num>| async move {
            Err::<Response<Num>, _>(Status::new(
                Code::from_i32(req.get_ref().n as i32),
                "failed as asked: 100% \u{2713}",
            ))
        })
        .unary("Sleep", move |req: Request<Num>| {
            let guard = DropSignal(dropped.lock().unwrap().take());
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_millis(req.get_ref().n as u64)).await;
                Ok(Response::new(num(req.get_ref().n)))
            }
        })
        .server_streaming("Count", |req: Request<Num>| async move {
            let n = req.get_ref().n;
            Ok(Response::new(stream::iter((0..n).map(|i| Ok(num(i))))))
        })
        .server_streaming("Forever", |_: Request<Num>| async move {
            Ok(Response::new(stream::pending::<Result<Num, Status>>()))
        })
        .client_streaming("Sum", |req: Request<Streaming<Num>>| async move {
            let mut s = req.into_inner();
            let mut total = 0;
            while let Some(m) = s.message().await? {
                total += m.n;
            }
            Ok(Response::new(num(total)))
        })
        .bidi_streaming("Double", |req: Request<Streaming<Num>>| async move {
            Ok(Response::new(
                req.into_inner().map(|r| r.map(|m| num(m.n * 2))),
            ))
        })
        .build()
}

struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
    dropped: Arc<std::sync::Mutex<Option<oneshot::Sender<()>>>>,
}

async fn start(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Running {
    let dropped = Arc::new(std::sync::Mutex::new(None));
    let server = configure(Server::builder().add_service(test_service(dropped.clone())))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        server
            .serve(listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
    });
    Running {
        addr,
        stop: Some(tx),
        done,
        dropped,
    }
}

/// One Echo call on `c` that must succeed: the connection still serves.
async fn echo_ok(c: &RawClient, n: i64) {
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&num(n))])
        .await
        .expect("the connection keeps serving");
    assert_eq!(reply.code(), Code::Ok);
}

async fn client(r: &Running) -> RawClient {
    RawClient::connect(r.addr).await.unwrap()
}

#[tokio::test]
async fn unary_echoes_message_and_metadata() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let reply = c
        .call("/test.Calc/Echo", &[("x-echo", "hi")], vec![frame(&num(7))])
        .await
        .unwrap();
    assert_eq!(reply.http_status, 200);
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(reply.headers["content-type"], "application/grpc");
    assert_eq!(reply.headers["x-echo-initial"], "hi");
    assert_eq!(reply.trailers.as_ref().unwrap()["x-echo-trailing"], "hi");
    assert_eq!(reply.decode::<Num>(), vec![num(7)]);
}

#[tokio::test]
async fn handler_errors_carry_code_and_encoded_message() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let reply = c
        .call("/test.Calc/Fail", &[], vec![frame(&num(9))])
        .await
        .unwrap();
    // Trailers-only: the status is in the headers and there is no body.
    assert!(reply.trailers.is_none());
    assert!(reply.messages.is_empty());
    let s = reply.status();
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert_eq!(s.message(), "failed as asked: 100% \u{2713}");
}

#[tokio::test]
async fn all_streaming_kinds() {
    let r = start(|b| b).await;
    let c = client(&r).await;

    let reply = c
        .call("/test.Calc/Count", &[], vec![frame(&num(5))])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(reply.decode::<Num>(), (0..5).map(num).collect::<Vec<_>>());

    let reply = c
        .call(
            "/test.Calc/Sum",
            &[],
            (1..=10).map(|i| frame(&num(i))).collect(),
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(reply.decode::<Num>(), vec![num(55)]);

    let reply = c
        .call(
            "/test.Calc/Double",
            &[],
            (0..100).map(|i| frame(&num(i))).collect(),
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(
        reply.decode::<Num>(),
        (0..100).map(|i| num(i * 2)).collect::<Vec<_>>()
    );

    // All messages in one DATA frame, split across frames at odd places.
    let mut joined = Vec::new();
    for i in 0..3 {
        joined.extend_from_slice(&frame(&num(i)));
    }
    let parts = vec![
        Bytes::copy_from_slice(&joined[..3]),
        Bytes::copy_from_slice(&joined[3..9]),
        Bytes::copy_from_slice(&joined[9..]),
    ];
    let reply = c.call("/test.Calc/Sum", &[], parts).await.unwrap();
    assert_eq!(reply.decode::<Num>(), vec![num(3)]);
}

#[tokio::test]
async fn unknown_methods_and_services_are_unimplemented() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let reply = c
        .call("/test.Calc/Nope", &[], vec![frame(&num(1))])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Unimplemented);
    assert_eq!(
        reply.status().message(),
        "unknown method Nope for service test.Calc"
    );
    let reply = c
        .call("/no.Such/Thing", &[], vec![frame(&num(1))])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Unimplemented);
    assert_eq!(reply.status().message(), "unknown service no.Such");
}

#[tokio::test]
async fn bad_input_gets_a_status_and_the_connection_keeps_serving() {
    let r = start(|b| b.max_recv_message_size(1024)).await;
    let c = client(&r).await;
    // Bytes that are not a Num (a truncated varint field).
    let garbage = Bytes::from_static(&[0, 0, 0, 0, 2, 0x08, 0xff]);
    let reply = c.call("/test.Calc/Echo", &[], vec![garbage]).await.unwrap();
    assert_eq!(reply.code(), Code::Internal);
    assert!(reply.status().message().contains("unmarshalling"));

    // A frame that ends before its declared length.
    let short = Bytes::from_static(&[0, 0, 0, 0, 9, 1, 2]);
    let reply = c.call("/test.Calc/Echo", &[], vec![short]).await.unwrap();
    assert_eq!(reply.code(), Code::Internal);

    // No message at all for a unary method: a cardinality violation, UNIMPLEMENTED as in grpc-go.
    let reply = c.call("/test.Calc/Echo", &[], vec![]).await.unwrap();
    assert_eq!(reply.code(), Code::Unimplemented);

    // Too large: refused from the length prefix.
    let big = Num {
        n: 1,
        pad: vec![7; 2000],
    };
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&big)])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::ResourceExhausted);
    assert!(
        reply.status().message().contains("vs. 1024"),
        "{:?}",
        reply.status()
    );

    // A malformed deadline.
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("grpc-timeout", "soon")],
            vec![frame(&num(1))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Internal);

    // An encoding we do not have.
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("grpc-encoding", "br")],
            vec![frame(&num(1))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Unimplemented);
    assert_eq!(reply.headers["grpc-accept-encoding"], "gzip");

    // The same connection still serves.
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&num(3))])
        .await
        .unwrap();
    assert_eq!(reply.decode::<Num>(), vec![num(3)]);
}

#[tokio::test]
async fn non_grpc_requests_get_http_errors() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let req = http::Request::post(format!("http://{}/test.Calc/Echo", r.addr))
        .header("content-type", "text/plain")
        .body(())
        .unwrap();
    let reply = c
        .send_request(req, vec![Bytes::from_static(b"hi")])
        .await
        .unwrap();
    assert_eq!(reply.http_status, 415);
    let req = http::Request::get(format!("http://{}/test.Calc/Echo", r.addr))
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let reply = c.send_request(req, vec![]).await.unwrap();
    assert_eq!(reply.http_status, 405);
}

#[tokio::test]
async fn gzip_both_ways() {
    let r = start(|b| b.send_compressed(true)).await;
    let c = client(&r).await;
    let big = Num {
        n: 5,
        pad: vec![b'a'; 4000],
    };
    let compressed = Encoding::Gzip.compress_frame(&big.encode_to_vec());
    assert!(compressed.len() < 200);
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")],
            vec![compressed],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(reply.headers["grpc-encoding"], "gzip");
    assert_eq!(reply.headers["grpc-accept-encoding"], "gzip");
    let back = Encoding::Gzip
        .decompress(&reply.messages[0], 1 << 20)
        .unwrap();
    assert_eq!(Num::decode(back).unwrap(), big);

    // A client that does not accept gzip gets plain replies even from a compressing server.
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&big)])
        .await
        .unwrap();
    assert!(reply.headers.get("grpc-encoding").is_none());
    // Nor does it hear which encodings the server accepts: it showed no interest in any.
    assert!(reply.headers.get("grpc-accept-encoding").is_none());
    assert_eq!(reply.decode::<Num>(), vec![big.clone()]);
    // One that lists what it accepts, without compressing its request, hears it.
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("grpc-accept-encoding", "identity")],
            vec![frame(&big)],
        )
        .await
        .unwrap();
    assert_eq!(reply.headers["grpc-accept-encoding"], "gzip");
    assert!(reply.headers.get("grpc-encoding").is_none());
}

#[tokio::test]
async fn deadlines_end_slow_calls() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let t = Instant::now();
    let reply = c
        .call(
            "/test.Calc/Sleep",
            &[("grpc-timeout", "100m")],
            vec![frame(&num(5000))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::DeadlineExceeded);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    let t = Instant::now();
    let reply = c
        .call(
            "/test.Calc/Forever",
            &[("grpc-timeout", "150m")],
            vec![frame(&num(0))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::DeadlineExceeded);
    assert!(t.elapsed() >= Duration::from_millis(140));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    // A deadline that is not reached changes nothing.
    let reply = c
        .call(
            "/test.Calc/Sleep",
            &[("grpc-timeout", "5S")],
            vec![frame(&num(10))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
}

#[tokio::test]
async fn client_cancellation_drops_the_handler() {
    let r = start(|b| b).await;
    let (tx, rx) = oneshot::channel();
    *r.dropped.lock().unwrap() = Some(tx);
    let c = client(&r).await;
    let mut send = c.sender().ready().await.unwrap();
    let (resp, mut body) = send
        .send_request(c.request("/test.Calc/Sleep", &[]), false)
        .unwrap();
    body.send_data(frame(&num(30_000)), true).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    body.send_reset(h2::Reason::CANCEL);
    drop(resp);
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("handler dropped after RST_STREAM")
        .unwrap();
}

#[tokio::test]
async fn advertises_a_bounded_stream_limit() {
    let r = start(|b| b.max_concurrent_streams(64)).await;
    let tcp = tokio::net::TcpStream::connect(r.addr).await.unwrap();
    let (send, mut conn) = h2::client::handshake(tcp).await.unwrap();
    // Drive the connection until the server's SETTINGS arrive.
    let drive = tokio::spawn(async move {
        let mut send = send.ready().await.unwrap();
        let req = http::Request::post("http://x/test.Calc/Nope")
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        let (resp, _) = send.send_request(req, true).unwrap();
        let _ = resp.await;
    });
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            tokio::select! {
                _ = &mut conn => break,
                _ = tokio::time::sleep(Duration::from_millis(10)) => {
                    if conn.max_concurrent_send_streams() == 64 { break; }
                }
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(conn.max_concurrent_send_streams(), 64);
    drive.abort();
}

#[tokio::test]
async fn garbage_preface_is_closed_without_harming_others() {
    let r = start(|b| b).await;
    let good = client(&r).await;
    let mut bad = tokio::net::TcpStream::connect(r.addr).await.unwrap();
    bad.write_all(b"\x16\x03\x01garbage that is no HTTP at all\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    // The server answers (an HTTP/1 400 at most) and closes; it must not hang.
    tokio::time::timeout(Duration::from_secs(5), bad.read_to_end(&mut buf))
        .await
        .expect("garbage connection closed")
        .unwrap();
    echo_ok(&good, 1).await;
}

#[tokio::test]
async fn drain_lets_in_flight_calls_finish_and_refuses_new_connections() {
    let mut r = start(|b| b.grace_period(Duration::from_secs(10))).await;
    let c = client(&r).await;
    let ok = Arc::new(AtomicUsize::new(0));
    let mut calls = Vec::new();
    for _ in 0..50 {
        let (c, ok) = (c.clone(), ok.clone());
        calls.push(tokio::spawn(async move {
            let reply = c
                .call("/test.Calc/Sleep", &[], vec![frame(&num(400))])
                .await
                .unwrap();
            assert_eq!(reply.code(), Code::Ok, "{:?}", reply.status());
            ok.fetch_add(1, Ordering::SeqCst);
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    r.stop.take().unwrap().send(()).unwrap();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(ok.load(Ordering::SeqCst), 50);
    tokio::time::timeout(Duration::from_secs(5), &mut r.done)
        .await
        .expect("serve returns after the drain")
        .unwrap();
    assert!(tokio::net::TcpStream::connect(r.addr).await.is_err());
}

#[tokio::test]
async fn a_fast_client_streaming_tiny_messages_is_not_cut_off() {
    // The server reads slowly at first; the client pipelines 20,000 seven-byte frames, one DATA
    // frame each. h2's small-frame budget must not treat this as an attack.
    let r = start(|b| b).await;
    let c = client(&r).await;
    let mut send = c.sender().ready().await.unwrap();
    let (resp, mut body) = send
        .send_request(c.request("/test.Calc/Sum", &[]), false)
        .unwrap();
    for i in 0..20_000 {
        body.send_data(frame(&num(i % 3)), i == 19_999).unwrap();
    }
    let reply = volley_testkit::read_reply(resp.await.unwrap())
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok, "{:?}", reply.status());
    assert_eq!(
        reply.decode::<Num>(),
        vec![num((0..20_000).map(|i| i % 3).sum())]
    );
}

#[tokio::test]
async fn health_check_and_reflection_on_both_versions() {
    use volley_server::pb::{
        health::{HealthCheckRequest, HealthCheckResponse},
        reflection::{
            ServerReflectionRequest, ServerReflectionResponse,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        },
    };
    let r = start(|b| b).await;
    let c = client(&r).await;
    let check = |service: &str| HealthCheckRequest {
        service: service.into(),
    };
    for name in ["", "test.Calc"] {
        let reply = c
            .call(
                "/grpc.health.v1.Health/Check",
                &[],
                vec![frame(&check(name))],
            )
            .await
            .unwrap();
        assert_eq!(
            reply.decode::<HealthCheckResponse>()[0].status,
            1,
            "{name:?}"
        );
    }
    let reply = c
        .call(
            "/grpc.health.v1.Health/Check",
            &[],
            vec![frame(&check("no.Such"))],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::NotFound);

    for version in ["v1", "v1alpha"] {
        let ask = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let reply = c
            .call(
                &format!("/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"),
                &[],
                vec![frame(&ask)],
            )
            .await
            .unwrap();
        assert_eq!(reply.code(), Code::Ok);
        let Some(MessageResponse::ListServicesResponse(list)) = reply
            .decode::<ServerReflectionResponse>()[0]
            .message_response
            .clone()
        else {
            panic!("{version}: not a list")
        };
        let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "test.Calc",
                "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection"
            ],
            "{version}"
        );
    }
}

#[tokio::test]
async fn health_watch_reports_the_drain_and_does_not_hold_it_open() {
    use volley_server::pb::health::{HealthCheckRequest, HealthCheckResponse};
    let mut r = start(|b| b.grace_period(Duration::from_secs(20))).await;
    let c = client(&r).await;
    let mut send = c.sender().ready().await.unwrap();
    let (resp, mut body) = send
        .send_request(c.request("/grpc.health.v1.Health/Watch", &[]), false)
        .unwrap();
    body.send_data(
        frame(&HealthCheckRequest {
            service: "test.Calc".into(),
        }),
        true,
    )
    .unwrap();
    let mut recv = resp.await.unwrap().into_body();
    let first = recv.data().await.unwrap().unwrap();
    assert_eq!(HealthCheckResponse::decode(&first[5..]).unwrap().status, 1);

    let t = Instant::now();
    r.stop.take().unwrap().send(()).unwrap();
    let next = recv.data().await.unwrap().unwrap();
    assert_eq!(HealthCheckResponse::decode(&next[5..]).unwrap().status, 2);
    assert!(recv.data().await.is_none(), "the watch ends");
    let trailers = recv.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    tokio::time::timeout(Duration::from_secs(5), &mut r.done)
        .await
        .expect("drain finishes long before the 20 s grace period")
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn rest_routes_from_google_api_http_annotations() {
    // A schema whose method carries a google.api.http option, compiled at run time.
    let dir = std::env::temp_dir().join(format!("volley-rest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("calc.proto");
    std::fs::write(
        &file,
        r#"syntax = "proto3";
package test;
import "google/api/annotations.proto";
message Num { int64 n = 1; bytes pad = 2; }
service Calc {
  rpc Echo(Num) returns (Num) { option (google.api.http) = { get: "/v1/echo/{n}" additional_bindings { post: "/v1/echo" body: "*" } }; }
  rpc Count(Num) returns (stream Num) { option (google.api.http) = { get: "/v1/count" }; }
}
"#,
    )
    .unwrap();
    let proto_root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let pool = volley_proto::load::compile_proto(&file, &[proto_root]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let fds = pool.encode_to_vec();
    let r = start(move |b| b.file_descriptor_set(fds)).await;
    let http = |method: &str, path: &str, body: &str| {
        let (method, path, body) = (method.to_owned(), path.to_owned(), body.to_owned());
        let addr = r.addr;
        async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let req = format!(
                "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            let (head, body) = out.split_once("\r\n\r\n").unwrap();
            let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
            (status, body.to_owned())
        }
    };
    let (status, body) = http("GET", "/v1/echo/42", "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#"{"n":"42"}"#), "{body}");
    let (status, body) = http("POST", "/v1/echo", r#"{"n": "7"}"#).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#"{"n":"7"}"#), "{body}");
    let (status, body) = http("GET", "/v1/count?n=3", "").await;
    assert_eq!(status, 200);
    assert_eq!(body.matches("\"result\"").count(), 3, "{body}");
    let (status, _) = http("GET", "/v1/nowhere", "").await;
    assert_eq!(status, 404);
    let (status, body) = http("GET", "/v1/echo/notanumber", "").await;
    assert_eq!(status, 400);
    assert!(body.contains("\"code\":3"), "{body}");
}

#[tokio::test]
async fn keepalive_drops_a_peer_that_stops_answering_pings() {
    let r = start(|b| b.keepalive(Some(Duration::from_millis(200)))).await;
    // A peer that says hello (preface, empty SETTINGS, SETTINGS ack) and then never answers.
    let mut mute = tokio::net::TcpStream::connect(r.addr).await.unwrap();
    mute.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    mute.write_all(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
        .await
        .unwrap();
    let started = Instant::now();
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), mute.read_to_end(&mut seen))
        .await
        .expect("a peer that does not answer PINGs is closed")
        .unwrap();
    // SETTINGS, SETTINGS ack, WINDOW_UPDATE, then a PING (type 6) before the close.
    assert!(
        seen.windows(4).any(|w| w[0..3] == [0, 0, 8] && w[3] == 6),
        "the server pinged before closing: {seen:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "not before interval + timeout"
    );
    // A peer that answers (h2 does) keeps its connection past several intervals.
    let good = client(&r).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    echo_ok(&good, 7).await;
}

#[tokio::test]
async fn a_panicking_handler_costs_its_call_only() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    // n = 0 panics on the call's first poll, n = 1 after a wait.
    for n in [0, 1] {
        let panicked = c.call("/test.Calc/Panic", &[], vec![frame(&num(n))]).await;
        assert!(
            panicked
                .as_ref()
                .map_or(true, |reply| reply.code() != Code::Ok),
            "a panicking call does not succeed: {panicked:?}"
        );
        echo_ok(&c, n).await;
    }
}

#[tokio::test]
async fn serves_a_unix_socket_and_byte_streams_handed_in() {
    let dropped = Arc::new(std::sync::Mutex::new(None));
    let server = Arc::new(
        Server::builder()
            .add_service(test_service(dropped))
            .build()
            .unwrap(),
    );

    // A Unix socket.
    let path = std::env::temp_dir().join(format!("volley-calls-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let s = server.clone();
    let unix = tokio::spawn(async move {
        s.serve_unix(listener, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let io = tokio::net::UnixStream::connect(&path).await.unwrap();
    echo_ok(&RawClient::over(io, "localhost").await.unwrap(), 3).await;

    // Byte streams with no socket at all, one per connection; the server ends with the stream.
    let (tx, rx) = tokio::sync::mpsc::channel::<tokio::io::DuplexStream>(4);
    let incoming = Box::pin(stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|io| (io, rx))
    }));
    let s = server.clone();
    let memory = tokio::spawn(async move {
        s.serve_incoming(incoming, std::future::pending::<()>())
            .await
            .unwrap();
    });
    for n in 0..2 {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        tx.send(server_end).await.unwrap();
        echo_ok(&RawClient::over(client, "memory").await.unwrap(), n).await;
    }
    drop(tx);
    tokio::time::timeout(Duration::from_secs(5), memory)
        .await
        .expect("serve_incoming returns when its stream ends")
        .unwrap();
    let _ = stop.send(());
    unix.await.unwrap();
    let _ = std::fs::remove_file(&path);
}

/// HTTP/2 forbids connection-specific headers (RFC 9113 8.2.2): a handler that puts one in its
/// reply does not get it onto the wire, its call fails, and the connection keeps serving; `te:
/// trailers`, the one allowed form of TE, goes through.
#[tokio::test]
async fn connection_specific_reply_headers_are_refused_and_the_connection_goes_on() {
    let r = start(|b| b).await;
    let c = client(&r).await;
    let set = |name: &'static str, value: &'static str| {
        let c = &c;
        async move {
            c.call(
                "/test.Calc/SetHeader",
                &[("x-name", name), ("x-value", value)],
                vec![frame(&num(1))],
            )
            .await
        }
    };
    let ok = set("te", "trailers")
        .await
        .expect("te: trailers is allowed");
    assert_eq!(ok.code(), Code::Ok);
    assert_eq!(ok.headers["te"], "trailers");
    for (name, value) in [
        ("connection", "close"),
        ("transfer-encoding", "chunked"),
        ("upgrade", "h2c"),
        ("keep-alive", "timeout=5"),
        ("proxy-connection", "keep-alive"),
        ("te", "gzip"),
    ] {
        // A reset stream (Err) is a failed call too, as it must be.
        if let Ok(reply) = set(name, value).await {
            assert_ne!(
                reply.code(),
                Code::Ok,
                "{name}: {value} must not be answered OK"
            );
            assert!(!reply.headers.contains_key(name), "{name} reached the wire");
        }
        echo_ok(&c, 2).await;
    }
}
