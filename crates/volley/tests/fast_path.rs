//! The fast HTTP/2 path (`volley_client::load::fast`) against a real `volley serve`: many unary calls
//! in flight on one connection all answered, a status and its message carried from the
//! trailers, and a call dropped mid-flight (its stream reset) leaving the connection usable.

use std::{rc::Rc, time::Duration};

use bytes::Bytes;
use volley_client::{
    CallHead,
    load::fast::{FastConnection, frame::HeaderBlock},
};
use volley_services::pb::{
    api::GetUserRequest,
    grpc::testing::{EchoStatus, SimpleRequest},
};
use volley_testkit::{Volley, frame, volley};
use volley_wire::Code;

const VOLLEY: Volley = volley!();

fn block(addr: &str, path: &str) -> HeaderBlock {
    HeaderBlock::of(&CallHead::new("http", addr, path, &[], None, false).unwrap())
}

/// Runs `f` on a current-thread runtime inside a `LocalSet`, as the bench runs its fast
/// connections.
fn on_one_thread<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

async fn connect(addr: &str) -> FastConnection {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    FastConnection::handshake(tcp).await.unwrap()
}

#[test]
fn many_calls_in_flight_on_one_connection_are_all_answered() {
    let server = VOLLEY.serve(&[]);
    let addr = server.addr().to_string();
    on_one_thread(async {
        let conn = connect(&addr).await;
        let get = Rc::new(block(&addr, "/api.Users/Get"));
        let body: Bytes = frame(&GetUserRequest { id: 228 });
        let mut tasks = Vec::new();
        for _ in 0..100 {
            let (conn, get, body) = (conn.clone(), get.clone(), body.clone());
            tasks.push(tokio::task::spawn_local(async move {
                let mut ok = 0;
                for _ in 0..200 {
                    let r = conn.unary(&get, body.clone()).await.expect("an OK reply");
                    assert!(r.bytes > 5, "a framed User: {} bytes", r.bytes);
                    ok += 1;
                }
                ok
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        assert_eq!(total, 20_000);

        // A status and its message, from the trailers.
        let call = block(&addr, "/grpc.testing.TestService/UnaryCall");
        let failing = frame(&SimpleRequest {
            response_status: Some(EchoStatus {
                code: 14,
                message: "down for a test".into(),
            }),
            ..Default::default()
        });
        let e = conn.unary(&call, failing).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable);
        assert_eq!(e.message(), "down for a test");

        // An unknown method: UNIMPLEMENTED, and the connection goes on.
        let e = conn
            .unary(&block(&addr, "/api.Users/Nope"), body.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unimplemented);

        // A call given up mid-flight: its stream is reset, the next calls are answered.
        let slow = Rc::new(block(&addr, "/grpc.testing.TestService/UnaryCall"));
        let dropped = tokio::time::timeout(
            Duration::from_millis(1),
            conn.unary(&slow, frame(&SimpleRequest::default())),
        )
        .await;
        drop(dropped);
        for _ in 0..10 {
            conn.unary(&get, body.clone()).await.expect("still serving");
        }
    });
}

/// `--strategy per-request` on the fast path (`Redialing::per_call`): each call dials a
/// connection of its own, and the connection is closed once the call is answered. Counted by a
/// TCP relay in front of the server.
#[test]
fn per_call_connections_are_one_per_call_and_closed_after_it() {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    use volley_client::{Endpoint, Policy, load::fast::Redialing};

    let server = VOLLEY.serve(&[]);
    let upstream = server.addr();
    on_one_thread(async {
        let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = relay.local_addr().unwrap().to_string();
        let (opened, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (o, c) = (opened.clone(), closed.clone());
        tokio::task::spawn_local(async move {
            while let Ok((mut client, _)) = relay.accept().await {
                o.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                tokio::task::spawn_local(async move {
                    let mut server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        let conn =
            Redialing::per_call(Endpoint::from_target_str(&addr).unwrap(), Policy::PickFirst);
        let get = block(&addr, "/api.Users/Get");
        let body: Bytes = frame(&GetUserRequest { id: 228 });
        for k in 1..=5 {
            let r = conn.unary(&get, body.clone()).await.expect("an OK reply");
            assert!(r.bytes > 5, "a framed User: {} bytes", r.bytes);
            assert_eq!(opened.load(Ordering::SeqCst), k, "a connection per call");
        }
        let waited = std::time::Instant::now();
        while closed.load(Ordering::SeqCst) < 5 {
            assert!(
                waited.elapsed() < Duration::from_secs(5),
                "{} of 5 connections closed",
                closed.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}
