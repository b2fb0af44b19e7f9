//! `cargo run --bin greeter-server [ADDR]`: serves helloworld.Greeter (default 127.0.0.1:50051)
//! with health and reflection, until Ctrl-C.

use volley_example_greeter::hello::{
    HelloReply, HelloRequest,
    greeter_server::{Greeter, GreeterServer},
};
use volley_server::{Request, Response, Server, Status};

#[derive(Debug, Default)]
struct MyGreeter;

impl Greeter for MyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let name = request.into_inner().name;
        if name.is_empty() {
            return Err(Status::invalid_argument("name is empty"));
        }
        Ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:50051".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("greeter listening on {}", listener.local_addr()?);
    Server::builder()
        .add_service(GreeterServer::new(MyGreeter))
        .build()?
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
