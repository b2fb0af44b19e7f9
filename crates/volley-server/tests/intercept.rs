//! Interceptors end to end, in-process on port 0, driven by a raw h2 client: the chain's order,
//! what it sees and adds, refusals before the body is read, panics, unknown methods, and the
//! figures `on_end` reports.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use prost::Message;
use volley_server::{
    Code, Request, Response, Server, ServerBuilder, Service, Status, Streaming,
    intercept::{Call, CallEnd, CallProtocol, Interceptor, MethodKind, from_fn},
};
use volley_testkit::{RawClient, frame};

#[derive(Clone, PartialEq, Message)]
struct Num {
    #[prost(int64, tag = "1")]
    n: i64,
}

/// What the interceptors saw, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// Logs its calls and ends under `name`; refuses calls carrying `x-refuse: <name>`.
struct Recorder {
    name: &'static str,
    log: Log,
}

impl Interceptor for Recorder {
    async fn on_call(&self, call: &mut Call) -> Result<(), Status> {
        self.log.lock().unwrap().push(format!(
            "{} call {} registered={}",
            self.name,
            call.method().full_name(),
            call.method().is_registered()
        ));
        call.keep(self.name.len());
        let calls = call
            .method_local(|| std::sync::atomic::AtomicUsize::new(0))
            .expect("per-method state");
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if call
            .metadata()
            .get("x-refuse")
            .is_some_and(|v| v == self.name)
        {
            return Err(Status::permission_denied(format!("{} says no", self.name)));
        }
        call.response_headers_mut()
            .insert("x-seen-by", self.name.parse().unwrap());
        call.response_trailers_mut()
            .append("x-ended-by", self.name.parse().unwrap());
        Ok(())
    }

    fn on_end(&self, end: &CallEnd<'_>) {
        self.log.lock().unwrap().push(format!(
            "{} end {} {:?} sent={:?} received={:?} kept={:?}",
            self.name,
            end.info().method().full_name(),
            end.code(),
            end.sent(),
            end.received(),
            end.kept::<usize>(),
        ));
        assert!(
            end.method_local::<std::sync::atomic::AtomicUsize>()
                .is_some_and(|n| n.load(std::sync::atomic::Ordering::Relaxed) > 0),
            "on_end sees the per-method state on_call made"
        );
    }
}

fn service(log: Log) -> Service {
    let facts = log.clone();
    Service::builder("test.Calc")
        .unary("Echo", move |req: Request<Num>| {
            let call = req.call();
            facts.lock().unwrap().push(format!(
                "handler {} {:?} {:?} peer={} user={:?} x-added={:?}",
                call.method().full_name(),
                call.method().kind(),
                call.protocol(),
                call.peer_addr().is_some_and(|a| a.ip().is_loopback()),
                req.extensions().get::<&'static str>(),
                req.metadata().get("x-added"),
            ));
            async move { Ok(Response::new(req.into_inner())) }
        })
        .server_streaming("Count", |req: Request<Num>| async move {
            let n = req.get_ref().n;
            Ok(Response::new(stream::iter((0..n).map(|n| Ok(Num { n })))))
        })
        .client_streaming("Sum", |req: Request<Streaming<Num>>| async move {
            let mut s = req.into_inner();
            let mut total = 0;
            while let Some(m) = s.message().await? {
                total += m.n;
            }
            Ok(Response::new(Num { n: total }))
        })
        .bidi_streaming("Double", |req: Request<Streaming<Num>>| async move {
            Ok(Response::new(
                req.into_inner().map(|r| r.map(|m| Num { n: m.n * 2 })),
            ))
        })
        .build()
        .intercept(Recorder {
            name: "own",
            log: log.clone(),
        })
}

async fn start(log: &Log, configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> SocketAddr {
    let server = configure(Server::builder().add_service(service(log.clone())))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        server
            .serve(listener, std::future::pending())
            .await
            .unwrap();
    });
    addr
}

