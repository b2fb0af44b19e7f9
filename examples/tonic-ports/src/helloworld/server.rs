// Ported from tonic's examples (hyperium/tonic a55efae, examples/src/helloworld/server.rs, MIT), their
// code with volley's imports. What else changed, each marked `volley:`: `#[tonic::async_trait]`
// removed (volley's traits return futures themselves), and the address read from $ADDR with
// tonic's as the default, so the tests can choose a free port.
use volley_server::{Request, Response, Server, Status};

use hello_world::greeter_server::{Greeter, GreeterServer};
use hello_world::{HelloReply, HelloRequest};

pub mod hello_world {
    volley_server::include_proto!("helloworld");
}

#[derive(Default)]
pub struct MyGreeter {}

// volley: no #[tonic::async_trait].
impl Greeter for MyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        println!("Got a request from {:?}", request.remote_addr());

        let reply = hello_world::HelloReply {
            message: format!("Hello {}!", request.into_inner().name),
        };
        Ok(Response::new(reply))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // volley: $ADDR, tonic's address by default.
    let addr = std::env::var("ADDR")
        .unwrap_or("[::1]:50051".into())
        .parse()
        .unwrap();
    let greeter = MyGreeter::default();

    println!("GreeterServer listening on {addr}");

    Server::builder()
        .add_service(GreeterServer::new(greeter))
        .serve(addr)
        .await?;

    Ok(())
}
