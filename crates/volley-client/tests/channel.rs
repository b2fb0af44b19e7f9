//! `Channel` strategies against volley-server in-process: the connections each strategy opens as
//! the server counts them, under load beyond one connection's stream limit; idle extra
//! connections closing; reconnection after a backend restart; GOAWAY mid-load with no failed call.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures_util::future::join_all;
use tokio::{sync::oneshot, task::JoinHandle};
use volley_client::{CallHead, Channel, Endpoint, Strategy, Target};
use volley_server::Server;
use volley_services::{Options, pb::helloworld::HelloRequest};
use volley_wire::{Code, codec::encode_frame};

struct Backend {
    addr: SocketAddr,
    server: Arc<Server>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Backend {
    async fn start(
        addr: &str,
        delay: Duration,
        max_streams: u32,
        max_age: Option<Duration>,
    ) -> Backend {
        let mut b = Server::builder()
            .max_concurrent_streams(max_streams)
            .max_connection_age(max_age)
            .grace_period(Duration::from_secs(5));
        for s in volley_services::all(Options {
            delay,
            ..Options::default()
        }) {
            b = b.add_service(s);
        }
        let server = Arc::new(b.build().unwrap());
        let l = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let s = server.clone();
        let task = tokio::spawn(async move {
            let _ = s
                .serve(l, async {
                    let _ = rx.await;
                })
                .await;
        });
        Backend {
            addr,
            server,
            stop: Some(tx),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap();
    }

    fn accepted(&self) -> u64 {
        self.server.connections().accepted
    }
}

fn endpoint(addr: SocketAddr) -> Endpoint {
    Endpoint::new(Target::parse(&addr.to_string()).unwrap()).unwrap()
}

fn hello(addr: SocketAddr) -> (CallHead, Bytes) {
    let head = CallHead::new(
        "http",
        &addr.to_string(),
        "/helloworld.Greeter/SayHello",
        &[],
        None,
        false,
    )
    .unwrap();
    let body = encode_frame(&HelloRequest {
        name: "volley".into(),
    });
    (head, body)
}

/// `n` calls at once; every one must succeed.
async fn burst(ch: &Channel, addr: SocketAddr, n: usize) {
    let (head, body) = hello(addr);
    let results = join_all((0..n).map(|_| ch.unary(&head, body.clone()))).await;
    for r in results {
        r.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_strategy_opens_the_connections_it_promises() {
    // 24 calls of 100 ms at once, against a server allowing 4 streams per connection.
    for (strategy, expected) in [
        (Strategy::Single, 1),
        (Strategy::Pool(3), 3),
        (Strategy::Expanding { max: 5 }, 5),
        (Strategy::PerRequest, 24),
    ] {
        let backend = Backend::start("127.0.0.1:0", Duration::from_millis(100), 4, None).await;
        let ch = Channel::new(endpoint(backend.addr), strategy);
        ch.warm().await.unwrap();
        burst(&ch, backend.addr, 24).await;
        assert_eq!(backend.accepted(), expected, "{strategy}");
        assert_eq!(ch.dials(), expected, "{strategy}");
        backend.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expanding_closes_idle_extra_connections() {
    let backend = Backend::start("127.0.0.1:0", Duration::from_millis(100), 2, None).await;
    let ch = Channel::with_idle_close(
        endpoint(backend.addr),
        Strategy::Expanding { max: 4 },
        Duration::from_millis(200),
    );
    ch.warm().await.unwrap();
    burst(&ch, backend.addr, 8).await;
    assert_eq!(backend.accepted(), 4);
    let t = Instant::now();
    while (ch.open_connections() > 1 || backend.server.connections().open > 1)
        && t.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ch.open_connections(), 1);
    assert_eq!(backend.server.connections().open, 1);
    // It grows again when the load comes back.
    burst(&ch, backend.addr, 8).await;
    assert!(backend.accepted() > 4);
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_backend_restarts() {
    let backend = Backend::start("127.0.0.1:0", Duration::ZERO, 100, None).await;
    let addr = backend.addr;
    let ch = Channel::new(endpoint(addr), Strategy::Single);
    let (head, body) = hello(addr);
    ch.unary(&head, body.clone()).await.unwrap();
    backend.stop().await;

    // Down: calls fail fast with UNAVAILABLE and say why.
    let t = Instant::now();
    let err = ch.unary(&head, body.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(err.message().contains("connect"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(2));

    // Back: the channel finds it by itself.
    let backend = Backend::start(&addr.to_string(), Duration::ZERO, 100, None).await;
    let t = Instant::now();
    let mut ok = false;
    while t.elapsed() < Duration::from_secs(10) {
        if ch.unary(&head, body.clone()).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "no call succeeded after the backend came back");
    assert_eq!(ch.dials(), 2);
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_mid_load_fails_no_call() {
    // Every connection is drained (GOAWAY) 200 ms after it opens, under steady load.
    let backend = Backend::start(
        "127.0.0.1:0",
        Duration::from_millis(10),
        100,
        Some(Duration::from_millis(200)),
    )
    .await;
    let ch = Channel::new(endpoint(backend.addr), Strategy::Pool(2));
    let (head, body) = hello(backend.addr);
    let until = Instant::now() + Duration::from_millis(1500);
    let workers = (0..16).map(|_| {
        let (ch, head, body) = (ch.clone(), head.clone(), body.clone());
        tokio::spawn(async move {
            let mut calls = 0u32;
            while Instant::now() < until {
                ch.unary(&head, body.clone()).await.unwrap();
                calls += 1;
            }
            calls
        })
    });
    let calls: u32 = join_all(workers)
        .await
        .into_iter()
        .map(Result::unwrap)
        .sum();
    assert!(calls > 100, "only {calls} calls");
    assert!(
        backend.accepted() >= 6,
        "connections were not recycled: {} accepted",
        backend.accepted()
    );
    backend.stop().await;
}
