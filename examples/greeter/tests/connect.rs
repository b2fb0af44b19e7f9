//! The generated client's `connect` takes what tonic's takes: a `&'static str` or a `String`
//! with or without `http://`, an `http::Uri`, or volley's `Endpoint`; and the client type has
//! tonic's shape (`GreeterClient<Channel>` in signatures).

mod common;

use volley_client::{Channel, Endpoint};
use volley_example_greeter::hello::{HelloRequest, greeter_client::GreeterClient};

#[derive(Default)]
struct Echo;

impl volley_example_greeter::hello::greeter_server::Greeter for Echo {
    async fn say_hello(
        &self,
        request: volley_server::Request<HelloRequest>,
    ) -> Result<
        volley_server::Response<volley_example_greeter::hello::HelloReply>,
        volley_server::Status,
    > {
        Ok(volley_server::Response::new(
            volley_example_greeter::hello::HelloReply {
                message: format!("Hello {}!", request.into_inner().name),
            },
        ))
    }
}

/// As tonic's routeguide client writes its helpers.
async fn hello(client: &mut GreeterClient<Channel>, name: &str) -> String {
    client
        .say_hello(HelloRequest { name: name.into() })
        .await
        .unwrap()
        .into_inner()
        .message
}

#[tokio::test]
async fn connect_takes_what_tonics_takes() {
    let addr = common::serve(Echo).await;
    let mut c = GreeterClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    assert_eq!(hello(&mut c, "string").await, "Hello string!");
    let leaked: &'static str = Box::leak(format!("http://{addr}").into_boxed_str());
    let mut c = GreeterClient::connect(leaked).await.unwrap();
    assert_eq!(hello(&mut c, "static str").await, "Hello static str!");
    let mut c = GreeterClient::connect(addr.as_str()).await.unwrap();
    assert_eq!(hello(&mut c, "bare").await, "Hello bare!");
    let uri: http::Uri = format!("http://{addr}").parse().unwrap();
    let mut c = GreeterClient::connect(uri).await.unwrap();
    assert_eq!(hello(&mut c, "uri").await, "Hello uri!");
    let ep = Endpoint::try_from(format!("http://{addr}")).unwrap();
    let mut c = GreeterClient::connect(ep).await.unwrap();
    assert_eq!(hello(&mut c, "endpoint").await, "Hello endpoint!");
    // A target that is not one: the error says which and why.
    let e = GreeterClient::connect("http://").await.err().unwrap();
    assert!(e.to_string().contains("invalid target"), "{e}");
}