fn global(log: &Log) -> impl FnOnce(ServerBuilder) -> ServerBuilder {
    let log = log.clone();
    move |b| {
        b.intercept(Recorder {
            name: "first",
            log: log.clone(),
        })
        .intercept(from_fn(|call: &mut Call| {
            call.metadata_mut()
                .insert("x-added", "by-from-fn".parse().unwrap());
            call.extensions_mut().insert("alice");
            Ok(())
        }))
    }
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// `on_end` runs when the body is done, which may be just after the client has the reply.
async fn settled(log: &Log, lines: usize) -> Vec<String> {
    for _ in 0..200 {
        if log.lock().unwrap().len() >= lines {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    take(log)
}

#[tokio::test]
async fn the_chain_runs_in_order_and_the_handler_sees_what_it_added() {
    let log = Log::default();
    let addr = start(&log, global(&log)).await;
    let c = RawClient::connect(addr).await.unwrap();
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&Num { n: 7 })])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok);
    assert_eq!(reply.decode::<Num>(), vec![Num { n: 7 }]);
    assert_eq!(reply.headers.get("x-seen-by").unwrap(), "own");
    let trailers = reply.trailers.as_ref().expect("trailers");
    let ended: Vec<_> = trailers.get_all("x-ended-by").iter().collect();
    assert_eq!(ended, ["first", "own"]);
    assert_eq!(
        settled(&log, 5).await,
        [
            "first call test.Calc/Echo registered=true",
            "own call test.Calc/Echo registered=true",
            "handler test.Calc/Echo Some(Unary) Grpc peer=true user=Some(\"alice\") \
             x-added=Some(\"by-from-fn\")",
            // 7 encodes in 2 bytes each way.
            "own end test.Calc/Echo Ok sent=(1, 2) received=(1, 2) kept=Some(3)",
            "first end test.Calc/Echo Ok sent=(1, 2) received=(1, 2) kept=Some(5)",
        ]
    );
}

#[tokio::test]
async fn a_refusal_ends_the_call_and_skips_the_rest_of_the_chain() {
    let log = Log::default();
    let addr = start(&log, global(&log)).await;
    let c = RawClient::connect(addr).await.unwrap();
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("x-refuse", "first")],
            vec![frame(&Num { n: 1 })],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::PermissionDenied);
    assert_eq!(reply.status().message(), "first says no");
    assert_eq!(
        settled(&log, 2).await,
        [
            "first call test.Calc/Echo registered=true",
            "first end test.Calc/Echo PermissionDenied sent=(0, 0) received=(0, 0) kept=Some(5)",
        ]
    );
}

