//! A deadline passed on in one line: a front server whose handler calls a back server with
//! `Request::new(..).deadline(request.deadline())`; the back server sees the deadline the client
//! set, reduced by the time the front spent, and a front with no deadline passes none on.

mod common;

use std::time::Duration;

use common::serve;
use volley_client::{Channel, Endpoint, Request as Out, Strategy, Target};
use volley_example_greeter::hello::{
    HelloReply, HelloRequest, greeter_client::GreeterClient, greeter_server::Greeter,
};
use volley_server::{Request, Response, Status};

/// Answers how long its call had left, in milliseconds ("none" without a deadline).
struct Back;

impl Greeter for Back {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let left = request
            .time_left()
            .map_or("none".into(), |d| d.as_millis().to_string());
        Ok(Response::new(HelloReply { message: left }))
    }
}

/// Works for 200 ms, then asks the back server, passing its deadline on.
struct Front(GreeterClient);

impl Greeter for Front {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let out = Out::new(HelloRequest {
            name: "front".into(),
        })
        .deadline(request.deadline());
        let reply = self
            .0
            .say_hello(out)
            .await
            .map_err(|s| Status::new(s.code(), s.message().to_owned()))?;
        Ok(Response::new(reply.into_inner()))
    }
}

fn client(addr: &str) -> GreeterClient {
    let ep = Endpoint::new(Target::parse(addr).unwrap()).unwrap();
    GreeterClient::new(Channel::new(ep, Strategy::Single))
}

#[tokio::test]
async fn the_next_hop_sees_the_deadline_reduced_by_the_time_spent() {
    let back = serve(Back).await;
    let front = serve(Front(client(&back))).await;
    let front = client(&front);

    let mut call = Out::new(HelloRequest { name: "x".into() });
    call.set_timeout(Duration::from_secs(2));
    let left: u64 = front
        .say_hello(call)
        .await
        .unwrap()
        .into_inner()
        .message
        .parse()
        .expect("the back server saw a deadline");
    assert!(
        (1_000..=1_800).contains(&left),
        "2 s less the front's 200 ms and the hops: {left} ms"
    );

    // No deadline in, none out.
    let reply = front
        .say_hello(HelloRequest { name: "x".into() })
        .await
        .unwrap();
    assert_eq!(reply.into_inner().message, "none");

    // A deadline shorter than the front's work: the client gets DEADLINE_EXCEEDED.
    let mut call = Out::new(HelloRequest { name: "x".into() });
    call.set_timeout(Duration::from_millis(100));
    let err = front.say_hello(call).await.unwrap_err();
    assert_eq!(err.code(), volley_client::Code::DeadlineExceeded, "{err:?}");
}
