//! `cargo run --bin greeter-client [TARGET] [NAME]`: one SayHello call (default target
//! 127.0.0.1:50051), its reply printed.

use std::time::Duration;

use volley_client::Request;
use volley_example_greeter::hello::{HelloRequest, greeter_client::GreeterClient};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = args.next().unwrap_or("127.0.0.1:50051".into());
    let name = args.next().unwrap_or("volley".into());
    // tonic's shape: an `http://` URI as a String (a bare `host:port` works too).
    let client = GreeterClient::connect(format!("http://{target}")).await?;

    let mut request = Request::new(HelloRequest { name });
    request.set_timeout(Duration::from_secs(5));
    let reply = client.say_hello(request).await?;
    println!("{}", reply.into_inner().message);
    Ok(())
}
