// Ported from tonic's examples (hyperium/tonic a55efae, examples/src/helloworld/client.rs, MIT), their
// code with volley's imports. What else changed, each marked `volley:`: `#[tonic::async_trait]`
// removed (volley's traits return futures themselves), and the address read from $ADDR with
// tonic's as the default, so the tests can choose a free port.

// volley: the generated client's methods take `&self` (tonic's take `&mut self`), so tonic's
// `let mut client` is one `mut` more than needed.
#![allow(unused_mut)]

use hello_world::HelloRequest;
use hello_world::greeter_client::GreeterClient;

pub mod hello_world {
    volley_server::include_proto!("helloworld");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // volley: $ADDR, tonic's address by default.
    let mut client = GreeterClient::connect(format!(
        "http://{}",
        std::env::var("ADDR").unwrap_or("[::1]:50051".into())
    ))
    .await?;

    let request = volley_client::Request::new(HelloRequest {
        name: "Tonic".into(),
    });

    let response = client.say_hello(request).await?;

    println!("RESPONSE={response:?}");

    Ok(())
}
