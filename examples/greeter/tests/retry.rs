//! A generated client on a channel with a service config (gRFC A6): a retry policy takes a call
//! through a server's transient UNAVAILABLE answers (each attempt saying how many came before
//! it), honours the server's `grpc-retry-pushback-ms`, leaves other codes alone; hedging answers
//! from the fast server while the slow one still works; the config's timeout applies to a call
//! that set none.

mod common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use common::serve;
use volley_client::{
    Channel, Code, Endpoint, Policy, Request as Out, ServiceConfig, Strategy, Target,
};
use volley_example_greeter::hello::{
    HelloReply, HelloRequest, greeter_client::GreeterClient, greeter_server::Greeter,
};
use volley_server::{Request, Response, Status};

/// Fails the first `fail` calls with `code` (and `pushback`, if any), then answers with the
/// `grpc-previous-rpc-attempts` the call carried.
struct Flaky {
    fail: u32,
    code: Code,
    pushback: Option<&'static str>,
    calls: Arc<AtomicU32>,
}

impl Greeter for Flaky {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.fail {
            let mut s = Status::new(self.code, "not yet");
            if let Some(p) = self.pushback {
                s.metadata_mut()
                    .insert("grpc-retry-pushback-ms", p.parse().unwrap());
            }
            return Err(s);
        }
        let previous = request
            .metadata()
            .get("grpc-previous-rpc-attempts")
            .map_or("none", |v| v.to_str().unwrap())
            .to_owned();
        Ok(Response::new(HelloReply { message: previous }))
    }
}

/// Answers after `delay`, with its name.
struct Slow(Duration, &'static str);

impl Greeter for Slow {
    async fn say_hello(&self, _: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        tokio::time::sleep(self.0).await;
        Ok(Response::new(HelloReply {
            message: self.1.into(),
        }))
    }
}

fn client(target: &str, config: &str) -> GreeterClient {
    let ep = Endpoint::new(Target::parse(target).unwrap()).unwrap();
    let config = Arc::new(ServiceConfig::parse(config).unwrap());
    let channel =
        Channel::balanced(ep, Strategy::Single, Policy::RoundRobin).with_service_config(config);
    GreeterClient::new(channel)
}

const RETRY: &str = r#"{"methodConfig": [{"name": [{"service": "helloworld.Greeter"}],
    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

fn hello() -> HelloRequest {
    HelloRequest { name: "x".into() }
}

fn flaky(fail: u32, code: Code, pushback: Option<&'static str>) -> (Flaky, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let service = Flaky {
        fail,
        code,
        pushback,
        calls: calls.clone(),
    };
    (service, calls)
}

#[tokio::test]
async fn a_retry_policy_carries_a_call_through_transient_unavailable_answers() {
    let (service, calls) = flaky(3, Code::Unavailable, None);
    let c = client(&serve(service).await, RETRY);
    let reply = c.say_hello(hello()).await.unwrap();
    assert_eq!(
        reply.into_inner().message,
        "3",
        "the fourth attempt says three came before"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // Four failures are one more than four attempts can outlast.
    let (service, calls) = flaky(4, Code::Unavailable, None);
    let c = client(&serve(service).await, RETRY);
    let e = c.say_hello(hello()).await.unwrap_err();
    assert_eq!((e.code(), e.message()), (Code::Unavailable, "not yet"));
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // Another code is not retried.
    let (service, calls) = flaky(1, Code::Internal, None);
    let c = client(&serve(service).await, RETRY);
    assert_eq!(
        c.say_hello(hello()).await.unwrap_err().code(),
        Code::Internal
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_servers_pushback_sets_the_wait_or_forbids_the_retry() {
    let (service, calls) = flaky(1, Code::Unavailable, Some("300"));
    let c = client(&serve(service).await, RETRY);
    let started = Instant::now();
    c.say_hello(hello()).await.unwrap();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let (service, calls) = flaky(1, Code::Unavailable, Some("-1"));
    let c = client(&serve(service).await, RETRY);
    assert_eq!(
        c.say_hello(hello()).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn hedging_answers_from_the_fast_backend_while_the_slow_one_works() {
    let slow = serve(Slow(Duration::from_secs(2), "slow")).await;
    let fast = serve(Slow(Duration::from_millis(1), "fast")).await;
    let hedged = r#"{"methodConfig": [{"name": [{}],
        "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s"}}]}"#;
    // Round robin over [slow, fast], one call at a time: every call's first attempt goes to the
    // slow backend and its hedge, 50 ms later, to the fast one.
    let c = client(&format!("ipv4:{slow},{fast}"), hedged);
    for _ in 0..5 {
        let started = Instant::now();
        let reply = c.say_hello(hello()).await.unwrap();
        let took = started.elapsed();
        assert_eq!(reply.into_inner().message, "fast");
        assert!(took < Duration::from_millis(1000), "{took:?}");
    }
}

#[tokio::test]
async fn the_configs_timeout_bounds_a_call_that_set_none() {
    let slow = serve(Slow(Duration::from_secs(5), "slow")).await;
    let c = client(
        &slow,
        r#"{"methodConfig": [{"name": [{}], "timeout": "0.2s"}]}"#,
    );
    let started = Instant::now();
    let e = c.say_hello(hello()).await.unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded);
    assert!(started.elapsed() < Duration::from_secs(2));

    // A call's own timeout wins.
    let mut call = Out::new(hello());
    call.set_timeout(Duration::from_millis(50));
    let started = Instant::now();
    assert_eq!(
        c.say_hello(call).await.unwrap_err().code(),
        Code::DeadlineExceeded
    );
    assert!(started.elapsed() < Duration::from_millis(190));
}