#[tokio::test]
async fn streams_are_counted_message_by_message() {
    let log = Log::default();
    let addr = start(&log, |b| b).await;
    let c = RawClient::connect(addr).await.unwrap();
    let reply = c
        .call("/test.Calc/Count", &[], vec![frame(&Num { n: 3 })])
        .await
        .unwrap();
    assert_eq!(reply.decode::<Num>().len(), 3);
    let nums: Vec<Bytes> = (1..=4).map(|n| frame(&Num { n })).collect();
    let reply = c.call("/test.Calc/Sum", &[], nums.clone()).await.unwrap();
    assert_eq!(reply.decode::<Num>(), vec![Num { n: 10 }]);
    let reply = c.call("/test.Calc/Double", &[], nums).await.unwrap();
    assert_eq!(reply.decode::<Num>().len(), 4);
    let lines = settled(&log, 6).await;
    // Count's replies: 0 is an empty message, 1 and 2 take 2 bytes.
    assert!(
        lines.contains(
            &"own end test.Calc/Count Ok sent=(3, 4) received=(1, 2) kept=Some(3)".to_owned()
        ),
        "{lines:#?}"
    );
    assert!(
        lines.contains(
            &"own end test.Calc/Sum Ok sent=(1, 2) received=(4, 8) kept=Some(3)".to_owned()
        ),
        "{lines:#?}"
    );
    assert!(
        lines.contains(
            &"own end test.Calc/Double Ok sent=(4, 8) received=(4, 8) kept=Some(3)".to_owned()
        ),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn unknown_methods_pass_the_global_chain_then_are_unimplemented() {
    let log = Log::default();
    let addr = start(&log, global(&log)).await;
    let c = RawClient::connect(addr).await.unwrap();
    let reply = c
        .call("/test.Calc/Nope", &[], vec![frame(&Num { n: 1 })])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Unimplemented);
    assert_eq!(
        settled(&log, 2).await,
        [
            "first call test.Calc/Nope registered=false",
            "first end test.Calc/Nope Unimplemented sent=(0, 0) received=(0, 0) kept=Some(5)",
        ]
    );
}

#[tokio::test]
async fn a_panicking_interceptor_fails_its_call_only() {
    let log = Log::default();
    let addr = start(&log, |b| {
        b.intercept(from_fn(|call: &mut Call| {
            if call.metadata().contains_key("x-panic") {
                panic!("interceptor bug");
            }
            Ok(())
        }))
    })
    .await;
    let c = RawClient::connect(addr).await.unwrap();
    let reply = c
        .call(
            "/test.Calc/Echo",
            &[("x-panic", "1")],
            vec![frame(&Num { n: 1 })],
        )
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Internal);
    let reply = c
        .call("/test.Calc/Echo", &[], vec![frame(&Num { n: 2 })])
        .await
        .unwrap();
    assert_eq!(reply.code(), Code::Ok, "the same connection keeps serving");
}

/// A refused 10 MiB upload: the server answers from the head and never reads the body, so it
/// grants the client no flow-control window beyond the initial 1 MiB.
#[tokio::test]
async fn a_refused_upload_is_not_read() {
    let log = Log::default();
    let addr = start(&log, |b| {
        b.intercept(from_fn(|_: &mut Call| {
            Err(Status::unauthenticated("no token"))
        }))
    })
    .await;
    let c = RawClient::connect(addr).await.unwrap();
    let mut send = c.sender().ready().await.unwrap();
    let (resp, mut body) = send
        .send_request(c.request("/test.Calc/Sum", &[]), false)
        .unwrap();
    let total = 10 << 20;
    let mut granted = 0usize;
    let pump = async {
        while granted < total {
            body.reserve_capacity(total - granted);
            match std::future::poll_fn(|cx| body.poll_capacity(cx)).await {
                Some(Ok(n)) if n > 0 => {
                    body.send_data(Bytes::from(vec![0u8; n]), false)?;
                    granted += n;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => break,
            }
        }
        Ok::<_, h2::Error>(())
    };
    let reply = async {
        let r = resp.await.unwrap();
        volley_testkit::read_reply(r).await.unwrap()
    };
    let (reply, _) = tokio::join!(reply, tokio::time::timeout(Duration::from_secs(2), pump));
    assert_eq!(reply.code(), Code::Unauthenticated);
    assert!(
        granted <= 1 << 20,
        "the server let {granted} bytes of a refused 10 MiB upload in"
    );
}

#[tokio::test]
async fn connect_unary_calls_pass_the_chain_too() {
    let log = Log::default();
    let addr = start(&log, global(&log)).await;
    let c = RawClient::connect(addr).await.unwrap();
    let mut send = c.sender().ready().await.unwrap();
    let req = http::Request::post(format!("http://{addr}/test.Calc/Echo"))
        .header("content-type", "application/proto")
        .header("x-refuse", "own")
        .body(())
        .unwrap();
    let (resp, mut body) = send.send_request(req, false).unwrap();
    body.send_data(Num { n: 5 }.encode_to_vec().into(), true)
        .unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), http::StatusCode::FORBIDDEN);
    let lines = settled(&log, 4).await;
    assert_eq!(
        lines[3],
        "first end test.Calc/Echo PermissionDenied sent=(0, 0) received=(0, 0) kept=Some(5)",
        "{lines:#?}"
    );
    let _ = (CallProtocol::Connect, MethodKind::Unary);
}
