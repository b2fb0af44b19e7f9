//! `volley serve` as a process: the seed services answer as the seeds specify, the delay works,
//! start-up errors are one line and a non-zero exit, and SIGTERM under load loses no accepted call.

use std::{
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use prost_types::Timestamp;
use volley_server::Code;
use volley_services::pb::{
    api::{GetUserRequest, ListUserRequest, User},
    grpc::{HiReply, HiUser},
    helloworld::{HelloReply, HelloRequest},
    orders::{Order, OrderReply},
};
use volley_testkit::{RawClient, Volley, frame, volley};

const VOLLEY: Volley = volley!();

#[tokio::test]
async fn seed_services_answer_as_specified() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let c = RawClient::connect(p.addr()).await.unwrap();

    let r = c
        .call(
            "/api.Users/Get",
            &[],
            vec![frame(&GetUserRequest { id: 228 })],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    assert_eq!(
        r.decode::<User>(),
        vec![User {
            id: 228,
            email: "dmitry.k@test.tld".into(),
            name: "Dmitry K.".into(),
            rating: 228.53
        }]
    );

    let r = c
        .call("/api.Users/List", &[], vec![frame(&ListUserRequest {})])
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    let users = r.decode::<User>();
    assert_eq!(users.len(), 10);
    for (i, u) in users.iter().enumerate() {
        assert_eq!(u.id, i as i64);
        assert_eq!(u.email, format!("user{i}@test"));
        assert_eq!(u.name, format!("User {i}"));
        assert!((u.rating - i as f64 * 1.53).abs() < 1e-9);
    }

    let r = c
        .call(
            "/helloworld.Greeter/SayHello",
            &[],
            vec![frame(&HelloRequest {
                name: "grpcity".into(),
            })],
        )
        .await
        .unwrap();
    assert_eq!(r.decode::<HelloReply>()[0].message, "Hello grpcity");

    let user = HiUser {
        name: "hyperf".into(),
        sex: 1,
    };
    let r = c
        .call("/grpc.hi/sayHello", &[], vec![frame(&user)])
        .await
        .unwrap();
    let reply = &r.decode::<HiReply>()[0];
    assert_eq!(reply.message, "Hello hyperf");
    assert_eq!(reply.user.as_ref(), Some(&user));
}

fn order(i: i64) -> Order {
    Order {
        instrument_id: i,
        price: 100 + i,
        quantity: 1,
        side: i % 2 == 0,
        request_time: Some(Timestamp::from(SystemTime::now())),
    }
}

fn system_time(t: &Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(t.seconds as u64, t.nanos as u32)
}

#[tokio::test]
async fn orders_get_one_reply_each_with_the_receive_time() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let c = RawClient::connect(p.addr()).await.unwrap();
    let before = SystemTime::now();
    let r = c
        .call(
            "/orders.OrderService/AddOrderUnary",
            &[],
            vec![frame(&order(1))],
        )
        .await
        .unwrap();
    let reply = &r.decode::<OrderReply>()[0];
    assert!(reply.result);
    let at = system_time(reply.response_time.as_ref().unwrap());
    assert!(at >= before && at <= SystemTime::now());

    let orders: Vec<_> = (0..1000).map(|i| frame(&order(i))).collect();
    let r = c
        .call("/orders.OrderService/AddOrder", &[], orders)
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    let replies = r.decode::<OrderReply>();
    assert_eq!(replies.len(), 1000);
    let times: Vec<_> = replies
        .iter()
        .map(|r| system_time(r.response_time.as_ref().unwrap()))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "replies in order");
}

#[tokio::test]
async fn delay_makes_every_handler_wait() {
    let p = VOLLEY.serve(&["--threads", "2", "--delay", "200ms"]);
    let c = RawClient::connect(p.addr()).await.unwrap();
    let t = Instant::now();
    let r = c
        .call(
            "/api.Users/Get",
            &[],
            vec![frame(&GetUserRequest { id: 1 })],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    let t = Instant::now();
    let r = c
        .call(
            "/helloworld.Greeter/SayHello",
            &[],
            vec![frame(&HelloRequest::default())],
        )
        .await
        .unwrap();
    assert_eq!(r.code(), Code::Ok);
    assert!(t.elapsed() >= Duration::from_millis(200));
}

/// Runs `volley` expecting a start-up failure; returns its stderr.
fn fails(args: &[&str]) -> String {
    let out = Command::new(VOLLEY.bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn address_in_use_is_one_line_and_non_zero() {
    let p = VOLLEY.serve(&["--threads", "2"]);
    let addr = p.addr().to_string();
    let err = fails(&["serve", "--addr", &addr]);
    let lines: Vec<_> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with(&format!("volley: error: cannot listen on {addr}: ")),
        "{err}"
    );
    assert!(lines[0].contains("in use"), "{err}");
}

#[test]
fn unreadable_tls_files_are_named() {
    let err = fails(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--tls-cert",
        "/nonexistent/cert.pem",
        "--tls-key",
        "/nonexistent/key.pem",
    ]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("volley: error: cannot read TLS certificate /nonexistent/cert.pem:"),
        "{err}"
    );
    let err = fails(&["serve", "--tls-cert", "/x.pem"]);
    assert!(err.contains("--tls-key"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_loses_no_accepted_call() {
    let mut p = VOLLEY.serve(&[
        "--threads",
        "2",
        "--delay",
        "300ms",
        "--grace-period",
        "10s",
    ]);
    let conns = [
        RawClient::connect(p.addr()).await.unwrap(),
        RawClient::connect(p.addr()).await.unwrap(),
    ];
    let ok = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let stop_at = Instant::now() + Duration::from_millis(700);
    let mut tasks = Vec::new();
    // 100 callers keep calling until well after the signal; the signal lands mid-flight.
    for i in 0..100 {
        let c = conns[i % 2].clone();
        let (ok, refused) = (ok.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop_at {
                match c
                    .call(
                        "/api.Users/Get",
                        &[],
                        vec![frame(&GetUserRequest { id: 1 })],
                    )
                    .await
                {
                    // The server accepted the call: it must succeed.
                    Ok(r) => {
                        assert_eq!(r.code(), Code::Ok, "{:?}", r.status());
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    // The server had sent GOAWAY: the call was never accepted.
                    Err(e) => {
                        assert!(
                            e.is_go_away()
                                || e.reason() == Some(h2::Reason::REFUSED_STREAM)
                                || e.is_io(),
                            "{e:?}"
                        );
                        refused.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    p.signal("TERM");
    for t in tasks {
        t.await.unwrap();
    }
    let status = p
        .wait_exit(Duration::from_secs(15))
        .expect("exits after drain");
    assert!(status.success(), "exit {status:?}\n{}", p.log());
    assert!(ok.load(Ordering::SeqCst) >= 100, "in-flight calls finished");
    assert!(
        p.log().contains("received SIGTERM, draining"),
        "{}",
        p.log()
    );
    assert!(tokio::net::TcpStream::connect(p.addr()).await.is_err());
}
